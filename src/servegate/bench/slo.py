"""Service-level objectives: targets, whether a point met them, attainment and goodput.

    targets = parse_slo("ttft_p99<=500ms,tpot_p99<=50ms")
    evaluate(targets, samples, duration_s=...).met

A target is a metric (``ttft``, ``tpot``, ``itl``, ``e2el``), a statistic (a percentile
``pNN`` or ``mean``) and a bound. A point *meets* a target when that statistic over the
point's requests is within the bound, computed as the summary computes it (vLLM's
definitions, linear-interpolated percentiles, ITL pooled over requests); a failed request
counts as infinitely slow, so failures cannot make a point look fast. Per request, a
request *attains* a target when its own value is within the bound (its TTFT, TPOT, E2EL,
and for ITL its largest gap); a request without the value (one output token has no TPOT
and no gap) attains it, a failed request attains nothing. Goodput is DistServe's: the
requests per second, and their output tokens per second, of the requests that attained
every target, over the point's duration.

`EarlyStop` is the rule under which a capacity probe ends before its last request: only a
*certain* failure stops a probe (see `StopRule`).
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from servegate.errors import UsageError

if TYPE_CHECKING:
    from servegate.bench.sample import RequestSample

METRICS = ("ttft", "tpot", "itl", "e2el")
UNITS_MS = {"us": 0.001, "ms": 1.0, "s": 1000.0}
_TARGET = re.compile(
    r"^(?P<metric>[a-z0-9]+)_(?P<stat>mean|p(?P<pct>\d+(?:\.\d+)?))\s*<=\s*"
    r"(?P<bound>\d+(?:\.\d+)?)\s*(?P<unit>us|ms|s)$"
)
EXAMPLE = '"ttft_p99<=500ms,tpot_p99<=50ms"'


@dataclass(frozen=True, slots=True, kw_only=True)
class Target:
    """One objective: ``metric``'s ``stat`` (``p99``, ``p99.9``, ``mean``) within ``bound_ms``."""

    metric: str
    stat: str
    bound_ms: float

    @property
    def percentile(self) -> float | None:
        """The percentile of a ``pNN`` target; None for ``mean``."""
        return None if self.stat == "mean" else float(self.stat[1:])

    @property
    def text(self) -> str:
        """The target as written on the command line, in milliseconds."""
        return f"{self.metric}_{self.stat}<={self.bound_ms:g}ms"


def parse_slo(text: str, *, where: str = "--slo") -> tuple[Target, ...]:
    """The targets of ``text`` (comma-separated), or a UsageError naming ``where``."""
    targets: list[Target] = []
    for part in (p.strip() for p in text.split(",")):
        targets.append(parse_target(part, where=where))
    seen = [t.metric + "_" + t.stat for t in targets]
    for name in seen:
        if seen.count(name) > 1:
            raise UsageError(f"{where} names {name} twice; give each target once.")
    return tuple(targets)


def parse_target(part: str, *, where: str = "--slo") -> Target:
    """One ``metric_stat<=bound unit`` target, or a UsageError naming ``where``."""
    match = _TARGET.match(part.strip().lower())
    if match is None or match["metric"] not in METRICS:
        raise UsageError(
            f"{where} target {part!r} must read METRIC_STAT<=BOUND with a unit, METRIC one of "
            f"ttft, tpot, itl, e2el and STAT pNN or mean, e.g. {EXAMPLE}."
        )
    pct = match["pct"]
    if pct is not None and not 0 < float(pct) < 100:
        raise UsageError(f"{where} target {part!r}: the percentile must be above 0 and below 100.")
    bound = float(match["bound"]) * UNITS_MS[match["unit"]]
    if not bound > 0:
        raise UsageError(f"{where} target {part!r}: the bound must be above zero.")
    stat = "mean" if pct is None else f"p{float(pct):g}"
    return Target(metric=match["metric"], stat=stat, bound_ms=bound)


def slo_text(targets: Sequence[Target]) -> str:
    """The targets as one ``--slo`` value."""
    return ",".join(t.text for t in targets)


def request_value_ms(sample: RequestSample, metric: str) -> float | None:
    """One request's own value of ``metric`` in ms: inf when it failed, None when it has none.

    ITL per request is its largest gap between content chunks.
    """
    if not sample.ok or not sample.chunks_s:
        return math.inf
    chunks = sample.chunks_s
    if metric == "ttft":
        return chunks[0] * 1000.0
    if metric == "e2el":
        return chunks[-1] * 1000.0
    if metric == "tpot":
        tokens = sample.output_tokens
        return (chunks[-1] - chunks[0]) * 1000.0 / (tokens - 1) if tokens > 1 else None
    gaps = [b - a for a, b in itertools.pairwise(chunks)]
    return max(gaps) * 1000.0 if gaps else None


def _attains(sample: RequestSample, target: Target) -> bool:
    value = request_value_ms(sample, target.metric)
    return value is None or value <= target.bound_ms


def percentile(values: Sequence[float], pct: float) -> float:
    """numpy's default (linear) percentile, where values may be inf (failed requests)."""
    ordered = sorted(values)
    if not ordered:
        return math.nan
    h = (len(ordered) - 1) * pct / 100.0
    lo = math.floor(h)
    hi = min(lo + 1, len(ordered) - 1)
    frac = h - lo
    if frac == 0 or ordered[hi] == ordered[lo]:
        return ordered[lo]
    if math.isinf(ordered[hi]):
        return math.inf
    return ordered[lo] + frac * (ordered[hi] - ordered[lo])


def statistic_ms(samples: Sequence[RequestSample], target: Target) -> float:
    """The target's statistic over the samples, as the summary computes it (ITL pooled),
    a failed request counting as infinitely slow; NaN when there is no value at all."""
    values: list[float] = []
    if target.metric == "itl":
        for s in samples:
            if not s.ok or not s.chunks_s:
                values.append(math.inf)
            else:
                c = s.chunks_s
                values.extend((b - a) * 1000.0 for a, b in itertools.pairwise(c))
    else:
        for s in samples:
            value = request_value_ms(s, target.metric)
            if value is not None:
                values.append(value)
    if not values:
        return math.nan
    pct = target.percentile
    if pct is None:
        return math.fsum(values) / len(values) if all(map(math.isfinite, values)) else math.inf
    return percentile(values, pct)


@dataclass(frozen=True, slots=True, kw_only=True)
class TargetResult:
    """One target at one point: its statistic, whether it met the bound, its attainment."""

    target: Target
    value_ms: float  # inf: beyond every completed request; NaN: no value
    met: bool
    attainment: float | None  # share of requests within the bound; None when stopped early

    def to_json(self) -> dict[str, Any]:
        """The target's result as JSON (an infinite or missing value is null)."""
        return {
            "target": self.target.text,
            "metric": self.target.metric,
            "stat": self.target.stat,
            "bound_ms": self.target.bound_ms,
            "value_ms": self.value_ms if math.isfinite(self.value_ms) else None,
            "met": self.met,
            "attainment": self.attainment,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class SloResult:
    """A point against its SLO: met or not, attainment per target and for all, goodput."""

    targets: tuple[TargetResult, ...]
    met: bool  # every target's statistic within its bound (or attainment, when that decides)
    attainment: float | None  # share of requests that attained every target
    goodput_rps: float | None  # requests/s of the requests that attained every target
    goodput_tok_s: float | None  # their output tokens per second
    requests: int  # requests sent and measured (completed and failed)
    criterion: float | None = None  # the required attainment when it decides `met`
    stopped_early: bool = False  # the probe ended at a certain failure: only `met` is known

    def to_json(self) -> dict[str, Any]:
        """The result as the ``slo`` object of a point's JSON."""
        return {
            "met": self.met,
            "criterion": "percentiles"
            if self.criterion is None
            else f"attainment>={self.criterion:g}",
            "stopped_early": self.stopped_early,
            "requests": self.requests,
            "targets": [t.to_json() for t in self.targets],
            "attainment": self.attainment,
            "goodput": {
                "requests_per_s": self.goodput_rps,
                "output_tokens_per_s": self.goodput_tok_s,
            },
        }


def evaluate(
    targets: Sequence[Target],
    samples: Sequence[RequestSample],
    *,
    duration_s: float,
    criterion: float | None = None,
    stopped_early: bool = False,
) -> SloResult:
    """Evaluate a point's samples against ``targets``.

    ``criterion``: the share of requests that must attain every target for `met` (the
    percentiles decide when None). A point stopped early is not met, and reports no
    attainment or goodput (its requests are a biased part of the planned ones).
    """
    n = len(samples)
    results: list[TargetResult] = []
    for target in targets:
        value = statistic_ms(samples, target)
        attained = sum(1 for s in samples if _attains(s, target)) if not stopped_early else None
        results.append(
            TargetResult(
                target=target,
                value_ms=value,
                met=value <= target.bound_ms,  # NaN (no request) is not met
                attainment=None if attained is None or not n else attained / n,
            )
        )
    if stopped_early:
        return SloResult(
            targets=tuple(results),
            met=False,
            attainment=None,
            goodput_rps=None,
            goodput_tok_s=None,
            requests=n,
            criterion=criterion,
            stopped_early=True,
        )
    good = [s for s in samples if s.ok and all(_attains(s, t) for t in targets)]
    attainment = len(good) / n if n else 0.0
    duration = duration_s if duration_s > 0 else math.inf
    met = all(r.met for r in results) if criterion is None else attainment >= criterion
    return SloResult(
        targets=tuple(results),
        met=met and n > 0,
        attainment=attainment,
        goodput_rps=len(good) / duration,
        goodput_tok_s=sum(s.output_tokens for s in good) / duration,
        requests=n,
        criterion=criterion,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class StopRule:
    """When a probe of ``planned`` requests has certainly failed its SLO.

    A request beyond a bound (a failed one is beyond every bound) is a *violation*.
    Certain failure, for N = ``planned``:

    - ``pNN`` of TTFT, TPOT or E2EL: violations >= N - floor((N - 1) x NN / 100). Then the
      sorted value at the percentile's lower index already exceeds the bound, and the
      interpolated percentile cannot be lower.
    - ``mean``: the values seen so far, summed and divided by N, exceed the bound (values
      are never negative, so the unseen ones cannot bring the mean back).
    - with an attainment criterion A: requests that missed any target > N x (1 - A).
    - ITL targets (pooled gaps, whose count is not known ahead) never stop a probe.

    A pass is never called early: for a high percentile it needs nearly every request. A
    probe spread over several worker processes applies the rule to each worker's own
    counts, which is still certain (one worker's violations are a lower bound of all).
    """

    targets: tuple[Target, ...]
    planned: int
    criterion: float | None = None

    def observe(self, state: StopState, sample: RequestSample) -> bool:
        """Count one request into ``state``; True once failure is certain."""
        missed_any = False
        for i, target in enumerate(self.targets):
            value = request_value_ms(sample, target.metric)
            beyond = value is not None and value > target.bound_ms
            missed_any = missed_any or beyond
            if target.metric == "itl" or self.criterion is not None:
                continue
            if target.percentile is None:
                state.sums[i] = state.sums.get(i, 0.0) + (value or 0.0)
                if state.sums[i] / self.planned > target.bound_ms:
                    state.stopped = True
            elif beyond:
                state.beyond[i] = state.beyond.get(i, 0) + 1
                lower = math.floor((self.planned - 1) * target.percentile / 100.0)
                if state.beyond[i] >= self.planned - lower:
                    state.stopped = True
        if self.criterion is not None and missed_any:
            state.missed += 1
            if state.missed > self.planned * (1.0 - self.criterion):
                state.stopped = True
        return state.stopped


@dataclass(slots=True)
class StopState:
    """A worker's running counts under a `StopRule`."""

    beyond: dict[int, int] = field(default_factory=dict)
    sums: dict[int, float] = field(default_factory=dict)
    missed: int = 0
    stopped: bool = False
