"""Capacities compared: each variant's capacity under the SLO (``find_max``), per start,
against the baseline's, with the interval over starts that startup times get.

Each start's search gave one capacity (servegate.campaign.capacity); the starts are the
units, so the comparison is the mean over starts of each side, the ratio's interval the
hierarchical bootstrap over starts widened to Student t (``bootstrap.estimate`` with one
value per start, as the cold and warm startups are compared).

Censored starts (Decisions of issue 25): a start whose top load passed has a capacity
of at least the top; one whose lowest load failed, of less than the lowest load probed.
They enter the mean at that edge, and the ratio is then a bound: at least (the
variant's capacity censored from above, or the baseline's from below) or at most (the
other way round). A bound is called only the way it can be: "at least 1.2x" can be
better, never worse; censored both ways it is not called.

    rows = capacity_rows(data)
    comps = compare_capacities(rows, data.baseline, confidence=0.95, ...)
    sentence(comp)  # "fusion: 1.21x [1.15, 1.27] the baseline's capacity at ttft_p99<=500ms"
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from servegate.report.bootstrap import (
    MIN_EFFECT,
    Estimate,
    call,
    estimate,
    interval,
    mean,
    per_start,
    seeded_rng,
)

__all__ = [
    "CapacityComparison",
    "CapacityRow",
    "StartCapacity",
    "capacity_call",
    "capacity_estimate",
    "capacity_rows",
    "compare_capacities",
    "mean_interval",
    "sentence",
]

Bound = Literal["at least", "at most", "both"]


@dataclass(frozen=True, slots=True, kw_only=True)
class StartCapacity:
    """The capacity one start's search found."""

    start: int
    value: float | None  # None: below the lowest load probed
    low: float | None
    high: float | None
    censored: bool  # the top load passed: at least ``value``
    below_lowest: bool  # the lowest load failed: less than ``lowest``
    lowest: float  # the lowest load probed
    bounded_by_crash: bool
    crashed: tuple[dict[str, Any], ...]
    words: str
    probes: tuple[dict[str, Any], ...]

    @property
    def edge(self) -> float:
        """The value the mean over starts takes: the capacity, the top, or the lowest load."""
        if self.value is None:
            return self.lowest
        return self.value


@dataclass(frozen=True, slots=True, kw_only=True)
class CapacityRow:
    """One variant's capacities, a start each."""

    variant: str
    over: str  # concurrency | rate
    slo: str
    criterion: str
    starts: tuple[StartCapacity, ...]

    @property
    def mean(self) -> float | None:
        """The mean over starts (censored starts at their edge)."""
        if not self.starts:
            return None
        return float(np.mean([s.edge for s in self.starts]))

    @property
    def censored_high(self) -> bool:
        return any(s.censored for s in self.starts)

    @property
    def censored_low(self) -> bool:
        return any(s.below_lowest for s in self.starts)


@dataclass(frozen=True, slots=True, kw_only=True)
class CapacityComparison:
    """A variant's capacity against the reference's (the baseline's)."""

    variant: str
    reference: str
    over: str
    slo: str
    estimate: Estimate | None
    call: str  # better | worse | no meaningful difference | needs more starts | censored ...
    bound: Bound | None  # the ratio is a bound (censored starts); None: an estimate


def capacity_rows(capacities: Sequence[Any]) -> tuple[CapacityRow, ...]:
    """The stored capacities (``Store.capacities``) as one row per variant, in order."""
    by: dict[str, list[Any]] = {}
    for info in capacities:
        by.setdefault(info.variant, []).append(info)
    rows = []
    for variant, infos in by.items():
        first = infos[0].data
        starts = tuple(
            StartCapacity(
                start=int(i.start),
                value=_num(i.data.get("value")),
                low=_num(i.data.get("low")),
                high=_num(i.data.get("high")),
                censored=bool(i.data.get("censored")),
                below_lowest=bool(i.data.get("below_lowest")) or i.data.get("value") is None,
                lowest=min((float(p["load"]) for p in i.data.get("probes") or ()), default=0.0),
                bounded_by_crash=bool(i.data.get("bounded_by_crash")),
                crashed=tuple(i.data.get("crashed") or ()),
                words=str(i.data.get("words", "")),
                probes=tuple(i.data.get("probes") or ()),
            )
            for i in sorted(infos, key=lambda i: int(i.start))
        )
        rows.append(
            CapacityRow(
                variant=variant,
                over=str(first.get("over", "concurrency")),
                slo=str(first.get("slo", "")),
                criterion=str(first.get("criterion", "percentiles")),
                starts=starts,
            )
        )
    return tuple(rows)


def _num(value: Any) -> float | None:
    if value is None:
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def compare_capacities(
    rows: Sequence[CapacityRow],
    baseline: str,
    *,
    confidence: float,
    resamples: int,
    seed: int,
    min_effect: float = MIN_EFFECT,
    skip: Sequence[str] = (),
) -> tuple[CapacityComparison, ...]:
    """Every variant's capacity against the baseline's (none without the baseline's)."""
    base = next((r for r in rows if r.variant == baseline), None)
    if base is None or not base.starts:
        return ()
    out = []
    for row in rows:
        if row.variant == baseline or row.variant in skip or not row.starts:
            continue
        est, bound = capacity_estimate(
            base,
            row,
            confidence=confidence,
            resamples=resamples,
            rng=seeded_rng(seed, row.variant, "capacity"),
        )
        out.append(
            CapacityComparison(
                variant=row.variant,
                reference=baseline,
                over=row.over,
                slo=row.slo,
                estimate=est,
                call=capacity_call(est, bound, min_effect),
                bound=bound,
            )
        )
    return tuple(out)


def capacity_estimate(
    base: CapacityRow,
    row: CapacityRow,
    *,
    confidence: float,
    resamples: int,
    rng: np.random.Generator,
) -> tuple[Estimate | None, Bound | None]:
    """The ratio of ``row``'s mean capacity over starts to ``base``'s, with the interval
    over starts (``bootstrap.estimate``, one value per start), and whether censored
    starts make it a bound."""
    a = np.asarray([s.edge for s in base.starts], dtype=np.float64)
    b = np.asarray([s.edge for s in row.starts], dtype=np.float64)
    est = None
    if a.size and b.size and a.mean() > 0:
        est = estimate(a, b, stat=mean, confidence=confidence, resamples=resamples, rng=rng)
    up = row.censored_high or base.censored_low  # the ratio is at least this
    down = row.censored_low or base.censored_high  # ... at most this
    bound: Bound | None = "both" if up and down else "at least" if up else (
        "at most" if down else None
    )  # fmt: skip
    return est, bound


def capacity_call(est: Estimate | None, bound: Bound | None, min_effect: float) -> str:
    """The report's call (higher is better); a bound is called only the way it can be:
    "at least" better, "at most" worse, censored both ways never."""
    verdict = str(call(est, "higher", min_effect))
    if est is None or not est.has_interval:
        return verdict
    if bound == "both":
        return "censored both ways"
    if bound == "at least" and verdict != "better":
        return "censored (at least)"
    if bound == "at most" and verdict != "worse":
        return "censored (at most)"
    return verdict


def mean_interval(
    row: CapacityRow, *, confidence: float, resamples: int, seed: int
) -> tuple[float, float] | None:
    """The interval of the mean capacity over starts: each start one value, the bootstrap
    over starts widened to Student's t (``bootstrap.interval``); None below two starts."""
    values = np.asarray([s.edge for s in row.starts], dtype=np.float64)
    if values.size < 2:
        return None
    return interval(
        per_start(values),
        stat=mean,
        confidence=confidence,
        resamples=resamples,
        rng=seeded_rng(seed, row.variant, "capacity interval"),
    )


def sentence(comp: CapacityComparison) -> str:
    """``fusion: 1.21x [1.15, 1.27] the baseline's capacity at ttft_p99<=500ms (better)``."""
    est = comp.estimate
    what = f"the {comp.reference}'s capacity ({comp.over}) at {comp.slo}"
    if est is None:
        return f"{comp.variant}: no capacity to compare with {what}"
    sign = {"at least": ">= ", "at most": "<= "}.get(comp.bound or "", "")
    text = f"{comp.variant}: {sign}{est.ratio:.2f}x"
    if comp.bound != "both" and est.ratio_low is not None and est.ratio_high is not None:
        if comp.bound == "at least":
            text += f" [>= {est.ratio_low:.2f}]"
        elif comp.bound == "at most":
            text += f" [<= {est.ratio_high:.2f}]"
        else:
            text += f" [{est.ratio_low:.2f}, {est.ratio_high:.2f}]"
    starts = f"{est.starts_variant} vs {est.starts_baseline} start(s)"
    return f"{text} {what} ({est.variant:g} vs {est.baseline:g}, {starts}; {comp.call})"


def start_words(row: CapacityRow) -> str:
    """``c=6 [6, 6]; c=5 [5, 5]``: each start's capacity, as its search said it."""
    return "; ".join(s.words for s in row.starts)
