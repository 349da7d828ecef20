"""A campaign's capacity search (``find_max`` in ``[bench]``): one search per start.

Each start of a variant searches, on its one server, for the largest load meeting
``[slo]`` with the probes of ``bench --find-max`` (servegate.bench.capacity): warmup per
probe, a drain to idle between probes, prompts salted per probe. A probe during which
the server crashed or stopped answering is a failure at that load that bounds the
capacity ("crashed at c=64", with its kind and cause), never a slow point; with
``retry_below_crash`` the search goes on below it on a new server, else the start's
capacity is the highest load that passed, below the crash.

    state = SearchState.begin(plan, slo=..., attainment=None)
    ... state.probes.append(probe); state.search.record(load, met) ...
    data = state.capacity()  # the JSON stored with the attempt
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from servegate.bench import Probe, Search, SearchOptions, Target, fit_capacity
from servegate.campaign.config import SearchPlan

__all__ = ["SearchOutcome", "SearchState", "bracket_words", "probe_label"]


def probe_label(over: str, load: float | None) -> str:
    """A probe's load as a point's name: ``c=16``, ``rate=5.5``."""
    if load is None:
        return "-"
    return f"c={load:g}" if over == "concurrency" else f"rate={load:g}"


def bracket_words(over: str, passes: float | None, fails: float | None) -> str:
    """``passes c=8, fails c=16``: the search's bracket."""
    return f"passes {probe_label(over, passes)}, fails {probe_label(over, fails)}"


@dataclass(frozen=True, slots=True, kw_only=True)
class SearchOutcome:
    """What one search on one server did: probes measured, and why it ended early."""

    probes: int
    crashed: str | None = None  # "crashed at c=16 while probing: ..."
    broken: str | None = None  # the benchmark could not run (not the server's fault)


@dataclass(kw_only=True)
class SearchState:
    """One start's search, kept across servers when it goes on below a crash."""

    options: SearchOptions
    search: Search
    targets: tuple[Target, ...]
    attainment: float | None
    probes: list[Probe] = field(default_factory=list)
    crashes: list[dict[str, Any]] = field(default_factory=list)
    fresh: bool = True  # the server has not been probed yet: no drain before the probe

    @classmethod
    def begin(
        cls, plan: SearchPlan, *, targets: tuple[Target, ...], attainment: float | None
    ) -> SearchState:
        """A new search of ``plan``."""
        options = SearchOptions(
            over=plan.over,  # type: ignore[arg-type]
            low=plan.low,
            high=plan.high,
            max_probes=plan.max_probes,
            precision=plan.precision,
            requests=plan.requests,
            duration_s=plan.duration_s,
            warmup=plan.warmup,
        )
        return cls(options=options, search=Search(options), targets=targets, attainment=attainment)

    def capacity(self) -> dict[str, Any]:
        """The capacity the probes give, as stored: bench's capacity JSON, plus
        ``crashed`` (each crash: load, status, kind, cause) and ``bounded_by_crash``."""
        fit = fit_capacity(self.probes, self.options, self.targets, self.attainment, self.search)
        data = fit.to_json()
        data["crashed"] = list(self.crashes)
        data["bounded_by_crash"] = False
        data["words"] = data["words"].replace("raise --max-", "raise max_")  # the file's key
        if not self.crashes:
            return data
        crash = min(self.crashes, key=lambda c: float(c["load"]))
        at = float(crash["load"])
        passes = self.search.passes
        unsettled = self.search.next_load() is not None and len(self.search.done) < (
            self.options.max_probes
        )
        value = data["value"]
        if not unsettled and value is None and passes is not None:
            # the bracket closed on the crash (one user above a pass), but the server died
            # in that probe's warmup, so no probe measured a failure for the fit: the
            # highest pass is the capacity, exact to the search's precision
            data.update(
                value=passes,
                low=passes,
                high=at,
                below_lowest=False,
                censored=False,
            )
        elif unsettled or value is None or value >= at:
            # the bracket below the crash was never narrowed: the highest load that
            # passed is all that is known, and the crash bounds it from above
            data.update(
                value=passes,
                low=passes,
                high=None if passes is None else at,
                below_lowest=passes is None,
                censored=False,
                bounded_by_crash=True,
            )
        why = crash["cause"] or crash["status"]
        head = (
            f"< {crash['label']}"
            if data["value"] is None
            else probe_label(self.options.over, data["value"])
            + (
                f" [{data['low']:g}, {data['high']:g}]"
                if not data["bounded_by_crash"]
                and data["low"] is not None
                and data["high"] is not None
                else ""
            )
        )
        data["words"] = f"{head} (crashed at {crash['label']}: {why})"
        return data
