"""The hierarchical bootstrap: server starts, then repeats within a start, then requests.

One server instance can settle into a performance regime for its whole life (vLLM
#39903), so repeats on one instance say nothing about the next start: the start is the
unit of replication. Each resample here picks starts with replacement, then each picked
start's repeats with replacement, then each picked repeat's requests with replacement
(a repeat holds one value for throughput), and computes the statistic over what was
picked. The interval then includes the variation between starts.

A percentile bootstrap over a handful of starts is too narrow: its resamples can only
recombine the starts there are (with 5 starts a 95 % interval covers about 85 % of the
time). So the spread of the resamples is calibrated as a random-effects model would be:
a second bootstrap with the starts held fixed measures the variance that comes from
below the starts (with many degrees of freedom); the rest, the variance between starts,
has only ``starts - 1``; the interval is widened to a Student t quantile with the
Welch-Satterthwaite degrees of freedom of those parts (Satterthwaite 1946; Davison and
Hinkley 1997, section 3.8, on resampling hierarchical data). With many starts, or no
variation between them, this is the plain percentile interval.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
import numpy.typing as npt

from servegate._stats import t_quantile

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

# Draw resamples in blocks of at most this many random numbers, so memory stays small.
_BLOCK = 4_000_000
# Resamples of the second bootstrap (starts held fixed): it only estimates a variance.
WITHIN_RESAMPLES = 500


@dataclass(frozen=True, slots=True, kw_only=True)
class Nested:
    """One side's values in their hierarchy: starts, the points (repeats) of each, values.

    Stored flat for resampling: ``values`` grouped by point, points grouped by start.
    Build one with ``nested([[values of repeat 1, values of repeat 2], [next start]])``.
    """

    values: FloatArray
    point_offsets: IntArray  # values of point p: values[point_offsets[p]:point_offsets[p+1]]
    start_offsets: IntArray  # points of start s: start_offsets[s]:start_offsets[s+1]

    @property
    def starts(self) -> int:
        """Server starts with at least one value."""
        return int(self.start_offsets.size - 1)

    @property
    def points(self) -> int:
        """Points (repeats) with at least one value, over all starts."""
        return int(self.point_offsets.size - 1)

    @property
    def size(self) -> int:
        """Values over all points."""
        return int(self.values.size)

    def levels(self) -> tuple[str, ...]:
        """The levels that vary (more than one unit under some parent), from the top."""
        out = []
        if self.starts > 1:
            out.append("starts")
        if np.any(np.diff(self.start_offsets) > 1):
            out.append("repeats")
        if np.any(np.diff(self.point_offsets) > 1):
            out.append("values")
        return tuple(out)

    def top_units(self) -> int:
        """Units at the highest level that varies (starts, else repeats, else values)."""
        levels = self.levels()
        if not levels:
            return 1
        return {"starts": self.starts, "repeats": self.points, "values": self.size}[levels[0]]


def nested(starts: Sequence[Sequence[FloatArray]]) -> Nested:
    """Starts of points of values, with non-finite values, empty points and starts dropped."""
    values: list[FloatArray] = []
    point_offsets = [0]
    start_offsets = [0]
    for points in starts:
        kept = 0
        for raw in points:
            arr = np.asarray(raw, dtype=np.float64)
            arr = arr[np.isfinite(arr)]
            if arr.size == 0:
                continue
            values.append(arr)
            point_offsets.append(point_offsets[-1] + int(arr.size))
            kept += 1
        if kept:
            start_offsets.append(start_offsets[-1] + kept)
    return Nested(
        values=np.concatenate(values) if values else np.empty(0, dtype=np.float64),
        point_offsets=np.asarray(point_offsets, dtype=np.int64),
        start_offsets=np.asarray(start_offsets, dtype=np.int64),
    )


def flat(values: FloatArray) -> Nested:
    """One start whose every value is a repeat of its own (the classic one-level case)."""
    return nested([[np.asarray([v]) for v in np.asarray(values, dtype=np.float64)]])


def weighted_statistic(q: float | None, ordered: FloatArray, counts: IntArray) -> FloatArray:
    """The mean (``q`` None) or q-quantile of each row's resample, given as counts.

    ``counts`` is (resamples, n) over the sorted values; rows may hold different totals.
    Quantiles interpolate linearly between ranks, as numpy's default does.
    """
    totals = counts.sum(axis=1)
    if q is None:
        return np.asarray(counts @ ordered / totals, dtype=np.float64)
    n = ordered.size
    position = q * (totals - 1)
    low = np.floor(position).astype(np.int64)
    frac = position - low
    running = np.cumsum(counts, axis=1)
    at_low = (running <= low[:, np.newaxis]).sum(axis=1)
    at_high = (running <= (low + 1)[:, np.newaxis]).sum(axis=1)
    lo_vals = ordered[np.minimum(at_low, n - 1)]
    hi_vals = ordered[np.minimum(at_high, n - 1)]
    return np.asarray(lo_vals + frac * (hi_vals - lo_vals), dtype=np.float64)


def _counts(h: Nested, rows: int, rng: np.random.Generator, *, fixed: int) -> IntArray:
    """How often each value is picked in ``rows`` hierarchical resamples, (rows, size).

    ``fixed``: how many levels from the top are kept as they are (0: resample starts,
    repeats and values; 1: keep the starts; 2: keep starts and repeats).
    """
    per_start = np.diff(h.start_offsets)
    per_point = np.diff(h.point_offsets)
    k = h.starts
    if fixed >= 1:
        starts = np.broadcast_to(np.arange(k), (rows, k))
    else:
        starts = rng.integers(0, k, size=(rows, k))
    if per_start.min() == per_start.max() and per_point.min() == per_point.max():
        return _balanced_counts(h, starts, int(per_start[0]), int(per_point[0]), rng, fixed=fixed)
    most_points = int(per_start.max())
    n_points = per_start[starts]  # (rows, k)
    slot = np.arange(most_points)
    if fixed >= 2:
        draw = np.broadcast_to(slot, (rows, k, most_points))
    else:
        draw = np.floor(rng.random((rows, k, most_points)) * n_points[..., np.newaxis])
    points = h.start_offsets[:-1][starts][..., np.newaxis] + draw.astype(np.int64)
    picked = slot < n_points[..., np.newaxis]  # (rows, k, most_points)
    points = np.where(picked, points, 0).reshape(rows, -1)
    picked = picked.reshape(rows, -1)
    most_values = int(per_point.max())
    n_values = per_point[points]  # (rows, slots)
    index = h.point_offsets[:-1][points][..., np.newaxis] + np.floor(
        rng.random((rows, points.shape[1], most_values)) * n_values[..., np.newaxis]
    ).astype(np.int64)
    keep = (np.arange(most_values) < n_values[..., np.newaxis]) & picked[..., np.newaxis]
    row = np.broadcast_to(np.arange(rows)[:, np.newaxis, np.newaxis], index.shape)
    flat_index = (row * h.size + index)[keep]
    return np.bincount(flat_index, minlength=rows * h.size).reshape(rows, h.size)


def _balanced_counts(
    h: Nested,
    starts: IntArray,
    repeats: int,
    values: int,
    rng: np.random.Generator,
    *,
    fixed: int,
) -> IntArray:
    """``_counts`` when every start has as many repeats and every repeat as many values.

    No unit is missing from any slot, so the picks need no masks: the common case of a
    campaign, and about twice as fast.
    """
    rows, k = starts.shape
    first = (starts * repeats)[..., np.newaxis]
    if fixed >= 2:
        points = first + np.arange(repeats)
    else:
        points = first + rng.integers(0, repeats, size=(rows, k, repeats))
    points = points.reshape(rows, k * repeats, 1)
    index = points * values + rng.integers(0, values, size=(rows, k * repeats, values))
    index = index.reshape(rows, -1) + (np.arange(rows) * h.size)[:, np.newaxis]
    return np.bincount(index.ravel(), minlength=rows * h.size).reshape(rows, h.size)


def resample(
    h: Nested,
    q: float | None,
    resamples: int,
    rng: np.random.Generator,
    *,
    fixed: int = 0,
) -> FloatArray:
    """The statistic of ``resamples`` hierarchical resamples of ``h`` (see ``_counts``)."""
    order = np.argsort(h.values, kind="stable")
    ordered = h.values[order]
    per_row = h.starts * int(np.diff(h.start_offsets).max()) * int(np.diff(h.point_offsets).max())
    rows = max(1, min(resamples, _BLOCK // max(per_row, h.size, 1)))
    out = np.empty(resamples, dtype=np.float64)
    for begin in range(0, resamples, rows):
        count = min(rows, resamples - begin)
        counts = _counts(h, count, rng, fixed=fixed)[:, order]
        out[begin : begin + count] = weighted_statistic(q, ordered, counts)
    return out


def statistic(h: Nested, q: float | None) -> float:
    """The statistic of all values pooled (the point estimate)."""
    if q is None:
        return float(h.values.mean())
    return float(np.quantile(h.values, q))


# --- calibration: how much of the spread has how many degrees of freedom ---------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Level:
    """One level that varies, with the resamples that start at it."""

    name: str  # starts | repeats | values
    boot: FloatArray  # resamples of this level and every level below it
    per_parent: float  # units per parent, over the parents that have more than one
    df: int  # units at this level minus their parents


@dataclass(frozen=True, slots=True, kw_only=True)
class Side:
    """One side's bootstrap: the point estimate, the resamples, and one set per level."""

    point: float
    boot: FloatArray  # full hierarchical resamples
    levels: tuple[Level, ...]  # from the top; levels[0].boot is ``boot``


_DEPTH = {"starts": 0, "repeats": 1, "values": 2}


def bootstrap_side(h: Nested, q: float | None, resamples: int, rng: np.random.Generator) -> Side:
    """Resample one side fully, then once per lower level with the levels above it kept."""
    names = h.levels()
    units = {"starts": h.starts, "repeats": h.points, "values": h.size}
    parents = {"starts": 1, "repeats": h.starts, "values": h.points}
    groups = {
        "starts": np.asarray([h.starts]),
        "repeats": np.diff(h.start_offsets),
        "values": np.diff(h.point_offsets),
    }
    levels = []
    boot = resample(h, q, resamples, rng)
    for index, name in enumerate(names):
        if index:
            count = min(resamples, WITHIN_RESAMPLES)
            level_boot = resample(h, q, count, rng, fixed=_DEPTH[name])
        else:
            level_boot = boot
        sizes = groups[name][groups[name] > 1]
        levels.append(
            Level(
                name=name,
                boot=level_boot,
                per_parent=float(sizes.mean()),
                df=max(units[name] - parents[name], 1),
            )
        )
    return Side(point=statistic(h, q), boot=boot, levels=tuple(levels))


def _parts(side: Side, transform: str) -> list[tuple[float, float]]:
    """(variance, degrees of freedom) of each level's own part of one side's spread.

    Resampling a level with its parents kept gives that level's variance with the bias
    of a bootstrap, (m - 1) / m for m units per parent; what the levels below explain
    is taken off, from the bottom up, and what is left is that level's own part.
    """
    variances = [float(np.var(_apply(level.boot, transform), ddof=1)) for level in side.levels]
    parts: list[tuple[float, float]] = []
    explained = 0.0
    for index in reversed(range(len(side.levels))):
        level = side.levels[index]
        below = variances[index + 1] if index + 1 < len(variances) else 0.0
        m = level.per_parent
        total = max(0.0, variances[index] - below) * m / (m - 1)
        own = max(0.0, total - explained)
        parts.append((own, level.df))
        explained += own
    return parts


def _apply(values: FloatArray, transform: str) -> FloatArray:
    if transform == "log":
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.asarray(np.log(values), dtype=np.float64)
    return values


def widening(sides: Sequence[Side], transform: str, confidence: float) -> tuple[float, float]:
    """The factor that calibrates the percentile interval, and its degrees of freedom.

    ``sides``: one for the interval of one sample, two (independent) for a comparison.
    """
    parts = [part for side in sides for part in _parts(side, transform)]
    calibrated = sum(v for v, _ in parts)
    raw = float(sum(np.var(_apply(side.boot, transform), ddof=1) for side in sides))
    if raw <= 0 or calibrated <= 0 or not math.isfinite(raw):
        return 1.0, math.inf
    denominator = sum(v * v / df for v, df in parts if v > 0 and math.isfinite(df))
    df = calibrated**2 / denominator if denominator > 0 else math.inf
    tail = 1.0 - (1.0 - confidence) / 2.0
    z = NormalDist().inv_cdf(tail)
    return math.sqrt(calibrated / raw) * t_quantile(tail, df) / z, df


def scaled_interval(
    replicates: FloatArray, confidence: float, factor: float
) -> tuple[float, float] | None:
    """The percentile interval of ``replicates``, widened by ``factor`` about their median."""
    finite = replicates[np.isfinite(replicates)]
    if finite.size == 0:
        return None
    tail = (1.0 - confidence) / 2.0
    low, mid, high = (float(x) for x in np.quantile(finite, [tail, 0.5, 1.0 - tail]))
    return mid + (low - mid) * factor, mid + (high - mid) * factor
