"""What a flag search (``servegate tune``) found, read from the store: the Pareto front of
the feasible trials, the parameters' importances and the map of crashed and skipped
regions.

- **Pareto front**: each feasible trial's objective (higher is better) against the
  latency it was measured at (TTFT and TPOT p99, the mean over its points; for the
  capacity objective, the points at each start's highest load that met the SLO) and its
  energy per output token where measured (None, never 0, where not). A trial is on the
  front when no other feasible trial is at least as good in every measure both have and
  better in one.
- **Importances**: Optuna's PED-ANOVA (no package beyond Optuna) over the feasible
  trials: how far the best quarter's values of each parameter lie from all of them.
  Fewer than ``MIN_IMPORTANCE_TRIALS`` feasible trials give none, with the reason.
- **Crash map**: per parameter, per value (a range in four buckets), the trials run,
  the feasible ones, the infeasible ones by kind (oom, timeout, ...) and the skipped ones
  with the trial that dominated each.

    found = build_search(store, cid, objective=..., trials=..., params=..., ...)
    lines = search_lines(found)

The trials and the parameters come from the campaign layer (``servegate.campaign.
tune_report`` reads them back from the store, or takes a search's own). A configuration
skipped by the memory rule is never started, so the store does not hold it: a report read
from the store alone has no skips and says so.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from servegate.store import Store

__all__ = [
    "MIN_IMPORTANCE_TRIALS",
    "Bucket",
    "Importances",
    "SearchPoint",
    "SearchReport",
    "build_search",
    "dominates",
    "search_html",
    "search_lines",
    "search_markdown",
]

MIN_IMPORTANCE_TRIALS = 4  # feasible trials with a value before importances mean anything
IMPORTANCE_QUANTILE = 0.25  # PED-ANOVA: the best quarter of the trials against all
RANGE_BUCKETS = 4  # a range parameter's crash map: equal parts (in log space for log)
PERCENTILE = "p99"  # the latency of the front: each point's p99, averaged over points


class TrialLike(Protocol):
    """A search's trial as the report reads it (``servegate.campaign.tune.Trial``)."""

    @property
    def number(self) -> int: ...  # 0: the baseline
    @property
    def name(self) -> str: ...
    @property
    def values(self) -> dict[str, Any]: ...
    @property
    def state(self) -> str: ...  # feasible, infeasible, skipped, reused, pruned, in-flight
    @property
    def value(self) -> float | None: ...
    @property
    def kind(self) -> str | None: ...
    @property
    def skipped_by(self) -> str | None: ...


class ParamLike(Protocol):
    """A searched parameter as the crash map reads it (``servegate.campaign.tune.Param``)."""

    @property
    def name(self) -> str: ...
    @property
    def choices(self) -> tuple[Any, ...]: ...
    @property
    def low(self) -> float | None: ...
    @property
    def high(self) -> float | None: ...
    @property
    def integer(self) -> bool: ...
    @property
    def log(self) -> bool: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class SearchPoint:
    """A feasible trial's measures for the Pareto front (None: not measured)."""

    trial: int
    name: str
    values: dict[str, Any]
    objective: float
    ttft_ms: float | None
    tpot_ms: float | None
    joules_per_token: float | None
    front: bool = False

    def measures(self) -> tuple[tuple[float | None, int], ...]:
        """(measure, sign): each measure with +1 where higher is better, -1 where lower."""
        return (
            (self.objective, 1),
            (self.ttft_ms, -1),
            (self.tpot_ms, -1),
            (self.joules_per_token, -1),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "trial": self.trial,
            "variant": self.name,
            "params": self.values,
            "objective": self.objective,
            f"ttft_ms_{PERCENTILE}": self.ttft_ms,
            f"tpot_ms_{PERCENTILE}": self.tpot_ms,
            "joules_per_token": self.joules_per_token,
            "front": self.front,
        }


def dominates(a: SearchPoint, b: SearchPoint) -> bool:
    """Whether ``a`` is at least as good as ``b`` in every measure both have, better in one."""
    better = False
    for (x, sign), (y, _) in zip(a.measures(), b.measures(), strict=True):
        if x is None or y is None:
            continue
        if sign * x < sign * y:
            return False
        better = better or sign * x > sign * y
    return better


@dataclass(frozen=True, slots=True, kw_only=True)
class Importances:
    """Each parameter's importance (summing to 1), or why there are none."""

    method: str
    trials: int  # the feasible trials they were computed on
    values: dict[str, float] = field(default_factory=dict)  # most important first
    why: str | None = None  # set when values is empty

    def to_json(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "trials": self.trials,
            "values": self.values,
            "why": self.why,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class Bucket:
    """One value (or range part) of one parameter in the crash map."""

    param: str
    label: str  # the value as names spell it, "[0.8, 0.85)" for a range, "unset"
    run: int  # trials started: feasible + infeasible + pruned
    feasible: int
    infeasible: dict[str, int]  # kind -> trials
    pruned: int  # stopped after the short rung ([search.fidelity])
    skipped: tuple[tuple[str, str], ...]  # (the skipped configuration, the trial dominating it)

    def to_json(self) -> dict[str, Any]:
        return {
            "param": self.param,
            "value": self.label,
            "run": self.run,
            "feasible": self.feasible,
            "infeasible": self.infeasible,
            "pruned": self.pruned,
            "skipped": len(self.skipped),
            "skipped_by": [{"variant": name, "by": by} for name, by in self.skipped],
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class SearchReport:
    """The Pareto front, the importances and the crash map of one search."""

    objective: str
    points: tuple[SearchPoint, ...]  # every feasible trial, ``front`` set on the front
    importances: Importances
    crash_map: tuple[Bucket, ...]
    skips_known: bool  # False when read from the store alone (skips are not stored)

    @property
    def front(self) -> tuple[SearchPoint, ...]:
        """The Pareto front, best objective first."""
        return tuple(p for p in self.points if p.front)

    def to_json(self) -> dict[str, Any]:
        """The ``pareto``, ``importances`` and ``crash_map`` keys of a JSON document."""
        return {
            "pareto": {
                "measures": [
                    "objective",
                    f"ttft_ms_{PERCENTILE}",
                    f"tpot_ms_{PERCENTILE}",
                    "joules_per_token",
                ],
                "front": [p.to_json() for p in self.front],
                "points": [p.to_json() for p in self.points],
            },
            "importances": self.importances.to_json(),
            "crash_map": {
                "skips_known": self.skips_known,
                "buckets": [b.to_json() for b in self.crash_map],
            },
        }


# --- building -------------------------------------------------------------------------------


def build_search(
    store: Store,
    cid: int,
    *,
    objective: str,
    trials: Sequence[TrialLike],
    params: Sequence[ParamLike],
    distributions_of: Callable[[Any, Mapping[str, Any]], dict[str, Any]],
    skips_known: bool,
) -> SearchReport:
    """The search report of campaign ``cid`` from its trials and parameters.

    ``distributions_of(optuna, values)``: Optuna's distributions of a trial's parameters
    (for the importances); ``skips_known``: whether ``trials`` hold the search's skips.
    """
    done = [t for t in trials if t.state != "in-flight"]
    return SearchReport(
        objective=objective,
        points=_front(_points(store, cid, objective, done)),
        importances=_importances(done, distributions_of),
        crash_map=_crash_map(params, done),
        skips_known=skips_known,
    )


def _points(
    store: Store, cid: int, objective: str, trials: Sequence[TrialLike]
) -> list[SearchPoint]:
    """Each feasible trial's objective, latency and energy from its stored points."""
    feasible = [t for t in trials if t.state == "feasible" and t.value is not None]
    names = {t.name for t in feasible}
    points = [p for p in store.points(cid) if p.variant in names]
    if objective == "capacity":  # the latency at each start's highest load meeting the SLO
        at: set[tuple[int, str]] = set()
        for c in store.capacities(cid):
            passes = (c.data.get("bracket") or {}).get("passes")
            if c.variant in names and passes is not None:
                over = "c" if c.data.get("over") == "concurrency" else "rate"
                at.add((c.attempt_id, f"{over}={float(passes):g}"))  # the probe's point
        points = [p for p in points if (p.attempt_id, p.load) in at]
    out = []
    for t in feasible:
        mine = [p for p in points if p.variant == t.name]
        energy = [
            (p.detail.get("energy") or {}).get("joules_per_output_token")
            for p in mine
            if isinstance(p.detail.get("energy"), dict)
        ]
        out.append(
            SearchPoint(
                trial=t.number,
                name=t.name,
                values=dict(t.values),
                objective=float(t.value or 0.0),
                ttft_ms=_mean([p.summary.get(f"ttft_ms_{PERCENTILE}") for p in mine]),
                tpot_ms=_mean([p.summary.get(f"tpot_ms_{PERCENTILE}") for p in mine]),
                joules_per_token=_mean(energy),
            )
        )
    return out


def _front(points: list[SearchPoint]) -> tuple[SearchPoint, ...]:
    """The points, best objective first, each marked when no other dominates it."""
    marked = [
        SearchPoint(**{**_fields(p), "front": not any(dominates(q, p) for q in points)})
        for p in points
    ]
    return tuple(sorted(marked, key=lambda p: (-p.objective, p.trial)))


def _importances(
    trials: Sequence[TrialLike],
    distributions_of: Callable[[Any, Mapping[str, Any]], dict[str, Any]],
) -> Importances:
    """PED-ANOVA over the feasible proposed trials (the baseline has no values)."""
    method = "ped-anova"
    feasible = [t for t in trials if t.number > 0 and t.state == "feasible" and t.value is not None]
    n = len(feasible)
    if n < MIN_IMPORTANCE_TRIALS:
        return Importances(
            method=method,
            trials=n,
            why=f"{n} feasible trial(s); importances need at least {MIN_IMPORTANCE_TRIALS}",
        )
    try:
        import optuna
    except ImportError:
        return Importances(
            method=method, trials=n, why="Optuna is not installed: pip install 'servegate[tune]'"
        )
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(direction="maximize")
    for t in feasible:
        study.add_trial(
            optuna.trial.create_trial(
                params=t.values, distributions=distributions_of(optuna, t.values), value=t.value
            )
        )
    with warnings.catch_warnings():  # experimental in some Optuna versions
        warnings.simplefilter("ignore")
        evaluator = optuna.importance.PedAnovaImportanceEvaluator(
            target_quantile=IMPORTANCE_QUANTILE
        )
        try:
            values = optuna.importance.get_param_importances(study, evaluator=evaluator)
        except (ValueError, RuntimeError) as exc:
            return Importances(method=method, trials=n, why=f"PED-ANOVA could not run: {exc}")
    if not values:
        return Importances(
            method=method, trials=n, why="no parameter is set in every feasible trial"
        )
    return Importances(method=method, trials=n, values={k: float(v) for k, v in values.items()})


def _crash_map(params: Sequence[ParamLike], trials: Sequence[TrialLike]) -> tuple[Bucket, ...]:
    """Per parameter, per value or range part: run, feasible, infeasible by kind, skipped."""
    searched = [t for t in trials if t.number > 0 and t.state != "reused"]
    out: list[Bucket] = []
    for param in params:
        labels = _labels(param)
        rows: dict[str, list[TrialLike]] = {label: [] for label in labels}
        for t in searched:
            label = "unset" if param.name not in t.values else _bucket(param, t.values[param.name])
            rows.setdefault(label, []).append(t)
        for label, mine in rows.items():
            if not mine and label == "unset":
                continue
            kinds: dict[str, int] = {}
            for t in mine:
                if t.state == "infeasible":
                    kinds[t.kind or "unknown"] = kinds.get(t.kind or "unknown", 0) + 1
            out.append(
                Bucket(
                    param=param.name,
                    label=label,
                    run=sum(t.state not in ("skipped", "reused") for t in mine),
                    feasible=sum(t.state == "feasible" for t in mine),
                    infeasible=dict(sorted(kinds.items())),
                    pruned=sum(t.state == "pruned" for t in mine),
                    skipped=tuple(
                        (t.name, t.skipped_by or "") for t in mine if t.state == "skipped"
                    ),
                )
            )
    return tuple(out)


def _edges(param: ParamLike) -> list[float]:
    low, high = float(param.low or 0.0), float(param.high or 0.0)
    if param.log:
        a, b = math.log(low), math.log(high)
        return [math.exp(a + (b - a) * i / RANGE_BUCKETS) for i in range(RANGE_BUCKETS + 1)]
    return [low + (high - low) * i / RANGE_BUCKETS for i in range(RANGE_BUCKETS + 1)]


def _labels(param: ParamLike) -> list[str]:
    """Every bucket of a parameter, in order (a crash map row each, even when empty)."""
    if param.choices:
        return [_text(c) for c in param.choices]
    if _few(param):
        return [str(v) for v in range(int(param.low or 0), int(param.high or 0) + 1)]
    edges = _edges(param)
    return [
        f"[{edges[i]:.4g}, {edges[i + 1]:.4g}{']' if i == RANGE_BUCKETS - 1 else ')'}"
        for i in range(RANGE_BUCKETS)
    ]


def _bucket(param: ParamLike, value: Any) -> str:
    if param.choices or _few(param):
        return _text(value)
    edges, labels = _edges(param), _labels(param)
    for i in range(RANGE_BUCKETS - 1):
        if float(value) < edges[i + 1]:
            return labels[i]
    return labels[-1]


def _few(param: ParamLike) -> bool:
    """An int range of at most RANGE_BUCKETS values: a bucket per value."""
    return param.integer and (param.high or 0) - (param.low or 0) < RANGE_BUCKETS


def _text(value: Any) -> str:
    """A value as trial names spell it (TOML's spelling, as ``servegate tune`` writes)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}" if float(f"{value:g}") == value else repr(value)
    return str(value)


def _mean(values: Sequence[Any]) -> float | None:
    numbers = [float(v) for v in values if isinstance(v, int | float) and math.isfinite(v)]
    return sum(numbers) / len(numbers) if numbers else None


def _fields(point: SearchPoint) -> dict[str, Any]:
    return {name: getattr(point, name) for name in SearchPoint.__dataclass_fields__}


# --- rendering ------------------------------------------------------------------------------


def _number(value: float | None, unit: str = "") -> str:
    return "-" if value is None else f"{value:.4g}{unit}"


def _kinds(bucket: Bucket) -> str:
    return ", ".join(f"{n} {kind}" for kind, n in bucket.infeasible.items()) or "0"


def search_lines(report: SearchReport) -> list[str]:
    """The search report as plain lines (the terminal, the end of ``servegate tune``)."""
    lines = [
        f"Pareto front ({report.objective} up; TTFT and TPOT {PERCENTILE}, J/token down; "
        f"{len(report.front)} of {len(report.points)} feasible trial(s)):"
    ]
    for p in report.front:
        lines.append(
            f"  trial {p.trial} {p.name}: {p.objective:.4g}, TTFT {_number(p.ttft_ms, ' ms')}, "
            f"TPOT {_number(p.tpot_ms, ' ms')}, {_number(p.joules_per_token, ' J/token')}"
        )
    imp = report.importances
    if imp.values:
        shown = ", ".join(f"{name} {value:.2f}" for name, value in imp.values.items())
        lines.append(f"Importances ({imp.method}, {imp.trials} feasible trials): {shown}")
    else:
        lines.append(f"Importances: none ({imp.why})")
    lines.append(
        "Crash map (trials run: feasible, infeasible by kind; skipped by the memory rule):"
        if report.skips_known
        else "Crash map (trials run: feasible, infeasible by kind; skips are not stored):"
    )
    for b in report.crash_map:
        text = f"  {b.param}={b.label}: {b.run} run, {b.feasible} feasible, {_kinds(b)} infeasible"
        if b.pruned:
            text += f", {b.pruned} pruned"
        if b.skipped:
            by = sorted({by for _, by in b.skipped})
            text += f", {len(b.skipped)} skipped (dominated by {', '.join(by)})"
        lines.append(text)
    return lines


def search_markdown(report: SearchReport) -> list[str]:
    """The search report as markdown sections."""
    from servegate._text import markdown_text

    def row(cells: list[str]) -> str:
        return "| " + " | ".join(markdown_text(c) for c in cells) + " |"

    out = [
        "## Search: Pareto front",
        "",
        f"Feasible trials not dominated in {report.objective} (higher is better), TTFT and "
        f"TPOT {PERCENTILE} and energy per output token (lower is better; - where not measured).",
        "",
        row(["trial", "variant", report.objective, "TTFT ms", "TPOT ms", "J/token"]),
        "| --- | --- | ---: | ---: | ---: | ---: |",
    ]
    for p in report.front:
        out.append(
            row(
                [
                    str(p.trial),
                    p.name,
                    f"{p.objective:.4g}",
                    _number(p.ttft_ms),
                    _number(p.tpot_ms),
                    _number(p.joules_per_token),
                ]
            )
        )
    imp = report.importances
    out += ["", "## Search: parameter importances", ""]
    if imp.values:
        out += [row(["parameter", f"importance ({imp.method})"]), "| --- | ---: |"]
        out += [row([name, f"{value:.3f}"]) for name, value in imp.values.items()]
    else:
        out.append(f"None: {markdown_text(imp.why or '')}.")
    out += [
        "",
        "## Search: crash map",
        "",
        row(["parameter", "value", "run", "feasible", "infeasible", "skipped"]),
        "| --- | --- | ---: | ---: | --- | --- |",
    ]
    for b in report.crash_map:
        skipped = (
            f"{len(b.skipped)} (by {', '.join(sorted({by for _, by in b.skipped}))})"
            if b.skipped
            else "0"
        )
        out.append(row([b.param, b.label, str(b.run), str(b.feasible), _kinds(b), skipped]))
    if not report.skips_known:
        out += ["", "Skipped configurations are not stored; servegate tune's output lists them."]
    return [*out, ""]


def search_html(report: SearchReport) -> str:
    """The search report as an HTML section (tables, no figure)."""
    import html

    def table(head: list[str], rows: list[list[str]]) -> str:
        cells = "".join(f"<th>{html.escape(h)}</th>" for h in head)
        body = "".join(
            "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows
        )
        return f"<table><tr>{cells}</tr>{body}</table>"

    front = table(
        ["trial", "variant", report.objective, "TTFT ms", "TPOT ms", "J/token"],
        [
            [
                str(p.trial),
                p.name,
                f"{p.objective:.4g}",
                _number(p.ttft_ms),
                _number(p.tpot_ms),
                _number(p.joules_per_token),
            ]
            for p in report.front
        ],
    )
    imp = report.importances
    importances = (
        table(
            ["parameter", f"importance ({imp.method})"],
            [[k, f"{v:.3f}"] for k, v in imp.values.items()],
        )
        if imp.values
        else f"<p>None: {html.escape(imp.why or '')}.</p>"
    )
    crashes = table(
        ["parameter", "value", "run", "feasible", "infeasible", "pruned", "skipped"],
        [
            [
                b.param,
                b.label,
                str(b.run),
                str(b.feasible),
                _kinds(b),
                str(b.pruned),
                f"{len(b.skipped)}"
                + (f" (by {', '.join(sorted({by for _, by in b.skipped}))})" if b.skipped else ""),
            ]
            for b in report.crash_map
        ],
    )
    note = (
        ""
        if report.skips_known
        else "<p>Skipped configurations are not stored; servegate tune's output lists them.</p>"
    )
    return (
        f"<h2>Search: Pareto front</h2>{front}<h2>Search: parameter importances</h2>"
        f"{importances}<h2>Search: crash map</h2>{crashes}{note}"
    )
