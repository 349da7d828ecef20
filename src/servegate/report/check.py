"""A regression gate: a stored campaign against a stored baseline, metric by metric.

The candidate is a campaign of one database; the baseline is either that campaign's own
baseline variant, or a variant of another campaign, in the same database or another
one. At every load point both measured, each checked metric is compared with the
report's statistics (the hierarchical bootstrap over server starts, repeats and
requests, ``bootstrap.estimate_nested``) and called with the report's rule
(``bootstrap.call``), with the metric's largest tolerated regression as the smallest
change worth calling. A comparison is a **regression** when that call is *worse*: the
whole interval of the ratio lies on the worse side of no change, and the estimated
change is at least the threshold. The startup is compared too (``startup`` and
``startup.PHASE`` thresholds): the whole start (time to READY) and each phase, one value
per server start, cold starts with cold ones and warm with warm, with Student's t on the
log scale (``startup_estimate``). A candidate that failed (did not start, or its
benchmark failed) fails the check whatever its numbers.

    with Store.open("results.db", read_only=True) as store:
        data = load_campaign(store, resolve_campaign(store, "nightly").id)
    result = run_check(data, None, thresholds=DEFAULT_THRESHOLDS)
    result.exit_code          # 0: no regression established, 1: regression or failure
"""

from __future__ import annotations

import math
import platform
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, Literal

import numpy as np

from servegate._version import __version__
from servegate.errors import UsageError
from servegate.report import text
from servegate.report.bootstrap import (
    Call,
    Estimate,
    call,
    estimate_nested,
    mean,
    seeded_rng,
)
from servegate.report.capacity import (
    CapacityRow,
    capacity_call,
    capacity_estimate,
    capacity_rows,
)
from servegate.report.compare import (
    METRICS,
    Metric,
    VariantSummary,
    compare,
    summarize_variant,
    workload_label,
    workload_of,
)
from servegate.report.data import CampaignData, load_sort_key
from servegate.report.quantiles import SideSpread, log_ratio_interval
from servegate.store import AttemptInfo

SCHEMA = "servegate.check/1"

# the largest tolerated regression of each metric checked when none is given
DEFAULT_THRESHOLDS: dict[str, float] = {
    "output_throughput": 0.03,
    "ttft_ms_p99": 0.10,
    "tpot_ms_p99": 0.05,
    "startup": 0.10,
    "capacity": 0.05,
}

# ``--max-regression`` keys of the startup: the whole start (time to READY) and every
# phase; ``startup.PHASE`` sets one phase's threshold (and, without ``startup``, checks
# that phase only)
STARTUP = "startup"
# ``--max-regression capacity=5%``: the capacity under the SLO (find_max), one value per
# start; checked where both sides searched for it
CAPACITY = "capacity"
_PHASE_NAME = re.compile(r"^[A-Za-z0-9_]+$")
# a phase this short on both sides took no time worth comparing: its duration is the
# resolution of the log lines that bound it
MIN_PHASE_MS = 10.0

Result = Literal["regression", "ok", "no interval", "no data", "not estimable", "needs more starts"]
# results of a comparison that has data but no call: listed; they fail only with --strict
UNCALLED = ("not estimable", "needs more starts")


def short_name(key: str) -> str:
    """The name ``--max-regression`` takes for a metric: ``ttft_p99`` for ``ttft_ms_p99``."""
    return key.replace("_ms_", "_")


def _metric_by_name(name: str) -> Metric | None:
    for m in METRICS:
        if name in (m.key, short_name(m.key)):
            return m
    return None


def known_metric_names() -> str:
    """The metric names ``--max-regression`` takes, for an error message."""
    names = [*(short_name(m.key) for m in METRICS), STARTUP, f"{STARTUP}.PHASE", CAPACITY]
    return ", ".join(names)


def _key_of(name: str) -> str | None:
    """The threshold key of a ``--max-regression`` name; None when unknown."""
    m = _metric_by_name(name)
    if m is not None:
        return m.key
    if name in (STARTUP, CAPACITY):
        return name
    prefix, dot, phase = name.partition(".")
    if prefix == STARTUP and dot and _PHASE_NAME.match(phase):
        return f"{STARTUP}.{phase}"
    return None


def parse_thresholds(specs: Sequence[str]) -> dict[str, float]:
    """``output_throughput=3%,ttft_p99=10%`` as {metric key: fraction}; UsageError if bad.

    Several specs (the option given more than once) are joined; a metric may be named
    once. Values are percentages from 0 to 100 (``3``, ``3%`` and ``3 %`` are 0.03).
    ``startup`` (the whole start and every phase) and ``startup.PHASE`` (one phase's
    own threshold) are keys too.
    """
    out: dict[str, float] = {}
    for spec in specs:
        for part in spec.split(","):
            name, sep, value = part.partition("=")
            name = name.strip()
            if not sep or not name or not value.strip():
                raise UsageError(
                    f"--max-regression {part.strip()!r}: write METRIC=PERCENT pairs separated "
                    "by commas, e.g. --max-regression output_throughput=3%,ttft_p99=10%."
                )
            key = _key_of(name)
            if key is None:
                raise UsageError(
                    f"--max-regression: unknown metric {name!r}; use one of {known_metric_names()}."
                )
            if key in out:
                raise UsageError(
                    f"--max-regression names {short_name(key)} twice; give it one threshold."
                )
            try:
                number = float(value.strip().removesuffix("%").strip())
            except ValueError:
                number = math.nan
            if not 0.0 <= number < 100.0:
                raise UsageError(
                    f"--max-regression {name}={value.strip()}: give a percentage from 0 to "
                    f"100, e.g. {name}=3%."
                )
            out[key] = number / 100.0
    return out


@dataclass(frozen=True, slots=True, kw_only=True)
class Source:
    """Where one side of the check comes from: a campaign of a database."""

    db: str
    campaign: str
    status: str  # the campaign's stored status: done, interrupted, running, failed

    def to_json(self) -> dict[str, Any]:
        """This side as a JSON object."""
        return {"db": self.db, "campaign": self.campaign, "status": self.status}


@dataclass(frozen=True, slots=True, kw_only=True)
class MetricCheck:
    """One metric at one load point: the candidate against its baseline variant."""

    load: str
    metric: Metric
    threshold: float  # the largest tolerated regression, as a fraction
    estimate: Estimate | None
    call: Call  # the report's call with ``threshold`` as the smallest change called

    @property
    def result(self) -> Result:
        """``regression`` (established), ``ok``, ``no interval`` (one run), ``no data``."""
        if self.call == "worse":
            return "regression"
        if self.call == "1 run, no interval":
            return "no interval"
        if self.call in ("no data", "not estimable", "needs more starts"):
            return self.call
        return "ok"

    def to_json(self) -> dict[str, Any]:
        """This comparison as a JSON object (changes as fractions: -0.05 is -5 %)."""
        est = self.estimate

        def change(value: float | None) -> float | None:
            return None if value is None or not math.isfinite(value) else _num(value - 1.0)

        return {
            "load": self.load,
            "metric": self.metric.key,
            "label": self.metric.label,
            "unit": self.metric.unit,
            "better": self.metric.direction,
            "max_regression": self.threshold,
            "baseline": None if est is None else _num(est.baseline),
            "candidate": None if est is None else _num(est.variant),
            "change": None if est is None else change(est.ratio),
            "change_low": None if est is None else change(est.ratio_low),
            "change_high": None if est is None else change(est.ratio_high),
            "starts_baseline": None if est is None else est.starts_baseline,
            "starts_candidate": None if est is None else est.starts_variant,
            "n_baseline": None if est is None else est.n_baseline,
            "n_candidate": None if est is None else est.n_variant,
            "call": self.call,
            "result": self.result,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class VariantCheck:
    """A candidate variant: failed with its reason, or its metric comparisons."""

    variant: str
    reference: str  # the baseline variant it is compared with
    status: str  # the report's status words: ok, CRASH (oom), FAILED, interrupted, ...
    failure: str | None  # why it failed: it then fails the check whatever its numbers
    checks: tuple[MetricCheck, ...] = ()
    unmatched_loads: tuple[str, ...] = ()  # measured by one side only: not compared
    strict: bool = False  # a comparison that could not be called fails the check
    interval_confidence: float | None = None  # each interval's (Bonferroni over checks)

    @property
    def regressions(self) -> tuple[MetricCheck, ...]:
        """The comparisons that established a regression."""
        return tuple(c for c in self.checks if c.result == "regression")

    @property
    def uncalled(self) -> tuple[MetricCheck, ...]:
        """Comparisons with data that could not be called (not estimable, one start); a
        cold start with too few cold starts is not one of them: a campaign starts each
        server configuration cold once, so ``--strict`` would fail every campaign."""
        return tuple(c for c in self.checks if c.result in UNCALLED and not one_cold_start(c))

    @property
    def passed(self) -> bool:
        """Neither failed nor regressed (with ``strict``: and every comparison called)."""
        if self.strict and self.uncalled:
            return False
        return self.failure is None and not self.regressions

    def to_json(self) -> dict[str, Any]:
        """This variant's check as a JSON object."""
        return {
            "variant": self.variant,
            "baseline_variant": self.reference,
            "status": self.status,
            "failed": self.failure is not None,
            "reason": self.failure,
            "result": "pass" if self.passed else "fail",
            "checks": [c.to_json() for c in self.checks],
            "unmatched_loads": list(self.unmatched_loads),
            "interval_confidence": self.interval_confidence,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class Skipped:
    """A candidate variant left out of the check, and why."""

    variant: str
    why: str


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckResult:
    """The whole check: both sides, the thresholds, every variant's comparisons."""

    candidate: Source
    baseline: Source
    thresholds: dict[str, float]
    confidence: float
    resamples: int
    seed: int
    variants: tuple[VariantCheck, ...]
    skipped: tuple[Skipped, ...]
    generated_at: str

    @property
    def passed(self) -> bool:
        """No candidate failed and no regression was established."""
        return all(v.passed for v in self.variants)

    @property
    def exit_code(self) -> int:
        """0 when it passed, 1 when a candidate failed or a regression was established."""
        return 0 if self.passed else 1

    @property
    def unestablished(self) -> tuple[tuple[str, MetricCheck], ...]:
        """(variant, comparison) pairs without an interval: nothing could be established."""
        return tuple(
            (v.variant, c)
            for v in self.variants
            for c in v.checks
            if c.result in ("no interval", *UNCALLED)
        )

    def to_json(self) -> dict[str, Any]:
        """The ``servegate.check/1`` object."""
        return {
            "schema": SCHEMA,
            "tool": {"name": "servegate", "version": __version__},
            "python": sys.version.split()[0],
            "platform": platform.platform(),
            "generated_at": self.generated_at,
            "result": "pass" if self.passed else "fail",
            "exit_code": self.exit_code,
            "candidate": self.candidate.to_json(),
            "baseline": self.baseline.to_json(),
            "method": {
                "confidence": self.confidence,
                "resamples": self.resamples,
                "seed": self.seed,
                "rule": RULE,
            },
            "max_regression": {key: value for key, value in self.thresholds.items()},
            "variants": [v.to_json() for v in self.variants],
            "skipped": [{"variant": s.variant, "why": s.why} for s in self.skipped],
        }


RULE = (
    "a regression is established when the whole confidence interval of the ratio "
    "candidate / baseline lies on the worse side of no change and the estimated change "
    "is at least the metric's --max-regression"
)


def _num(value: float | None) -> float | None:
    if value is None or not math.isfinite(value):
        return None
    return round(float(value), 6)


# --- who is compared with whom ------------------------------------------------------


def _failure(row: VariantSummary) -> str:
    """Why a failed variant failed, in the report's words."""
    if row.status in ("crash", "timeout"):
        return text.start_failure(row)
    return f"{text.RUN_STATUS.get(row.status, row.status)}: {row.reason or 'no reason recorded'}"


def _where(data: CampaignData) -> str:
    return f"campaign {data.campaign.name!r} in {data.db_path}"


def _unknown_variant(name: str, data: CampaignData) -> UsageError:
    return UsageError(
        f"no variant {name!r} in {_where(data)}; its variants are {', '.join(data.variants)}."
    )


def _check_baseline(row: VariantSummary, data: CampaignData) -> str | None:
    """Why the baseline variant cannot serve as one; None when it can."""
    if row.failed:
        return f"the baseline {row.name!r} of {_where(data)} failed ({_failure(row)})"
    if row.status == "not run" or not row.loads:
        return f"the baseline {row.name!r} of {_where(data)} has no measurements"
    return None


def _workloads(data: CampaignData, variant: str) -> set[tuple[Any, ...]]:
    found = {workload_of(p) for p in data.points if p.variant == variant}
    return {w for w in found if w is not None}


def _describe(workloads: set[tuple[Any, ...]]) -> str:
    return "; ".join(sorted(str(workload_label(w)) for w in workloads))


def run_check(
    candidate: CampaignData,
    baseline: CampaignData | None,
    *,
    thresholds: Mapping[str, float],
    variants: Sequence[str] | None = None,
    baseline_variant: str | None = None,
    confidence: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
    now: str | None = None,
    strict: bool = False,
) -> CheckResult:
    """Check the candidate campaign's variants against their baseline variants.

    Args:
        candidate: the campaign checked, from ``load_campaign``.
        baseline: the campaign holding the baseline; None: the candidate campaign itself.
        thresholds: metric key -> largest tolerated regression (0.03: 3 %); the metrics
            checked.
        variants: the candidate variants to check; None: every one that can be.
        baseline_variant: the variant every candidate is compared with. None: the
            campaign's baseline (and the report's workload references) when ``baseline``
            is None, else the variant of the same name in ``baseline``.
        confidence, resamples, seed: the bootstrap's, as in ``servegate report``;
            ``confidence`` holds for each candidate as a whole (each interval is wider
            when several metrics and loads are checked: ``per_comparison_confidence``).
        now: the timestamp written in the result (tests pin it).
        strict: a comparison that cannot be called (a percentile from too few requests
            per start, one server start a side) fails the check instead of being listed.

    Raises UsageError (exit 2) when a comparison is impossible: an unknown or unmeasured
    variant, a baseline that failed, another workload, no load point in common, or
    nothing at all to check.
    """
    metrics = [m for m in METRICS if m.key in thresholds]
    plan = _plan(candidate, baseline, variants, baseline_variant, seed=seed)
    checked: list[VariantCheck] = []
    skipped: list[Skipped] = []
    for name in plan.names:
        outcome = _check_variant(
            plan,
            name,
            metrics=metrics,
            thresholds=thresholds,
            confidence=confidence,
            resamples=resamples,
            seed=seed,
        )
        if isinstance(outcome, Skipped):
            skipped.append(outcome)
        else:
            checked.append(replace(outcome, strict=strict))
    if not checked:
        raise _nothing_to_check(candidate, skipped)
    base = plan.base
    return CheckResult(
        candidate=Source(
            db=candidate.db_path, campaign=candidate.campaign.name, status=candidate.campaign.status
        ),
        baseline=Source(db=base.db_path, campaign=base.campaign.name, status=base.campaign.status),
        thresholds={
            **{m.key: float(thresholds[m.key]) for m in metrics},
            **{k: float(v) for k, v in thresholds.items() if k.split(".")[0] == STARTUP},
            **{
                k: float(v)
                for k, v in thresholds.items()
                if k == CAPACITY
                and any(c.metric.key == CAPACITY for v_ in checked for c in v_.checks)
            },
        },
        confidence=confidence,
        resamples=resamples,
        seed=seed,
        variants=tuple(checked),
        skipped=tuple(skipped),
        generated_at=now or datetime.now(UTC).isoformat(timespec="seconds"),
    )


def _check_variant(
    plan: _Plan,
    name: str,
    *,
    metrics: Sequence[Metric],
    thresholds: Mapping[str, float],
    confidence: float,
    resamples: int,
    seed: int,
) -> VariantCheck | Skipped:
    """One candidate variant: failed (never passing, with or without a counterpart),
    skipped with the reason, or compared with its reference."""
    row = plan.rows[name]
    reference = plan.reference(name)
    if row.failed:
        return VariantCheck(
            variant=name, reference=reference, status=text.status(row), failure=_failure(row)
        )
    why = _why_not_checked(plan, name, reference)
    if why is not None:
        return Skipped(variant=name, why=why)
    return _compare_pair(
        plan.base,
        reference,
        plan.candidate,
        name,
        row=row,
        metrics=metrics,
        thresholds=thresholds,
        confidence=confidence,
        resamples=resamples,
        seed=seed,
    )


def _nothing_to_check(candidate: CampaignData, skipped: Sequence[Skipped]) -> UsageError:
    """The error of a check with no variant to check, with why each was skipped."""
    reasons = "; ".join(f"{s.variant}: {s.why}" for s in skipped)
    reasons = reasons or "no variant besides the baseline"
    return UsageError(
        f"nothing to check in {_where(candidate)} ({reasons}); name the variants with "
        "--variant and their baseline with --baseline-variant."
    )


@dataclass(kw_only=True)
class _Plan:
    """Which candidate variants a check compares, with what, read once."""

    candidate: CampaignData
    base: CampaignData  # the campaign holding the baseline variants
    names: list[str]  # the candidate variants to check, in order
    rows: dict[str, VariantSummary]  # each one's status, failure and loads
    explicit: bool  # named with --variant: a variant that cannot be checked is an error
    pairwise: bool  # each against one named variant; else the report's own references
    baseline_variant: str | None
    ref_of: dict[str, str | None]  # the report's reference of each variant (not pairwise)
    why_not: dict[str, str | None]  # ... or why it has none
    base_rows: dict[str, VariantSummary]  # baseline variants summarized so far

    def reference(self, name: str) -> str:
        """The variant ``name`` is compared with."""
        if self.pairwise:
            return self.baseline_variant or name
        return self.ref_of.get(name) or self.candidate.baseline


def _plan(
    candidate: CampaignData,
    baseline: CampaignData | None,
    variants: Sequence[str] | None,
    baseline_variant: str | None,
    *,
    seed: int,
) -> _Plan:
    """The variants to check and their references; UsageError for an unknown variant or a
    baseline of the check itself that cannot serve."""
    same = baseline is None
    base = candidate if baseline is None else baseline
    if baseline_variant is not None and baseline_variant not in base.variants:
        raise _unknown_variant(baseline_variant, base)
    names = list(variants) if variants is not None else list(candidate.variants)
    for name in names:
        if name not in candidate.variants:
            raise _unknown_variant(name, candidate)
    plan = _Plan(
        candidate=candidate,
        base=base,
        names=names,
        rows={},
        explicit=variants is not None,
        pairwise=not (same and baseline_variant is None),
        baseline_variant=baseline_variant,
        ref_of={},
        why_not={},
        base_rows={},
    )
    own_base: str | None  # a variant of the candidate campaign that is the baseline
    if not plan.pairwise:
        # the report's own rows: status, reason and the reference of each variant
        rows = {r.name: r for r in compare(candidate, metrics=(), seed=seed).variants}
        plan.rows = {name: rows[name] for name in names}
        plan.ref_of = {name: rows[name].reference for name in names}
        plan.why_not = {name: rows[name].not_compared for name in names}
        own_base = candidate.baseline
    else:
        plan.rows = {name: summarize_variant(candidate, name) for name in names}
        own_base = baseline_variant if same else None
    if own_base is not None:
        if plan.explicit and own_base in names:
            raise UsageError(
                f"{own_base!r} is the baseline of the check itself; name other variants "
                "with --variant, or give another baseline with --baseline-variant, "
                "--baseline-campaign or --baseline-db."
            )
        plan.names = [n for n in names if n != own_base]
        problem = _check_baseline(summarize_variant(base, own_base), base)
        if problem is not None:
            raise UsageError(f"{problem}; choose a measured baseline with --baseline-variant.")
    return plan


def _why_not_checked(plan: _Plan, name: str, reference: str) -> str | None:
    """Why a measured candidate variant is skipped (None: it is checked); UsageError when
    it was named with --variant, or when the comparison is impossible."""
    base, candidate = plan.base, plan.candidate
    if plan.pairwise and reference not in base.variants:
        why = f"no variant {name!r} in {_where(base)}"
        if plan.explicit:
            raise UsageError(
                f"{why}; its variants are {', '.join(base.variants)}: compare with "
                "one of them with --baseline-variant."
            )
        return why
    row = plan.rows[name]
    if row.status == "not run" or not row.loads:
        raise UsageError(
            f"variant {name!r} of {_where(candidate)} has no measurements; finish the "
            "run (servegate run FILE --resume) or leave it out with --variant."
        )
    if not plan.pairwise:
        if plan.ref_of.get(name) is not None:
            return None
        why = plan.why_not.get(name) or "not compared"
        if plan.explicit:
            raise UsageError(f"variant {name!r} cannot be checked: {why}.")
        return why
    if reference not in plan.base_rows:
        plan.base_rows[reference] = summarize_variant(base, reference)
    problem = _check_baseline(plan.base_rows[reference], base)
    if problem is not None:
        # never a pass: without its baseline, nothing about this variant is established
        raise UsageError(
            f"{problem}, so {name!r} cannot be checked; measure the baseline again, compare "
            f"with another variant with --baseline-variant, or leave {name!r} out with --variant."
        )
    mine, theirs = _workloads(candidate, name), _workloads(base, reference)
    if mine and theirs and mine != theirs:
        raise UsageError(
            f"{name!r} of {_where(candidate)} was measured with {_describe(mine)}, "
            f"its baseline {reference!r} of {_where(base)} with "
            f"{_describe(theirs)}; a check compares runs of the same workload, so "
            "make [bench] input_len, output_len, dataset and api the same."
        )
    return None


def per_comparison_confidence(confidence: float, comparisons: int) -> float:
    """Each interval's confidence so that the whole check keeps ``confidence`` (Bonferroni).

    A check calls a regression when any of its comparisons (metrics x loads) does: with
    ``m`` of them at 95 % each, identical servers would fail about ``m`` times in 20.
    Each interval is therefore taken at ``1 - (1 - confidence) / m``, so that the chance
    of any false regression for a candidate stays under ``1 - confidence``.
    """
    return 1.0 - (1.0 - confidence) / max(1, comparisons)


def _compare_pair(
    base_data: CampaignData,
    reference: str,
    data: CampaignData,
    name: str,
    *,
    row: VariantSummary,
    metrics: Sequence[Metric],
    thresholds: Mapping[str, float],
    confidence: float,
    resamples: int,
    seed: int,
) -> VariantCheck:
    """Every checked metric at every load both measured, with the report's statistics."""
    mine = {p.load for p in data.points if p.variant == name}
    theirs = {p.load for p in base_data.points if p.variant == reference}
    capacity = _capacity_pair(base_data, reference, data, name, thresholds)
    if capacity is not None:
        # the probes of a search are its own loads, not fixed load points: the answer
        # checked is the capacity, with the startup
        mine = theirs = set()
    common = sorted(mine & theirs, key=load_sort_key)
    if not common and capacity is None:
        raise UsageError(
            f"{name!r} of {_where(data)} (loads {', '.join(sorted(mine, key=load_sort_key))}) "
            f"and its baseline {reference!r} of {_where(base_data)} (loads "
            f"{', '.join(sorted(theirs, key=load_sort_key))}) have no load point in common; "
            "measure the same [bench] concurrency or rate."
        )
    checks = []
    pairs = [(load, m) for load in common for m in metrics]
    startup = _startup_pairs(base_data, reference, data, name, thresholds)
    # a startup comparison with one start of its temperature on a side is never called,
    # so it cannot be a false regression: only the callable ones share the confidence
    callable_startups = sum(1 for s in startup if min(len(s.a), len(s.b)) >= 2)
    callable_capacity = int(capacity is not None and capacity.callable)
    each = per_comparison_confidence(confidence, len(pairs) + callable_startups + callable_capacity)
    for load, m in pairs:
        a = m.nested(base_data, reference, load)
        b = m.nested(data, name, load)
        if a.size == 0 and b.size == 0:
            continue
        # the report's generator keys: with one comparison the interval is the report's
        est = estimate_nested(
            a,
            b,
            stat=m.stat,
            confidence=each,
            resamples=resamples,
            rng=seeded_rng(seed, name, load, m.key),
        )
        threshold = float(thresholds[m.key])
        checks.append(
            MetricCheck(
                load=load,
                metric=m,
                threshold=threshold,
                estimate=est,
                call=call(est, m.direction, threshold),
            )
        )
    for pair in startup:
        est = startup_estimate(pair.a, pair.b, confidence=each)
        checks.append(
            MetricCheck(
                load=f"{pair.temperature} start",
                metric=pair.metric,
                threshold=pair.threshold,
                estimate=est,
                call=_startup_call(est, pair.threshold),
            )
        )
    if capacity is not None:
        checks.append(capacity.check(confidence=each, resamples=resamples, seed=seed))
    return VariantCheck(
        variant=name,
        reference=reference,
        status=text.status(row),
        failure=None,
        checks=tuple(checks),
        unmatched_loads=tuple(sorted(mine ^ theirs, key=load_sort_key)),
        interval_confidence=each,
    )


# --- capacity: one value per start, as the report compares it ---------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class _CapacityPair:
    """The capacity comparison: each side's capacities, one per start."""

    base: CapacityRow
    row: CapacityRow
    threshold: float

    @property
    def callable(self) -> bool:
        """Two starts or more a side: an interval over starts, so a call."""
        return min(len(self.base.starts), len(self.row.starts)) >= 2

    def check(self, *, confidence: float, resamples: int, seed: int) -> MetricCheck:
        """The comparison as a row of the check: a confident drop of at least the
        threshold is a regression (the report's rule, higher is better)."""
        est, bound = capacity_estimate(
            self.base,
            self.row,
            confidence=confidence,
            resamples=resamples,
            rng=seeded_rng(seed, self.row.variant, "capacity"),
        )
        verdict = capacity_call(est, bound, self.threshold)
        if est is not None and est.refused is None and not self.callable:
            verdict = "needs more starts"
        return MetricCheck(
            load=f"{self.row.over} at {self.row.slo}",
            metric=_capacity_metric(self.row.over),
            threshold=self.threshold,
            estimate=est,
            # a bound that cannot be called lists as not estimable (never a regression)
            call=verdict if verdict in _CALLS else "not estimable",  # type: ignore[arg-type]
        )


_CALLS = ("better", "worse", "no meaningful difference", "1 run, no interval", "no data",
          "not estimable", "needs more starts")  # fmt: skip


def _capacity_metric(over: str) -> Metric:
    """The capacity as a metric of the check's rows (higher is better)."""
    return Metric(
        key=CAPACITY,
        label=f"capacity ({over})",
        unit="requests/s" if over == "rate" else "requests in flight",
        direction="higher",
        over="repeats",  # one value per start, as the startup's
        stat=mean,
        point_values=lambda point, samples: np.empty(0, dtype=np.float64),
    )


def _capacity_pair(
    base_data: CampaignData,
    reference: str,
    data: CampaignData,
    name: str,
    thresholds: Mapping[str, float],
) -> _CapacityPair | None:
    """The capacity comparison when both sides searched for one (and ``capacity`` is
    checked), else None."""
    if CAPACITY not in thresholds:
        return None
    theirs = next((r for r in capacity_rows(base_data.capacities) if r.variant == reference), None)
    mine = next((r for r in capacity_rows(data.capacities) if r.variant == name), None)
    if theirs is None or mine is None or not theirs.starts or not mine.starts:
        return None
    if (theirs.over, theirs.slo) != (mine.over, mine.slo):
        raise UsageError(
            f"{name!r} searched for its capacity ({mine.over}) at {mine.slo} and its baseline "
            f"{reference!r} ({theirs.over}) at {theirs.slo}; search both the same way "
            "(find_max and [slo])."
        )
    return _CapacityPair(base=theirs, row=mine, threshold=float(thresholds[CAPACITY]))


# --- startup: the whole start and each phase, cold with cold and warm with warm --------


@dataclass(frozen=True, slots=True, kw_only=True)
class _StartupPair:
    """One startup comparison: one value per server start of that temperature a side."""

    temperature: Literal["cold", "warm"]
    metric: Metric
    threshold: float
    a: tuple[float, ...]  # the baseline's starts
    b: tuple[float, ...]  # the candidate's starts


def _startup_metric(phase: str | None) -> Metric:
    """A startup quantity as a metric of the check's rows (lower is better, seconds)."""
    return Metric(
        key=STARTUP if phase is None else f"{STARTUP}.{phase}",
        label="time to READY" if phase is None else f"phase {phase}",
        unit="ms",
        direction="lower",
        over="repeats",
        stat=mean,
        point_values=lambda point, samples: np.empty(0, dtype=np.float64),
    )


def temperature(attempt: AttemptInfo) -> Literal["cold", "warm"]:
    """Cold or warm: the start's startup record when it decided, else the store's flag
    (the first start of its server configuration in the campaign is the cold one)."""
    record = (attempt.verdict or {}).get("startup")
    cold = record.get("cold") if isinstance(record, Mapping) else None
    if not isinstance(cold, bool):
        cold = attempt.cold
    return "cold" if cold else "warm"


def startup_values(data: CampaignData, server_of: str) -> dict[tuple[str, str | None], list[float]]:
    """(temperature, phase; None: the whole start) -> milliseconds, one value per start
    that came up READY, of the server ``server_of``'s starts."""
    out: dict[tuple[str, str | None], list[float]] = {}
    for attempt in data.attempts_of(server_of):
        if attempt.startup_s is None:
            continue
        temp = temperature(attempt)
        out.setdefault((temp, None), []).append(attempt.startup_s * 1000.0)
        spans: dict[str, float] = {}
        for phase in attempt.phases:
            if phase.end_s is not None:
                spans[phase.name] = spans.get(phase.name, 0.0) + max(
                    0.0, phase.end_s - phase.start_s
                )
        for phase_name, seconds in spans.items():
            out.setdefault((temp, phase_name), []).append(seconds * 1000.0)
    return out


def _startup_pairs(
    base_data: CampaignData,
    reference: str,
    data: CampaignData,
    name: str,
    thresholds: Mapping[str, float],
) -> list[_StartupPair]:
    """The startup comparisons the thresholds ask for, where both sides have starts of
    that temperature: the whole start (``startup``) and each phase (``startup`` or its
    own ``startup.PHASE``); none when both sides are the same server's starts."""
    every = thresholds.get(STARTUP)
    phases_named = {k.split(".", 1)[1] for k in thresholds if k.startswith(f"{STARTUP}.")}
    if every is None and not phases_named:
        return []
    ours = summarize_variant(data, name).shared_server_of or name
    theirs = summarize_variant(base_data, reference).shared_server_of or reference
    if data is base_data and ours == theirs:
        return []  # the same starts on both sides: nothing to compare
    a_all, b_all = startup_values(base_data, theirs), startup_values(data, ours)
    out = []
    for temp in ("cold", "warm"):
        keys = [k for k in a_all if k[0] == temp and k in b_all]
        keys.sort(key=lambda k: k[1] is not None)  # the whole start first, then in order
        for key in keys:
            phase = key[1]
            if phase is None:
                threshold = every
            else:
                threshold = thresholds.get(f"{STARTUP}.{phase}", every)
                a, b = a_all[key], b_all[key]
                if max(a) < MIN_PHASE_MS and max(b) < MIN_PHASE_MS:
                    continue  # took no time on either side
            if threshold is None:
                continue
            out.append(
                _StartupPair(
                    temperature="cold" if temp == "cold" else "warm",
                    metric=_startup_metric(phase),
                    threshold=float(threshold),
                    a=tuple(a_all[key]),
                    b=tuple(b_all[key]),
                )
            )
    return out


def startup_estimate(
    a: Sequence[float], b: Sequence[float], *, confidence: float
) -> Estimate | None:
    """The ratio of the candidate's startup (``b``, one value per start) over the
    baseline's (``a``), each side's the geometric mean of its starts, with Student's t
    interval on the log scale (``quantiles.log_ratio_interval``: Welch's degrees of
    freedom, Student's pooled ones at two starts a side); no interval with fewer than two
    starts a side, refused for a duration of zero."""
    if not a or not b:
        return None
    xa, xb = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    single = Estimate(
        baseline=float(xa.mean()),
        variant=float(xb.mean()),
        ratio=float(xb.mean() / xa.mean()) if xa.mean() > 0 else math.nan,
        difference=float(xb.mean() - xa.mean()),
        ratio_low=None,
        ratio_high=None,
        difference_low=None,
        difference_high=None,
        n_baseline=xa.size,
        n_variant=xb.size,
        starts_baseline=xa.size,
        starts_variant=xb.size,
    )
    if xa.size < 2 or xb.size < 2:  # one start a side: more starts, whatever its value
        return single
    if min(xa.min(), xb.min()) <= 0.0:
        return replace(single, refused="a duration of zero has no ratio")
    sides = []
    for x in (xa, xb):
        logs = np.log(x)
        sides.append(
            SideSpread(
                log_point=float(logs.mean()),
                variance=float(np.var(logs, ddof=1)) / x.size,
                df=float(x.size - 1),
                starts=int(x.size),
            )
        )
    low, high, df = log_ratio_interval(sides[0], sides[1], confidence)
    pa, pb = math.exp(sides[0].log_point), math.exp(sides[1].log_point)
    return replace(
        single,
        baseline=pa,
        variant=pb,
        ratio=pb / pa,
        difference=pb - pa,
        ratio_low=math.exp(low),
        ratio_high=math.exp(high),
        difference_low=pa * (math.exp(low) - 1.0),
        difference_high=pa * (math.exp(high) - 1.0),
        df=df if math.isfinite(df) else None,
    )


def _startup_call(est: Estimate | None, threshold: float) -> Call:
    """The report's call of a startup comparison; fewer than two starts of the
    temperature on a side: ``needs more starts``."""
    if est is not None and est.refused is None and not est.has_interval:
        return "needs more starts"
    return call(est, "lower", threshold)


# --- what a renderer says (report/console.py, markdown.py, export.py render it) ------


def is_startup(check: MetricCheck) -> bool:
    """Whether the comparison is of the startup (the whole start or a phase)."""
    return check.metric.key.split(".")[0] == STARTUP


def one_cold_start(check: MetricCheck) -> bool:
    """A cold-start comparison without enough cold starts: listed, never failed, even
    under ``--strict`` (one cold start per server configuration is the campaign's design)."""
    return is_startup(check) and check.load == "cold start" and check.result == "needs more starts"


def _limit(check: MetricCheck) -> str:
    """The tolerated change in the metric's worse direction: ``-3 %`` or ``+10 %``."""
    sign = "-" if check.metric.direction == "higher" else "+"
    return f"{sign}{check.threshold * 100:g} %"


def _result_words(check: MetricCheck) -> str:
    return {
        "regression": "REGRESSION",
        "ok": "ok",
        "no interval": "ok (1 run, no interval)",
        "no data": "no data",
        "not estimable": "not estimable (too few requests per start)",
        "needs more starts": "not called (needs more starts)",
    }[check.result]


def _side(source: Source, variant: str | None = None) -> str:
    name = source.campaign if variant is None else f"{source.campaign}/{variant}"
    return f"{name} ({source.db})"


def headline(result: CheckResult) -> str:
    """One line: what was checked against what, and the outcome."""
    refs = sorted({v.reference for v in result.variants})
    base = _side(result.baseline, refs[0] if len(refs) == 1 else None)
    outcome = "FAIL" if not result.passed else "pass"
    return (
        f"servegate check {outcome}: {_side(result.candidate)} against {base}, "
        f"{result.confidence * 100:g} % intervals"
    )


def summary_lines(result: CheckResult) -> list[str]:
    """The closing lines: each failure and regression, or why the check passed."""
    lines = []
    for v in result.variants:
        if v.failure is not None:
            lines.append(f"{v.variant}: failed, {v.failure}")
        for c in v.regressions:
            lines.append(
                f"{v.variant}: {c.metric.label} regressed {text.delta(c.estimate)} at "
                f"{c.load} vs {v.reference} (more than the {c.threshold * 100:g} % allowed)"
            )
        if v.unmatched_loads:
            lines.append(
                f"{v.variant}: not compared at {', '.join(v.unmatched_loads)} "
                f"(measured by one side only)"
            )
    for s in result.skipped:
        lines.append(f"{s.variant}: not checked, {s.why}")
    counts: dict[str, int] = {}
    for _, c in result.unestablished:
        said = (
            "cold startup"
            if one_cold_start(c)
            else "startup"
            if is_startup(c) and c.result == "needs more starts"
            else c.result
        )
        counts[said] = counts.get(said, 0) + 1
    why = {
        "cold startup": "are cold starts, one per server configuration in a campaign (its "
        "first start)",
        "startup": "are startups with fewer than 2 starts of that temperature on a side "
        "(a server configuration's first start in the campaign is its cold one; restarts "
        "= 3 gives 2 warm starts)",
        "no interval": "rest on one run on a side (measure repeats = 2 or more)",
        "needs more starts": "rest on one server start on a side (set restarts = 2 or more)",
        "not estimable": "are percentiles from too few requests per start (measure more "
        "requests per point)",
    }
    for result_name, count in counts.items():
        strict = result_name in (*UNCALLED, "startup") and any(v.strict for v in result.variants)
        lines.append(
            f"{count} comparison(s) {why[result_name]}: no interval, so no regression can "
            + ("be established there; --strict fails them." if strict else "be established there.")
        )
    if result.passed:
        lines.append("no regression established")
    else:
        failed = sum(1 for v in result.variants if v.failure is not None)
        regressions = sum(len(v.regressions) for v in result.variants)
        uncalled = sum(len(v.uncalled) for v in result.variants if v.strict)
        tail = f", {uncalled} not called (--strict)" if uncalled else ""
        lines.append(
            f"FAIL: {regressions} regression(s) established, {failed} variant(s) failed{tail}"
        )
    return lines


def rows(result: CheckResult, *, reasons: bool) -> list[list[str]]:
    """The table's rows; a failed variant's reason in its row when ``reasons``."""
    rows = []
    for v in result.variants:
        if v.failure is not None:
            said = v.failure if reasons else "see below"
            rows.append([v.variant, "–", v.status, "–", "–", said, "–", "FAILED"])
            continue
        for c in v.checks:
            est = c.estimate
            rows.append(
                [
                    v.variant,
                    c.load,
                    f"{c.metric.label} ({c.metric.unit})",
                    text.number(None if est is None else est.baseline),
                    text.number(None if est is None else est.variant),
                    text.delta(est),
                    _limit(c),
                    _result_words(c),
                ]
            )
    return rows


HEADER = [
    "variant",
    "load",
    "metric",
    "baseline",
    "candidate",
    "change [interval]",
    "max",
    "result",
]
