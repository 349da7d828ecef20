"""Intervals for percentiles over server starts: order statistics within, Student t across.

A bootstrap cannot estimate a tail percentile from few requests: the p99 of 60 requests
is their largest but one, and a resample can only pick values there are, so its spread
says little about where the next start's p99 lies (A/A campaigns of identical servers
were called 35 % apart). Percentiles are therefore estimated the way a random-effects
analysis of cluster summaries would (Donner & Klar, *Design and Analysis of Cluster
Randomization Trials*, 2000, ch. 5), on the log scale:

- within one start, the distribution-free interval of a quantile from its order
  statistics (the ranks a Binomial(n, q) count puts around ``n q``; David & Nagaraja,
  *Order Statistics*, 2003, section 7.1) gives the sampling error of that start's
  percentile. It exists only when the start has enough requests: at least
  ``min_requests(q)`` (368 for p99, 36 for p90, 6 for the median at 95 %); below it the
  percentile is *not estimable* and no call is made;
- across starts, each start's percentile is one value: their spread holds the variation
  between starts and the sampling error within them, and rests on ``starts - 1``
  degrees of freedom; the two sides are combined as Welch's t (Welch-Satterthwaite
  degrees of freedom; with two starts a side, where that approximation is poorest,
  Student's pooled 2), so two starts a side give an honestly wide interval;
- a side with one start has no estimate of the variation between starts: a comparison
  of server starts then has no interval ("needs more starts", ``bootstrap.call``); the
  within-start interval serves values that are independent draws of one population
  (``bootstrap.estimate``).

With two starts or more a side's percentile is the geometric mean of its starts'
percentiles, the figure whose spread the interval measures (the percentile of all
requests pooled would be another statistic: the tail of a mixture of starts comes mostly
from its slowest start, and moves more than the average start's tail). With one start
it is that start's percentile.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
import numpy.typing as npt

from servegate._stats import t_quantile
from servegate.report.hierarchy import Nested

FloatArray = npt.NDArray[np.float64]


def min_requests(q: float, confidence: float = 0.95) -> int:
    """The fewest requests per start for a distribution-free interval of the q-quantile.

    Both ends of an equal-tailed interval must be order statistics of the sample: the
    chance that all ``n`` values fall on one side of the quantile, ``max(q, 1 - q) ** n``,
    must be at most the interval's tail, ``(1 - confidence) / 2``.
    """
    tail = (1.0 - confidence) / 2.0
    p = max(q, 1.0 - q)
    return max(2, math.ceil(math.log(tail) / math.log(p) - 1e-9))


def percentile_label(q: float) -> str:
    """``p99`` for 0.99, ``p50`` for 0.5, ``p99.9`` for 0.999."""
    return f"p{q * 100:g}"


@dataclass(frozen=True, slots=True, kw_only=True)
class SideSpread:
    """One side's percentile on the log scale: its variance and degrees of freedom."""

    log_point: float  # log of the percentile: the mean of the starts' logs
    variance: float  # of the log percentile
    df: float  # degrees of freedom of ``variance`` (inf: the within-start part only)
    starts: int


def start_values(h: Nested) -> list[FloatArray]:
    """The values of each start, its repeats pooled."""
    out = []
    for s in range(h.starts):
        first = int(h.point_offsets[h.start_offsets[s]])
        last = int(h.point_offsets[h.start_offsets[s + 1]])
        out.append(h.values[first:last])
    return out


def within_variance(values: FloatArray, q: float, confidence: float = 0.95) -> float:
    """The variance of one sample's log q-quantile, from its order statistics.

    The ranks ``n q -/+ z sqrt(n q (1 - q))`` bound the quantile with the interval's
    confidence (the normal approximation of the Binomial count below it, clamped to the
    sample); half the log distance between those order statistics over ``z`` is the
    standard error.
    """
    ordered = np.sort(values)
    n = ordered.size
    z = NormalDist().inv_cdf(1.0 - (1.0 - confidence) / 2.0)
    spread = z * math.sqrt(n * q * (1.0 - q))
    low = min(max(math.floor(n * q - spread), 1), n)  # 1-based ranks
    high = min(max(math.ceil(n * q + spread) + 1, 1), n)
    half = (math.log(ordered[high - 1]) - math.log(ordered[low - 1])) / (2.0 * z)
    return half * half


def side_spread(h: Nested, q: float, confidence: float = 0.95) -> SideSpread | str:
    """One side's log percentile with its variance, or why it cannot be estimated."""
    starts = start_values(h)
    fewest = min(v.size for v in starts)
    need = min_requests(q, confidence)
    if fewest < need:
        where = "the start" if len(starts) == 1 else "one start"
        return (
            f"{percentile_label(q)} needs at least {need} requests per server start to be "
            f"estimated; {where} had {fewest}"
        )
    if float(h.values.min()) <= 0.0:
        return f"{percentile_label(q)} of values at or below zero has no ratio"
    if len(starts) == 1:
        return SideSpread(
            log_point=math.log(float(np.quantile(starts[0], q))),
            variance=within_variance(starts[0], q, confidence),
            df=math.inf,
            starts=1,
        )
    logs = np.log(np.asarray([np.quantile(v, q) for v in starts], dtype=np.float64))
    return SideSpread(
        log_point=float(logs.mean()),
        variance=float(np.var(logs, ddof=1)) / len(starts),
        df=float(len(starts) - 1),
        starts=len(starts),
    )


def log_ratio_interval(
    a: SideSpread, b: SideSpread, confidence: float = 0.95
) -> tuple[float, float, float]:
    """The interval of log(b / a) and its Welch-Satterthwaite degrees of freedom."""
    variance = a.variance + b.variance
    centre = b.log_point - a.log_point
    if variance <= 0.0:
        return centre, centre, math.inf
    if a.starts == b.starts == 2:
        # two starts a side: Student's pooled degrees of freedom (2), exact for equal
        # variances and robust to unequal ones at equal sizes; Welch-Satterthwaite's
        # approximation is poorest at one degree of freedom a side (it counts 1 to 2 and
        # covered 97-98.6 % on the simulator's model; pooled: 94.6-97.1 %)
        df = a.df + b.df
    else:
        terms = [v * v / df for v, df in ((a.variance, a.df), (b.variance, b.df)) if v > 0]
        finite = [t for t in terms if math.isfinite(t) and t > 0]
        df = variance * variance / sum(finite) if finite else math.inf
    t = t_quantile(1.0 - (1.0 - confidence) / 2.0, df)
    half = t * math.sqrt(variance)
    return centre - half, centre + half, df
