"""Bootstrap confidence intervals for the ratio and difference of two samples.

Whether a variant is faster than the baseline is a question about noise: two runs of the
same server differ by a few percent. Resampling each side with replacement and looking
at where the middle 95 % of the resampled ratios fall answers it without assuming a
distribution (percentile bootstrap; Efron & Tibshirani, ch. 13). Vectorised with numpy
and seeded, so a report is the same every time it is rendered.
"""

from __future__ import annotations

import dataclasses
import zlib
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
Direction = Literal["higher", "lower"]  # which way is better
Call = Literal["better", "worse", "no detectable difference", "1 run, no interval", "no data"]

# Resample in blocks of at most this many counts, so memory stays small for big samples.
_BLOCK_VALUES = 4_000_000


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
        n = ordered.size
        if self.q is None:
            return np.asarray(counts @ ordered / n, dtype=np.float64)
        position = self.q * (n - 1)
        low = int(np.floor(position))
        frac = position - low
        running = np.cumsum(counts, axis=1)
        # index of the value at rank k in each resample: how many running sums are <= k
        at_low = (running <= low).sum(axis=1)
        result = ordered[np.minimum(at_low, n - 1)]
        if frac > 0:
            at_high = (running <= low + 1).sum(axis=1)
            result = result + frac * (ordered[np.minimum(at_high, n - 1)] - result)
        return np.asarray(result, dtype=np.float64)


mean = Statistic()
median = Statistic(q=0.5)


def quantile(q: float) -> Statistic:
    """The q-quantile (0.99 for p99)."""
    return Statistic(q=q)


def seeded_rng(seed: int, *keys: str) -> np.random.Generator:
    """A generator that depends on the seed and the keys, not on the order of the calls."""
    return np.random.default_rng([seed, *(zlib.crc32(k.encode()) for k in keys)])


def _resampled(
    values: FloatArray, stat: Statistic, resamples: int, rng: np.random.Generator
) -> FloatArray:
    ordered = np.sort(values)
    n = ordered.size
    rows = max(1, _BLOCK_VALUES // max(n, 1))
    out = np.empty(resamples, dtype=np.float64)
    for start in range(0, resamples, rows):
        count = min(rows, resamples - start)
        picks = rng.integers(0, n, size=(count, n)) + (np.arange(count) * n)[:, np.newaxis]
        counts = np.bincount(picks.ravel(), minlength=count * n).reshape(count, n)
        out[start : start + count] = stat.resampled(ordered, counts)
    return out


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
    n_baseline: int
    n_variant: int

    @property
    def has_interval(self) -> bool:
        """Whether the interval could be computed (two or more values on each side)."""
        return self.ratio_low is not None and self.ratio_high is not None


def estimate(
    baseline: FloatArray,
    variant: FloatArray,
    *,
    stat: Statistic,
    confidence: float = 0.95,
    resamples: int = 2000,
    rng: np.random.Generator,
) -> Estimate | None:
    """Ratio and difference of ``stat(variant)`` over ``stat(baseline)`` with intervals.

    Each side is resampled independently. The interval is None when either side has
    fewer than two values: one run says nothing about its own noise. Returns None
    when a side has no finite values at all.
    """
    a = baseline[np.isfinite(baseline)]
    b = variant[np.isfinite(variant)]
    if a.size == 0 or b.size == 0:
        return None
    point_a = stat.of(a)
    point_b = stat.of(b)
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
        n_baseline=int(a.size),
        n_variant=int(b.size),
    )
    if a.size < 2 or b.size < 2:
        return single
    boot_a = _resampled(a, stat, resamples, rng)
    boot_b = _resampled(b, stat, resamples, rng)
    tail = (1.0 - confidence) / 2.0
    qs = [tail, 1.0 - tail]
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = boot_b / boot_a
    ratios = ratios[np.isfinite(ratios)]
    r_low, r_high = (float(x) for x in np.quantile(ratios, qs)) if ratios.size else (None, None)
    d_low, d_high = (float(x) for x in np.quantile(boot_b - boot_a, qs))
    return dataclasses.replace(
        single,
        ratio_low=r_low,
        ratio_high=r_high,
        difference_low=d_low,
        difference_high=d_high,
    )


def call(est: Estimate | None, direction: Direction) -> Call:
    """better / worse / no detectable difference, from the interval and the direction.

    A difference is called only when the whole interval of the ratio lies on one side
    of 1; "higher" metrics (throughput) are better when higher, "lower" ones (latency)
    when lower.
    """
    if est is None:
        return "no data"
    if est.ratio_low is None or est.ratio_high is None:
        return "1 run, no interval"
    if est.ratio_low > 1.0:
        return "better" if direction == "higher" else "worse"
    if est.ratio_high < 1.0:
        return "worse" if direction == "higher" else "better"
    return "no detectable difference"


def interval(
    values: FloatArray,
    *,
    stat: Statistic,
    confidence: float = 0.95,
    resamples: int = 2000,
    rng: np.random.Generator,
) -> tuple[float, float] | None:
    """The bootstrap interval of ``stat`` over one sample; None with fewer than two values."""
    finite = values[np.isfinite(values)]
    if finite.size < 2:
        return None
    boot = _resampled(finite, stat, resamples, rng)
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(boot, [tail, 1.0 - tail])
    return float(low), float(high)
