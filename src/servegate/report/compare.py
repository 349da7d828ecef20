"""Every variant against its reference: at each load point, each metric, and at startup.

Each metric's values sit in a hierarchy: server starts, the repeats measured on each,
and (for latencies) the requests of each repeat. Comparisons resample that hierarchy
(``hierarchy``), so the interval includes the variation between starts, and call a
change better or worse only when the interval excludes no change and the change is at
least ``min_effect``. Before anything is compared the report decides what may be:

- a variant that failed (did not start, or its benchmark failed) is never compared; it
  is shown as failed, with its reason;
- a variant measured on another workload (prompt or output length, dataset, API) is
  compared with a variant measured on that workload on the baseline's server, or not
  at all, and the report says which;
- a variant measured on the baseline's own server (a benchmark-only change) has no
  startup comparison: it was the same start;
- on a cluster of several GPU models, a variant is compared only with what its
  reference measured on the same GPU models (each attempt records its model), or not
  at all when they share none, and the report says so.

The baseline is also compared with itself, its starts split in two halves, at every
load and metric (on its most measured GPU model): the A/A noise floor shown with every
campaign. It makes calls only when each half has two starts or more (four starts of
the baseline); with fewer it splits the repeats of one start, labelled "within one
start", and says "needs more starts" instead of a call.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from servegate.report.bootstrap import (
    MIN_EFFECT,
    Call,
    Direction,
    Estimate,
    FloatArray,
    Statistic,
    call,
    estimate,
    estimate_nested,
    mean,
    median,
    quantile,
    seeded_rng,
)
from servegate.report.capacity import (
    CapacityComparison,
    CapacityRow,
    capacity_rows,
    compare_capacities,
)
from servegate.report.data import CampaignData, tpot_ms
from servegate.report.hierarchy import Nested, nested
from servegate.store import (
    AttemptInfo,
    AttemptStatus,
    CampaignInfo,
    PhaseInfo,
    PointInfo,
    Samples,
)

if TYPE_CHECKING:
    from servegate.report.search import SearchReport

# the attempt statuses that fail a start (a row's status compares equal to its string)
FAILED_STATUSES = frozenset({AttemptStatus.CRASH, AttemptStatus.TIMEOUT, AttemptStatus.FAILED})


@dataclass(frozen=True, slots=True, kw_only=True)
class Metric:
    """A compared metric: its key in reports, its unit, which way is better, its data."""

    key: str
    label: str
    unit: str
    direction: Direction
    over: Literal["repeats", "requests"]
    stat: Statistic
    point_values: Callable[[PointInfo, Samples | None], FloatArray]

    def nested(self, data: CampaignData, variant: str, load: str) -> Nested:
        """The variant's values at ``load``: by server start, then repeat, then request."""
        return nested_values(self, data, data.points_of(variant, load))

    def values(self, data: CampaignData, variant: str, load: str) -> FloatArray:
        """The variant's values at ``load``, pooled over starts and repeats."""
        return self.nested(data, variant, load).values


def nested_values(metric: Metric, data: CampaignData, points: Sequence[PointInfo]) -> Nested:
    """The metric's values of ``points``, grouped by the server start that measured them."""
    starts: dict[int, list[FloatArray]] = {}
    for point in sorted(points, key=lambda p: (p.attempt_id, p.repeat)):
        values = metric.point_values(point, data.point_samples.get(point.id))
        starts.setdefault(point.attempt_id, []).append(values)
    return nested([starts[aid] for aid in sorted(starts)])


def _throughput(point: PointInfo, samples: Samples | None) -> FloatArray:
    value = point.summary.get("output_throughput")
    return np.array([value] if isinstance(value, int | float) else [], dtype=np.float64)


def _from_samples(pick: Callable[[Samples], FloatArray]) -> Callable[..., FloatArray]:
    def values(point: PointInfo, samples: Samples | None) -> FloatArray:
        return np.empty(0, dtype=np.float64) if samples is None else pick(samples)

    return values


def _ttft(samples: Samples) -> FloatArray:
    return samples.ttft_ms


def _e2el(samples: Samples) -> FloatArray:
    return samples.e2el_ms


METRICS: tuple[Metric, ...] = (
    Metric(
        key="output_throughput",
        label="output throughput",
        unit="tok/s",
        direction="higher",
        over="repeats",
        stat=mean,
        point_values=_throughput,
    ),
    Metric(
        key="ttft_ms_p50",
        label="TTFT p50",
        unit="ms",
        direction="lower",
        over="requests",
        stat=median,
        point_values=_from_samples(_ttft),
    ),
    Metric(
        key="ttft_ms_p99",
        label="TTFT p99",
        unit="ms",
        direction="lower",
        over="requests",
        stat=quantile(0.99),
        point_values=_from_samples(_ttft),
    ),
    Metric(
        key="tpot_ms_p50",
        label="TPOT p50",
        unit="ms",
        direction="lower",
        over="requests",
        stat=median,
        point_values=_from_samples(tpot_ms),
    ),
    Metric(
        key="tpot_ms_p99",
        label="TPOT p99",
        unit="ms",
        direction="lower",
        over="requests",
        stat=quantile(0.99),
        point_values=_from_samples(tpot_ms),
    ),
    Metric(
        key="e2el_ms_p50",
        label="E2EL p50",
        unit="ms",
        direction="lower",
        over="requests",
        stat=median,
        point_values=_from_samples(_e2el),
    ),
)
HEADLINE = METRICS[0]
# the tail latencies the terminal table shows beside throughput
TAIL_METRICS = ("ttft_ms_p99", "tpot_ms_p99")


_STANDARD_PERCENTILES = (50.0, 90.0, 99.0)
_EXTRA_KEY = re.compile(r"^(ttft|tpot|e2el)_ms_p(\d+(?:\.\d+)?)$")
_PICK: dict[str, Callable[[Samples], FloatArray]] = {
    "ttft": _ttft,
    "tpot": tpot_ms,
    "e2el": _e2el,
}


def metrics_for(data: CampaignData) -> tuple[Metric, ...]:
    """``METRICS`` and, for the extra percentiles the campaign's points were measured with
    (``[bench] percentiles``, e.g. 99.9), TTFT, TPOT and E2EL at each of them, compared
    over requests as p99 is."""
    extra: set[tuple[str, str]] = set()
    for point in data.points:
        for key in point.summary:
            found = _EXTRA_KEY.match(key)
            if found and float(found[2]) not in _STANDARD_PERCENTILES:
                extra.add((found[1], found[2]))
    added = tuple(
        Metric(
            key=f"{name}_ms_p{suffix}",
            label=f"{name.upper()} p{suffix}",
            unit="ms",
            direction="lower",
            over="requests",
            stat=quantile(float(suffix) / 100.0),
            point_values=_from_samples(_PICK[name]),
        )
        for name, suffix in sorted(extra, key=lambda e: (list(_PICK).index(e[0]), float(e[1])))
    )
    return METRICS + added


def metric(key: str) -> Metric:
    """The metric called ``key`` (KeyError when there is none)."""
    for candidate in METRICS:
        if candidate.key == key:
            return candidate
    raise KeyError(key)


@dataclass(frozen=True, slots=True, kw_only=True)
class MetricComparison:
    """One variant against its reference at one load point on one metric."""

    variant: str
    load: str
    metric: Metric
    estimate: Estimate | None
    call: Call
    reference: str = ""  # the variant compared with: the baseline, or its workload twin


@dataclass(frozen=True, slots=True, kw_only=True)
class StartupComparison:
    """A variant's startup (cold or warm) against the baseline's, in seconds."""

    variant: str
    temperature: Literal["cold", "warm"]
    estimate: Estimate | None
    call: Call


@dataclass(frozen=True, slots=True, kw_only=True)
class NoiseFloor:
    """The baseline against itself at one load and metric (A/A), its starts split in two."""

    load: str
    metric: Metric
    split: str  # "starts 1, 3 vs 2, 4", or "repeats 1, 3 vs 2 of one start, within one start"
    estimate: Estimate | None
    call: Call


@dataclass(frozen=True, slots=True, kw_only=True)
class LoadSummary:
    """What one variant measured at one load point, over its starts and repeats."""

    repeats: int
    throughput_mean: float | None
    throughput_values: tuple[float, ...]
    completed: int
    failed: int
    failures: dict[str, int]
    starts: int = 1  # server starts the repeats were measured on


@dataclass(frozen=True, slots=True, kw_only=True)
class VariantSummary:
    """One row of the report: status, startup and measurements of one variant."""

    name: str
    is_baseline: bool
    status: str  # done | crash | timeout | failed | interrupted | running | not run
    kind: str | None
    hint: str | None
    reason: str | None
    tail: tuple[str, ...]
    cold_startup_s: float | None
    warm_startups_s: tuple[float, ...]
    shared_server_of: str | None  # measured on another variant's server (bench-only change)
    timeline: tuple[PhaseInfo, ...]  # phases of the start shown in the timeline
    timeline_total_s: float | None
    loads: dict[str, LoadSummary] = field(default_factory=dict)
    starts: int = 0  # READY server starts its measurements come from
    earlier_failures: tuple[str, ...] = ()  # starts that failed before the last one
    workload: str | None = None  # "input 1024, output 256"; None when not recorded
    reference: str | None = None  # the variant it is compared with; None: not compared
    not_compared: str | None = None  # why it is not compared (failed, other workload, ...)
    on_baseline_server: bool = False  # measured on the baseline's server configuration

    @property
    def failed(self) -> bool:
        """Whether the variant failed: did not start, or its benchmark failed."""
        return self.status in FAILED_STATUSES


@dataclass(frozen=True, slots=True, kw_only=True)
class Report:
    """A campaign compared: the rows, every metric comparison, the startup comparisons."""

    campaign: CampaignInfo
    data: CampaignData
    variants: tuple[VariantSummary, ...]
    comparisons: tuple[MetricComparison, ...]
    startup: tuple[StartupComparison, ...]
    confidence: float
    resamples: int
    seed: int
    generated_at: str
    min_effect: float = MIN_EFFECT
    noise_floor: tuple[NoiseFloor, ...] = ()
    capacity_rows: tuple[CapacityRow, ...] = ()  # find_max: each variant's capacities
    capacity: tuple[CapacityComparison, ...] = ()  # ... compared with the baseline's
    metrics: tuple[Metric, ...] = METRICS  # what was compared (METRICS and extra percentiles)
    search: SearchReport | None = None  # a tune campaign: its Pareto front, importances, crashes

    @property
    def baseline(self) -> str:
        """The baseline variant's name."""
        return self.campaign.baseline

    @property
    def loads(self) -> tuple[str, ...]:
        """The load points, in increasing load."""
        return self.data.loads

    def row(self, name: str) -> VariantSummary:
        """The row of the variant called ``name`` (KeyError when there is none)."""
        for row in self.variants:
            if row.name == name:
                return row
        raise KeyError(name)

    def get(self, variant: str, load: str, key: str) -> MetricComparison | None:
        """The comparison of ``variant`` at ``load`` on metric ``key``, if there is one."""
        for comp in self.comparisons:
            if comp.variant == variant and comp.load == load and comp.metric.key == key:
                return comp
        return None

    def noise(self, load: str, key: str) -> NoiseFloor | None:
        """The A/A comparison of the baseline with itself at ``load`` on ``key``."""
        for floor in self.noise_floor:
            if floor.load == load and floor.metric.key == key:
                return floor
        return None

    def headline(self, variant: str) -> MetricComparison | None:
        """Throughput vs the reference at the highest load point both measured."""
        for load in reversed(self.loads):
            comp = self.get(variant, load, HEADLINE.key)
            if comp is not None and comp.estimate is not None:
                return comp
        return None

    @property
    def single_start(self) -> bool:
        """Whether some comparison is not called for one server start on a side."""
        return any(c.call == "needs more starts" for c in self.comparisons)

    @property
    def not_estimable(self) -> tuple[MetricComparison, ...]:
        """The comparisons of a percentile from too few requests per start (not called)."""
        return tuple(c for c in self.comparisons if c.call == "not estimable")


# --- what happened to each variant ----------------------------------------------------


def campaign_min_effect(config_text: str) -> float | None:
    """``[campaign] min_effect`` of a stored campaign file (``"2%"``: 0.02); None if unset."""
    try:
        table = tomllib.loads(config_text).get("campaign")
    except tomllib.TOMLDecodeError:
        return None
    text = table.get("min_effect") if isinstance(table, dict) else None
    if not isinstance(text, str):
        return None
    try:
        value = float(text.strip().removesuffix("%").strip())
    except ValueError:
        return None
    return value / 100.0 if 0.0 <= value < 100.0 else None


def failure_owners(attempt: AttemptInfo, names: Sequence[str]) -> set[str] | None:
    """The variants an attempt's failure belongs to; None: every variant of the attempt.

    The runner stores them with the attempt (``failed_variants``): the variants whose
    benchmark could not run, or the one being measured when the server died; other
    failures (preflight, launch, an internal error) concern the whole server start.
    """
    if not attempt.failed_variants:
        return None
    return {name for name in names if name in attempt.failed_variants}


def _fails(attempt: AttemptInfo, name: str, names: Sequence[str]) -> bool:
    """Whether ``attempt`` counts as a failure of variant ``name``."""
    if attempt.status in ("crash", "timeout"):
        return attempt.variant == name
    if attempt.status != "failed":
        return False
    owners = failure_owners(attempt, names)
    return name in owners if owners is not None else True


def _failure_words(attempt: AttemptInfo) -> str:
    words = {
        AttemptStatus.CRASH: "CRASH",
        AttemptStatus.TIMEOUT: "TIMEOUT",
        AttemptStatus.FAILED: "FAILED",
    }[attempt.status]
    kind = (attempt.verdict or {}).get("kind") if attempt.status != "failed" else None
    return f"{words} ({kind})" if kind else words


@dataclass(frozen=True, slots=True, kw_only=True)
class _State:
    status: str
    attempt: AttemptInfo | None  # the attempt that tells the status
    shared: str | None  # the variant whose server measured it
    earlier: tuple[str, ...]
    server_keys: frozenset[str]


def _state(data: CampaignData, name: str) -> _State:
    """The variant's status from its last relevant server start, and what came before."""
    by_id = {a.id: a for a in data.attempts}
    own = data.attempts_of(name)
    hosts = {p.attempt_id for p in data.points if p.variant == name}
    named = [
        a
        for a in data.attempts
        if a.variant != name
        and a.status == "failed"
        and name in (failure_owners(a, data.variants) or set())
    ]
    relevant = sorted(
        {a.id: a for a in [*own, *named, *(by_id[i] for i in hosts if i in by_id)]}.values(),
        key=lambda a: a.id,
    )
    hosted = [by_id[i] for i in sorted(hosts) if i in by_id]
    keys = frozenset(a.server_key for a in (hosted or own))
    # measured only on starts of another variant's server: a benchmark-only change
    shared = hosted[-1].variant if hosted and all(a.variant != name for a in hosted) else None
    if not relevant:
        return _State(status="not run", attempt=None, shared=None, earlier=(), server_keys=keys)
    last = relevant[-1]
    earlier = tuple(_failure_words(a) for a in relevant[:-1] if _fails(a, name, data.variants))
    status: str  # an attempt's status, or "not run"
    if _fails(last, name, data.variants):
        status = last.status
    elif last.variant == name:
        status = "done" if last.status == "failed" else last.status
    else:
        status = last.status if last.status in ("running", "interrupted", "ready") else "done"
    return _State(status=status, attempt=last, shared=shared, earlier=earlier, server_keys=keys)


# --- workloads: what was sent decides what may be compared -----------------------------

# each key with the value rows stored before it existed stand for: every schedule was
# Poisson before --burstiness, which is burstiness 1; every point resent the same prompts
# before --cache, which is cache "share"; prompts were approximate before --tokenizer
_WORKLOAD_KEYS: tuple[tuple[str, Any], ...] = (
    ("api", None),
    ("input_len", None),
    ("output_len", None),
    ("dataset", None),
    ("burstiness", 1.0),
    ("cache", "share"),
    ("tokenizer", None),
)


def workload_of(point: PointInfo) -> tuple[Any, ...] | None:
    """(api, input_len, output_len, dataset, burstiness, cache, tokenizer) of a point; None
    when not recorded."""
    settings = point.detail.get("settings") if isinstance(point.detail, dict) else None
    if not isinstance(settings, dict):
        return None
    return tuple(settings.get(key, before) for key, before in _WORKLOAD_KEYS)


def workload_label(workload: tuple[Any, ...] | None) -> str | None:
    """``input 1024, output 256`` (with the API, dataset, burstiness, cache mode and
    tokenizer when not the defaults)."""
    if workload is None:
        return None
    api, input_len, output_len, dataset, burstiness, cache, tokenizer = workload
    output = "from the dataset" if output_len is None else output_len
    parts = [f"input {input_len}", f"output {output}"]
    if dataset not in (None, "random"):
        parts.append(f"dataset {str(dataset).rsplit('/', 1)[-1]}")
    if api not in (None, "completions"):
        parts.append(f"{api} API")
    if burstiness not in (None, 1, 1.0):
        parts.append(f"burstiness {burstiness:g}")
    if cache == "isolate":  # rows stored before --cache resent their prompts: "share"
        parts.append("cache isolate")
    if tokenizer is not None:
        parts.append(f"exact prompts by {str(tokenizer).rsplit('/', 1)[-1]}")
    return ", ".join(parts)


def _workload(data: CampaignData, name: str) -> tuple[Any, ...] | None:
    for point in data.points:
        if point.variant == name:
            found = workload_of(point)
            if found is not None:
                return found
    return None


# --- rows ---------------------------------------------------------------------------


def summarize_variant(data: CampaignData, name: str) -> VariantSummary:
    """Status, startup and per-load measurements of one variant (before references)."""
    state = _state(data, name)
    attempt = state.attempt
    starts = data.attempts_of(state.shared or name)
    cold = next((a.startup_s for a in starts if a.cold and a.startup_s is not None), None)
    warm = tuple(a.startup_s for a in starts if not a.cold and a.startup_s is not None)
    shown = next((a for a in starts if a.cold), starts[0] if starts else None)
    failed = state.status in FAILED_STATUSES
    verdict = attempt.verdict if attempt is not None and attempt.verdict is not None else {}
    reason_lines = (attempt.reason or "").split("\n") if attempt is not None else [""]
    tail: tuple[str, ...] = ()
    if state.status in ("crash", "timeout"):
        tail = tuple(verdict.get("tail") or ())
    elif failed:
        tail = tuple(line for line in reason_lines[1:] if line)  # the runner's log tail
    loads = {}
    for load in data.loads:
        points = data.points_of(name, load)
        if not points:
            continue
        values = HEADLINE.values(data, name, load)
        failures: dict[str, int] = {}
        for p in points:
            for kind, count in p.failures.items():
                failures[kind] = failures.get(kind, 0) + int(count)
        loads[load] = LoadSummary(
            repeats=len(points),
            throughput_mean=float(values.mean()) if values.size else None,
            throughput_values=tuple(float(v) for v in values),
            completed=sum(p.completed for p in points),
            failed=sum(p.failed for p in points),
            failures=failures,
            starts=len({p.attempt_id for p in points}),
        )
    elapsed = shown.verdict.get("elapsed_s") if shown and shown.verdict else None
    measured_on = {p.attempt_id for p in data.points if p.variant == name}
    return VariantSummary(
        name=name,
        is_baseline=name == data.baseline,
        status=state.status,
        kind=verdict.get("kind") if state.status in {"crash", "timeout"} else None,
        hint=verdict.get("hint") if state.status in {"crash", "timeout"} else None,
        reason=reason_lines[0] or None,
        tail=tail,
        cold_startup_s=cold,
        warm_startups_s=warm,
        shared_server_of=state.shared,
        timeline=shown.phases if shown else (),
        timeline_total_s=float(elapsed) if isinstance(elapsed, int | float) else None,
        loads=loads,
        starts=len(measured_on),
        earlier_failures=state.earlier,
        workload=workload_label(_workload(data, name)),
    )


# the variant name suffix of a tune trial's short rung ([search.fidelity]; docs/tune.md)
TUNE_RUNG = "~rung1"


def _references(
    data: CampaignData, rows: dict[str, VariantSummary]
) -> dict[str, tuple[str | None, str | None, bool]]:
    """Per variant: the variant it is compared with, why not, and whether it ran on the
    baseline's server configuration."""
    base = data.baseline
    keys = {name: _state(data, name).server_keys for name in data.variants}
    works = {name: _workload(data, name) for name in data.variants}
    base_row = rows[base]
    out: dict[str, tuple[str | None, str | None, bool]] = {}
    for name in data.variants:
        row = rows[name]
        on_base = bool(keys[name]) and keys[name] == keys[base]
        if name == base:
            out[name] = (None, None, True)
            continue
        if row.failed:
            words = "did not start" if row.status in ("crash", "timeout") else "failed"
            out[name] = (None, f"not compared: it {words}", on_base)
            continue
        if row.status == "not run":
            out[name] = (None, None, on_base)
            continue
        full, rung, _ = name.rpartition(TUNE_RUNG)
        if rung and full:  # a tune's short rung: fewer requests than the baseline's
            out[name] = (
                None,
                f"not compared: the short rung of tune trial {full} (docs/tune.md), measured "
                "with fewer requests than the baseline",
                on_base,
            )
            continue
        if base_row.failed:
            words = "did not start" if base_row.status in ("crash", "timeout") else "failed"
            out[name] = (None, f"not compared: the baseline {words}", on_base)
            continue
        mine, theirs = works[name], works[base]
        if mine is None or theirs is None or mine == theirs:
            out[name] = (base, None, on_base)
            continue
        if on_base:
            out[name] = (
                None,
                f"the baseline's server on another workload ({workload_label(mine)}): "
                "the reference for variants measured on it",
                on_base,
            )
            continue
        twins = [
            other
            for other in data.variants
            if other not in (name, base)
            and works[other] == mine
            and keys[other]
            and keys[other] == keys[base]
            and not rows[other].failed
        ]
        if twins:
            out[name] = (twins[0], None, on_base)
        else:
            out[name] = (
                None,
                f"not compared: measured with {workload_label(mine)}, the baseline with "
                f"{workload_label(theirs)}; add a variant on the baseline's server with "
                "this workload to compare it",
                on_base,
            )
    return out


# --- the comparison -------------------------------------------------------------------


def _split_halves(
    points: Sequence[PointInfo],
) -> tuple[list[PointInfo], list[PointInfo], str, bool]:
    """The baseline's points in two halves for the A/A, and whether it may call.

    Alternate starts when each half gets at least two (four starts or more): the A/A
    then has what a comparison needs, the variation between starts on each side. With
    fewer, the repeats of the start with the most of them are split: the noise within
    one start, shown and never called (one start a side says nothing of the variation
    between starts, which is what makes identical servers differ).
    """
    starts = sorted({p.attempt_id for p in points})
    if len(starts) >= 4:
        first = set(starts[0::2])
        numbers = {aid: index + 1 for index, aid in enumerate(starts)}
        a = [p for p in points if p.attempt_id in first]
        b = [p for p in points if p.attempt_id not in first]
        left = ", ".join(str(numbers[s]) for s in starts[0::2])
        right = ", ".join(str(numbers[s]) for s in starts[1::2])
        return a, b, f"starts {left} vs {right}", True
    if not starts:
        return [], [], "", False
    by_start = {aid: [p for p in points if p.attempt_id == aid] for aid in starts}
    most = max(starts, key=lambda aid: len(by_start[aid]))
    ordered = sorted(by_start[most], key=lambda p: p.repeat)
    if len(ordered) >= 2:
        left = ", ".join(str(p.repeat + 1) for p in ordered[0::2])
        right = ", ".join(str(p.repeat + 1) for p in ordered[1::2])
        where = "of one start" if len(starts) == 1 else f"of start {starts.index(most) + 1}"
        split = f"repeats {left} vs {right} {where}, within one start"
        return ordered[0::2], ordered[1::2], split, False
    return [], [], "", False


def compare(
    data: CampaignData,
    *,
    confidence: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
    min_effect: float = MIN_EFFECT,
    metrics: Sequence[Metric] | None = None,
    now: Callable[[], str] | None = None,
) -> Report:
    """Compare every variant of a campaign with its reference, and the baseline with itself.

    Args:
        data: the campaign, from ``load_campaign``.
        confidence: the interval's coverage (0.95 for 95 %).
        resamples: bootstrap resamples per comparison.
        seed: seeds the resampling; the same data and seed give the same report.
        min_effect: the smallest change (a fraction: 0.01 is 1 %) called better or worse.
        metrics: the metrics to compare (by default ``metrics_for(data)``: ``METRICS`` and
            the extra percentiles the points were measured with).
        now: the report's timestamp source (tests pin it).
    """
    method = _Method(confidence=confidence, resamples=resamples, seed=seed, min_effect=min_effect)
    if metrics is None:
        metrics = metrics_for(data)
    rows = _rows(data)
    base = next(row for row in rows if row.name == data.baseline)
    comparisons: list[MetricComparison] = []
    startup: list[StartupComparison] = []
    for row in rows:
        if row.is_baseline or row.failed or base.failed:
            continue
        comparisons.extend(_metric_comparisons(data, row, metrics, method))
        if not row.on_baseline_server:  # else the same server start as the baseline
            startup.extend(_startup_comparisons(base, row, method))
    return Report(
        campaign=data.campaign,
        data=data,
        variants=rows,
        comparisons=tuple(comparisons),
        metrics=tuple(metrics),
        startup=tuple(startup),
        confidence=confidence,
        resamples=resamples,
        seed=seed,
        generated_at=now() if now else datetime.now(UTC).isoformat(timespec="seconds"),
        min_effect=min_effect,
        noise_floor=_noise_floor(data, base, metrics, method),
        capacity_rows=(cap_rows := capacity_rows(data.capacities)),
        capacity=compare_capacities(
            cap_rows,
            data.baseline,
            confidence=confidence,
            resamples=resamples,
            seed=seed,
            min_effect=min_effect,
        ),
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class _Method:
    """How every comparison of one report is estimated and called."""

    confidence: float
    resamples: int
    seed: int
    min_effect: float

    def estimate(self, a: Nested, b: Nested, stat: Statistic, *seed_parts: str) -> Estimate | None:
        """``estimate_nested`` of reference ``a`` against ``b``, seeded by ``seed_parts``."""
        return estimate_nested(
            a,
            b,
            stat=stat,
            confidence=self.confidence,
            resamples=self.resamples,
            rng=seeded_rng(self.seed, *seed_parts),
        )


def _rows(data: CampaignData) -> tuple[VariantSummary, ...]:
    """Every variant's row, with the variant it is compared with (or why none)."""
    first = {name: summarize_variant(data, name) for name in data.variants}
    refs = _references(data, first)
    for name, (reference, _, on_base) in refs.items():
        why = None if reference is None else _across_gpus(data, name, reference)
        if why is not None:
            refs[name] = (None, why, on_base)
    return tuple(_with_reference(first[name], *refs[name]) for name in data.variants)


def gpu_models(data: CampaignData, points: Sequence[PointInfo]) -> set[str | None]:
    """The GPU models ``points`` were measured on (None: not recorded, a local run)."""
    model = {a.id: a.gpu_model for a in data.attempts}
    return {model.get(p.attempt_id) for p in points}


def _across_gpus(data: CampaignData, name: str, reference: str) -> str | None:
    """Why ``name`` cannot be compared with ``reference``: no GPU model measured both
    (None when one does, or either has no points yet)."""
    mine = gpu_models(data, [p for p in data.points if p.variant == name])
    theirs = gpu_models(data, [p for p in data.points if p.variant == reference])
    if not mine or not theirs or mine & theirs:
        return None

    def words(models: set[str | None]) -> str:
        return ", ".join(sorted(m or "a GPU model not recorded" for m in models))

    return (
        f"not compared: measured on {words(mine)}, {reference} only on {words(theirs)}; no "
        f"comparison across GPU models is possible (measure {reference} on {words(mine)} too)"
    )


def _same_gpus(
    data: CampaignData, reference: str, name: str, load: str
) -> tuple[list[PointInfo], list[PointInfo]]:
    """The reference's and the variant's points at ``load`` on the GPU models both were
    measured on: a variant is compared only with a baseline of its own GPU model."""
    model = {a.id: a.gpu_model for a in data.attempts}
    ref, mine = data.points_of(reference, load), data.points_of(name, load)
    if not ref or not mine:  # one side not measured at this load: a "no data" comparison
        return list(ref), list(mine)
    common = gpu_models(data, ref) & gpu_models(data, mine)
    return (
        [p for p in ref if model.get(p.attempt_id) in common],
        [p for p in mine if model.get(p.attempt_id) in common],
    )


def _metric_comparisons(
    data: CampaignData, row: VariantSummary, metrics: Sequence[Metric], method: _Method
) -> list[MetricComparison]:
    """The variant against its reference at every load and metric either side measured."""
    reference = row.reference or ""
    out = []
    for load in data.loads if reference else ():
        ref_points, points = _same_gpus(data, reference, row.name, load)
        for m in metrics:
            a = nested_values(m, data, ref_points)
            b = nested_values(m, data, points)
            if a.size == 0 and b.size == 0:
                continue
            est = method.estimate(a, b, m.stat, row.name, load, m.key)
            out.append(
                MetricComparison(
                    variant=row.name,
                    load=load,
                    metric=m,
                    estimate=est,
                    call=call(est, m.direction, method.min_effect),
                    reference=reference,
                )
            )
    return out


def _startup_comparisons(
    base: VariantSummary, row: VariantSummary, method: _Method
) -> list[StartupComparison]:
    """The variant's cold and warm startups against the baseline's, where both have some.

    Startup does not depend on the workload: compared even without a reference.
    """
    out = []
    for temperature, a_vals, b_vals in (
        ("cold", _opt(base.cold_startup_s), _opt(row.cold_startup_s)),
        ("warm", base.warm_startups_s, row.warm_startups_s),
    ):
        if not a_vals or not b_vals:
            continue
        est = estimate(
            np.asarray(a_vals, dtype=np.float64),
            np.asarray(b_vals, dtype=np.float64),
            stat=mean,
            confidence=method.confidence,
            resamples=method.resamples,
            rng=seeded_rng(method.seed, row.name, "startup", temperature),
        )
        out.append(
            StartupComparison(
                variant=row.name,
                temperature="cold" if temperature == "cold" else "warm",
                estimate=est,
                call=call(est, "lower", method.min_effect),
            )
        )
    return out


def _noise_floor(
    data: CampaignData, base: VariantSummary, metrics: Sequence[Metric], method: _Method
) -> tuple[NoiseFloor, ...]:
    """The baseline against itself: one half of its starts against the other half."""
    if base.failed:
        return ()
    out = []
    for load in data.loads:
        halves = _split_halves(_one_gpu(data, data.points_of(base.name, load)))
        a_points, b_points, split, calls = halves
        if not split:
            continue
        for m in metrics:
            a = nested_values(m, data, a_points)
            b = nested_values(m, data, b_points)
            if a.size == 0 or b.size == 0:
                continue
            est = method.estimate(a, b, m.stat, "A/A", load, m.key)
            said = call(est, m.direction, method.min_effect)
            if not calls and said not in ("no data", "1 run, no interval"):
                said = "needs more starts"
            out.append(NoiseFloor(load=load, metric=m, split=split, estimate=est, call=said))
    return tuple(out)


def _one_gpu(data: CampaignData, points: Sequence[PointInfo]) -> list[PointInfo]:
    """The points of the GPU model with the most of them: the A/A halves on one model."""
    model = {a.id: a.gpu_model for a in data.attempts}
    counts: dict[str | None, int] = {}
    for p in points:
        counts[model.get(p.attempt_id)] = counts.get(model.get(p.attempt_id), 0) + 1
    if len(counts) <= 1:
        return list(points)
    most = max(counts, key=lambda m: (counts[m], m or ""))
    return [p for p in points if model.get(p.attempt_id) == most]


def _with_reference(
    row: VariantSummary, reference: str | None, why: str | None, on_base: bool
) -> VariantSummary:
    return replace(row, reference=reference, not_compared=why, on_baseline_server=on_base)


def _opt(value: float | None) -> tuple[float, ...]:
    return () if value is None else (value,)
