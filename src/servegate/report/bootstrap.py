"""Bootstrap confidence intervals for the ratio and difference of two samples, and the call.

Whether a variant is faster than the baseline is a question about noise: two starts of
the same server differ by a few percent, sometimes by a whole performance regime.
Resampling each side with replacement (starts, then repeats, then requests: see
``hierarchy``) and looking at where the middle 95 % of the resampled ratios fall
answers it without assuming a distribution (percentile bootstrap; Efron & Tibshirani,
ch. 13), calibrated for few starts. A difference is then called only when the interval
excludes no change and the estimate is at least ``min_effect`` (1 % by default): a
+0.1 % change that is real is still not "better". Vectorised with numpy and seeded, so
a report is the same every time it is rendered.
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np
import numpy.typing as npt

from servegate.report.hierarchy import (
    Nested,
    bootstrap_side,
    flat,
    nested,
    scaled_interval,
    weighted_statistic,
    widening,
)
from servegate.report.quantiles import log_ratio_interval, side_spread

FloatArray = npt.NDArray[np.float64]
Direction = Literal["higher", "lower"]  # which way is better
Call = Literal[
    "better",
    "worse",
    "no meaningful difference",
    "1 run, no interval",
    "no data",
    "not estimable",  # a percentile from too few requests per start: listed, never called
    "needs more starts",  # an A/A split with one start a side: no call (see compare)
]

MIN_EFFECT = 0.01  # the smallest change called better or worse, as a fraction


@dataclass(frozen=True, slots=True, kw_only=True)
class Statistic:
    """The mean, or a quantile (``q``), of a sample and of its bootstrap resamples.

    Resamples are drawn as counts (how often each value is picked) rather than as copies
    of the values: the mean is then a matrix product and a quantile a running sum over
    the sorted values, both linear in the sample size, with no sort per resample.
    """

    q: float | None = None  # None: the mean

    def of(self, values: FloatArray) -> float:
        """The statistic of one sample (numpy's linear interpolation for quantiles)."""
        if self.q is None:
            return float(values.mean())
        return float(np.quantile(values, self.q))

    def resampled(self, ordered: FloatArray, counts: npt.NDArray[np.int64]) -> FloatArray:
        """The statistic of each resample; ``counts`` is (resamples, n) over sorted values."""
        return weighted_statistic(self.q, ordered, counts)


mean = Statistic()
median = Statistic(q=0.5)


def quantile(q: float) -> Statistic:
    """The q-quantile (0.99 for p99)."""
    return Statistic(q=q)


def seeded_rng(seed: int, *keys: str) -> np.random.Generator:
    """A generator that depends on the seed and the keys, not on the order of the calls."""
    return np.random.default_rng([seed, *(zlib.crc32(k.encode()) for k in keys)])


@dataclass(frozen=True, slots=True, kw_only=True)
class Estimate:
    """A ratio and difference of variant over baseline, with their intervals when defined."""

    baseline: float
    variant: float
    ratio: float
    difference: float
    ratio_low: float | None
    ratio_high: float | None
    difference_low: float | None
    difference_high: float | None
    n_baseline: int  # values: repeats for throughput, requests for latency
    n_variant: int
    starts_baseline: int = 1  # server starts behind the values
    starts_variant: int = 1
    df: float | None = None  # degrees of freedom the interval was widened with
    refused: str | None = None  # why there is no interval although both sides have data

    @property
    def has_interval(self) -> bool:
        """Whether the interval could be computed (two or more values on each side)."""
        return self.ratio_low is not None and self.ratio_high is not None

    @property
    def half_width(self) -> float | None:
        """Half the ratio interval's width (0.02: the change is known to +/- 2 %)."""
        if self.ratio_low is None or self.ratio_high is None:
            return None
        return (self.ratio_high - self.ratio_low) / 2.0


def estimate(
    baseline: FloatArray,
    variant: FloatArray,
    *,
    stat: Statistic,
    confidence: float = 0.95,
    resamples: int = 2000,
    rng: np.random.Generator,
) -> Estimate | None:
    """Ratio and difference of ``stat(variant)`` over ``stat(baseline)``: one level of values.

    Each value is an independent unit: a server start for the mean (startup times), a
    request for a percentile (order statistics). See ``estimate_nested``.
    """
    percentile = stat.q is not None
    level = flat if percentile else per_start
    return estimate_nested(
        level(baseline),
        level(variant),
        stat=stat,
        confidence=confidence,
        resamples=resamples,
        rng=rng,
        independent=percentile,
    )


def per_start(values: FloatArray) -> Nested:
    """Each value its own server start (startup times; one value per start)."""
    return nested([[np.asarray([v])] for v in np.asarray(values, dtype=np.float64)])


def estimate_nested(
    baseline: Nested,
    variant: Nested,
    *,
    stat: Statistic,
    confidence: float = 0.95,
    resamples: int = 2000,
    rng: np.random.Generator,
    independent: bool = False,
) -> Estimate | None:
    """Ratio and difference of the statistic of ``variant`` over ``baseline``, with intervals.

    Each side is resampled hierarchically and independently (starts, repeats, values);
    the ratio's interval is taken on the log scale, the difference's on its own, each
    widened for the few starts it rests on. Percentiles (``stat.q``) take the interval
    of ``quantiles`` instead (order statistics within a start, Student t across starts),
    or none, with ``refused`` saying why, when a start has too few requests for them.
    The interval is None when a side has a single value (one run says nothing about its
    own noise) or a single server start (the variation between starts, often larger
    than the noise within one, is unknown). Returns None when a side has no finite
    values at all. ``independent``: the values of one start are independent draws (no
    variation between starts to account for), so one start a side has an interval.
    """
    if baseline.size == 0 or variant.size == 0:
        return None
    point_a = Statistic(q=stat.q).of(baseline.values)
    point_b = Statistic(q=stat.q).of(variant.values)
    ratio = point_b / point_a if point_a != 0 else float("nan")
    single = Estimate(
        baseline=point_a,
        variant=point_b,
        ratio=ratio,
        difference=point_b - point_a,
        ratio_low=None,
        ratio_high=None,
        difference_low=None,
        difference_high=None,
        n_baseline=baseline.size,
        n_variant=variant.size,
        starts_baseline=baseline.starts,
        starts_variant=variant.starts,
    )
    if baseline.size < 2 or variant.size < 2 or not math.isfinite(ratio):
        return single
    if min(baseline.starts, variant.starts) < 2 and not independent:
        return single  # the variation between starts is unknown: no interval
    if stat.q is not None:
        return _percentile_estimate(baseline, variant, stat.q, confidence, single)
    side_a = bootstrap_side(baseline, stat.q, resamples, rng)
    side_b = bootstrap_side(variant, stat.q, resamples, rng)
    r_span: tuple[float, float] | None = None
    df = math.inf
    if point_a > 0 and point_b > 0 and np.all(side_a.boot > 0) and np.all(side_b.boot > 0):
        factor, df = widening([side_a, side_b], "log", confidence)
        span = scaled_interval(np.log(side_b.boot) - np.log(side_a.boot), confidence, factor)
        if span is not None:
            r_span = (math.exp(span[0]), math.exp(span[1]))
    else:  # a value of zero or below: the plain percentile interval of the ratio
        with np.errstate(divide="ignore", invalid="ignore"):
            r_span = scaled_interval(side_b.boot / side_a.boot, confidence, 1.0)
    factor, d_df = widening([side_a, side_b], "identity", confidence)
    d_span = scaled_interval(side_b.boot - side_a.boot, confidence, factor)
    return Estimate(
        baseline=point_a,
        variant=point_b,
        ratio=ratio,
        difference=point_b - point_a,
        ratio_low=None if r_span is None else r_span[0],
        ratio_high=None if r_span is None else r_span[1],
        difference_low=None if d_span is None else d_span[0],
        difference_high=None if d_span is None else d_span[1],
        n_baseline=baseline.size,
        n_variant=variant.size,
        starts_baseline=baseline.starts,
        starts_variant=variant.starts,
        df=df if math.isfinite(df) else (d_df if math.isfinite(d_df) else None),
    )


def _percentile_estimate(
    baseline: Nested, variant: Nested, q: float, confidence: float, single: Estimate
) -> Estimate:
    """A percentile's ratio with the interval of ``quantiles`` (order statistics within a
    start, Student t across starts), each side's percentile the geometric mean of its
    starts'; or the pooled figures, refused with the reason."""
    side_a = side_spread(baseline, q, confidence)
    side_b = side_spread(variant, q, confidence)
    if isinstance(side_a, str) or isinstance(side_b, str):
        why = side_a if isinstance(side_a, str) else side_b
        assert isinstance(why, str)
        return replace(single, refused=why)
    low, high, df = log_ratio_interval(side_a, side_b, confidence)
    a, b = math.exp(side_a.log_point), math.exp(side_b.log_point)
    # the difference's interval is the ratio's in the baseline's units
    return replace(
        single,
        baseline=a,
        variant=b,
        ratio=b / a,
        difference=b - a,
        ratio_low=math.exp(low),
        ratio_high=math.exp(high),
        difference_low=a * (math.exp(low) - 1.0),
        difference_high=a * (math.exp(high) - 1.0),
        df=df if math.isfinite(df) else None,
    )


def call(est: Estimate | None, direction: Direction, min_effect: float = MIN_EFFECT) -> Call:
    """better / worse / no meaningful difference, from the interval, size and direction.

    A difference is called only when the whole interval of the ratio lies on one side
    of 1 and the ratio itself is at least ``min_effect`` away from 1; "higher" metrics
    (throughput) are better when higher, "lower" ones (latency) when lower. Without an
    interval: "not estimable" (a percentile from too few requests per start), "needs
    more starts" (one server start on a side), "1 run, no interval" (one value).
    """
    if est is None:
        return "no data"
    if est.refused is not None:
        return "not estimable"
    if est.ratio_low is None or est.ratio_high is None:
        if (
            min(est.n_baseline, est.n_variant) >= 2
            and min(est.starts_baseline, est.starts_variant) < 2
        ):
            return "needs more starts"
        return "1 run, no interval"
    if est.ratio_low > 1.0 and est.ratio - 1.0 >= min_effect:
        return "better" if direction == "higher" else "worse"
    if est.ratio_high < 1.0 and 1.0 - est.ratio >= min_effect:
        return "worse" if direction == "higher" else "better"
    return "no meaningful difference"


def interval(
    values: FloatArray | Nested,
    *,
    stat: Statistic,
    confidence: float = 0.95,
    resamples: int = 2000,
    rng: np.random.Generator,
) -> tuple[float, float] | None:
    """The bootstrap interval of ``stat`` over one sample (flat or nested); None below 2."""
    h = values if isinstance(values, Nested) else flat(values)
    if h.size < 2:
        return None
    side = bootstrap_side(h, stat.q, resamples, rng)
    factor, _ = widening([side], "identity", confidence)
    return scaled_interval(side.boot, confidence, factor)
