"""Every variant against the baseline: at each load point, each metric, and at startup.

Throughput is compared over repeats (one number per run, so the interval reflects how
much whole runs vary); latencies over requests pooled from all repeats. Each comparison
carries the ratio and the difference with a bootstrap interval and one call: better,
worse, or no detectable difference, in the metric's own direction. Startup is compared
cold (the first start of a server configuration in the campaign) and warm (later ones).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal

import numpy as np

from servegate.report.bootstrap import (
    Call,
    Direction,
    Estimate,
    FloatArray,
    Statistic,
    call,
    estimate,
    mean,
    median,
    quantile,
    seeded_rng,
)
from servegate.report.data import CampaignData, tpot_ms
from servegate.store import AttemptInfo, CampaignInfo, PhaseInfo, Samples


@dataclass(frozen=True, slots=True, kw_only=True)
class Metric:
    """A compared metric: its key in reports, its unit, which way is better, its data."""

    key: str
    label: str
    unit: str
    direction: Direction
    over: Literal["repeats", "requests"]
    stat: Statistic
    values: Callable[[CampaignData, str, str], FloatArray]


def _throughput(data: CampaignData, variant: str, load: str) -> FloatArray:
    values = [p.summary.get("output_throughput") for p in data.points_of(variant, load)]
    return np.array([v for v in values if isinstance(v, int | float)], dtype=np.float64)


def _from_samples(pick: Callable[[Samples], FloatArray]) -> Callable[..., FloatArray]:
    def values(data: CampaignData, variant: str, load: str) -> FloatArray:
        samples = data.samples.get((variant, load))
        return np.empty(0, dtype=np.float64) if samples is None else pick(samples)

    return values


METRICS: tuple[Metric, ...] = (
    Metric(
        key="output_throughput",
        label="output throughput",
        unit="tok/s",
        direction="higher",
        over="repeats",
        stat=mean,
        values=_throughput,
    ),
    Metric(
        key="ttft_ms_p50",
        label="TTFT p50",
        unit="ms",
        direction="lower",
        over="requests",
        stat=median,
        values=_from_samples(lambda s: s.ttft_ms),
    ),
    Metric(
        key="ttft_ms_p99",
        label="TTFT p99",
        unit="ms",
        direction="lower",
        over="requests",
        stat=quantile(0.99),
        values=_from_samples(lambda s: s.ttft_ms),
    ),
    Metric(
        key="tpot_ms_p50",
        label="TPOT p50",
        unit="ms",
        direction="lower",
        over="requests",
        stat=median,
        values=_from_samples(tpot_ms),
    ),
    Metric(
        key="e2el_ms_p50",
        label="E2EL p50",
        unit="ms",
        direction="lower",
        over="requests",
        stat=median,
        values=_from_samples(lambda s: s.e2el_ms),
    ),
)
HEADLINE = METRICS[0]


@dataclass(frozen=True, slots=True, kw_only=True)
class MetricComparison:
    """One variant against the baseline at one load point on one metric."""

    variant: str
    load: str
    metric: Metric
    estimate: Estimate | None
    call: Call


@dataclass(frozen=True, slots=True, kw_only=True)
class StartupComparison:
    """A variant's startup (cold or warm) against the baseline's, in seconds."""

    variant: str
    temperature: Literal["cold", "warm"]
    estimate: Estimate | None
    call: Call


@dataclass(frozen=True, slots=True, kw_only=True)
class LoadSummary:
    """What one variant measured at one load point, over its repeats."""

    repeats: int
    throughput_mean: float | None
    throughput_values: tuple[float, ...]
    completed: int
    failed: int
    failures: dict[str, int]


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

    @property
    def baseline(self) -> str:
        """The baseline variant's name."""
        return self.campaign.baseline

    @property
    def loads(self) -> tuple[str, ...]:
        """The load points, in increasing load."""
        return self.data.loads

    def get(self, variant: str, load: str, key: str) -> MetricComparison | None:
        """The comparison of ``variant`` at ``load`` on metric ``key``, if there is one."""
        for comp in self.comparisons:
            if comp.variant == variant and comp.load == load and comp.metric.key == key:
                return comp
        return None

    def headline(self, variant: str) -> MetricComparison | None:
        """Throughput vs baseline at the highest load point both measured."""
        for load in reversed(self.loads):
            comp = self.get(variant, load, HEADLINE.key)
            if comp is not None and comp.estimate is not None:
                return comp
        return None


def _status(data: CampaignData, name: str) -> tuple[str, AttemptInfo | None, str | None]:
    """The variant's status, the attempt that tells it, and the variant whose server it used."""
    own = data.attempts_of(name)
    if own:
        return own[-1].status, own[-1], None
    points = [p for p in data.points if p.variant == name]
    if points:
        by_id = {a.id: a for a in data.attempts}
        host = by_id.get(points[-1].attempt_id)
        return "done", host, host.variant if host else None
    return "not run", None, None


def summarize_variant(data: CampaignData, name: str) -> VariantSummary:
    """Status, startup and per-load measurements of one variant."""
    status, attempt, shared = _status(data, name)
    starts = data.attempts_of(shared or name)
    cold = next((a.startup_s for a in starts if a.cold and a.startup_s is not None), None)
    warm = tuple(a.startup_s for a in starts if not a.cold and a.startup_s is not None)
    shown = next((a for a in starts if a.cold), starts[0] if starts else None)
    verdict = attempt.verdict if attempt is not None and attempt.verdict is not None else {}
    loads = {}
    for load in data.loads:
        points = data.points_of(name, load)
        if not points:
            continue
        values = _throughput(data, name, load)
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
        )
    elapsed = shown.verdict.get("elapsed_s") if shown and shown.verdict else None
    return VariantSummary(
        name=name,
        is_baseline=name == data.baseline,
        status=status,
        kind=verdict.get("kind") if status in {"crash", "timeout"} else None,
        hint=verdict.get("hint") if status in {"crash", "timeout"} else None,
        reason=(attempt.reason if attempt is not None else None),
        tail=tuple(verdict.get("tail") or ()) if status in {"crash", "timeout"} else (),
        cold_startup_s=cold,
        warm_startups_s=warm,
        shared_server_of=shared,
        timeline=shown.phases if shown else (),
        timeline_total_s=float(elapsed) if isinstance(elapsed, int | float) else None,
        loads=loads,
    )


def compare(
    data: CampaignData,
    *,
    confidence: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
    now: Callable[[], str] | None = None,
) -> Report:
    """Compare every variant of a campaign with its baseline.

    Args:
        data: the campaign, from ``load_campaign``.
        confidence: the interval's coverage (0.95 for 95 %).
        resamples: bootstrap resamples per comparison.
        seed: seeds the resampling; the same data and seed give the same report.
        now: the report's timestamp source (tests pin it).
    """
    rows = tuple(summarize_variant(data, name) for name in data.variants)
    by_name = {row.name: row for row in rows}
    base = data.baseline
    comparisons: list[MetricComparison] = []
    startup: list[StartupComparison] = []
    for name in data.variants:
        if name == base:
            continue
        for load in data.loads:
            for metric in METRICS:
                a = metric.values(data, base, load)
                b = metric.values(data, name, load)
                if a.size == 0 and b.size == 0:
                    continue
                est = estimate(
                    a,
                    b,
                    stat=metric.stat,
                    confidence=confidence,
                    resamples=resamples,
                    rng=seeded_rng(seed, name, load, metric.key),
                )
                comparisons.append(
                    MetricComparison(
                        variant=name,
                        load=load,
                        metric=metric,
                        estimate=est,
                        call=call(est, metric.direction),
                    )
                )
        row, base_row = by_name[name], by_name[base]
        for temperature, a_vals, b_vals in (
            ("cold", _opt(base_row.cold_startup_s), _opt(row.cold_startup_s)),
            ("warm", base_row.warm_startups_s, row.warm_startups_s),
        ):
            if not a_vals or not b_vals:
                continue
            est = estimate(
                np.asarray(a_vals, dtype=np.float64),
                np.asarray(b_vals, dtype=np.float64),
                stat=mean,
                confidence=confidence,
                resamples=resamples,
                rng=seeded_rng(seed, name, "startup", temperature),
            )
            startup.append(
                StartupComparison(
                    variant=name,
                    temperature="cold" if temperature == "cold" else "warm",
                    estimate=est,
                    call=call(est, "lower"),
                )
            )
    stamp = now() if now else datetime.now(UTC).isoformat(timespec="seconds")
    return Report(
        campaign=data.campaign,
        data=data,
        variants=rows,
        comparisons=tuple(comparisons),
        startup=tuple(startup),
        confidence=confidence,
        resamples=resamples,
        seed=seed,
        generated_at=stamp,
    )


def _opt(value: float | None) -> tuple[float, ...]:
    return () if value is None else (value,)
