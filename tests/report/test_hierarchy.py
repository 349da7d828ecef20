"""The hierarchical bootstrap: intervals that include the variation between server starts."""

from __future__ import annotations

import numpy as np
import pytest

from servegate.report.bootstrap import (
    Estimate,
    call,
    estimate,
    estimate_nested,
    mean,
    quantile,
    seeded_rng,
)
from servegate.report.hierarchy import (
    _counts,
    flat,
    nested,
    weighted_statistic,
)


def _side(
    rng: np.random.Generator, starts: int, repeats: int, between: float, scale: float = 1.0
) -> list[list[np.ndarray]]:
    """Throughput of ``starts`` starts: each start's own speed, then 1 % repeat noise."""
    out = []
    for _ in range(starts):
        speed = np.exp(between * rng.normal() - between**2 / 2)
        out.append(
            [np.array([100.0 * scale * speed * (1 + 0.01 * rng.normal())]) for _ in range(repeats)]
        )
    return out


def _coverage(starts: int, repeats: int, between: float, trials: int) -> float:
    """How often the 95 % interval of a +5 % change holds 1.05."""
    rng = np.random.default_rng(2024)
    held = 0
    for trial in range(trials):
        a = nested(_side(rng, starts, repeats, between))
        b = nested(_side(rng, starts, repeats, between, scale=1.05))
        est = estimate_nested(a, b, stat=mean, resamples=500, rng=seeded_rng(trial, "cov"))
        assert est is not None and est.ratio_low is not None and est.ratio_high is not None
        held += est.ratio_low <= 1.05 <= est.ratio_high
    return held / trials


def test_restart_replicates_cover_the_true_change_about_95_percent_of_the_time() -> None:
    """6 starts a side, 5 % between starts: the interval holds the truth in 90-99 % of 300."""
    assert 0.90 <= _coverage(starts=6, repeats=1, between=0.05, trials=300) <= 0.99


def test_repeats_on_one_start_give_no_interval_and_no_call() -> None:
    """One start with 6 repeats a side: the variation between starts is unknown, so there is
    no interval and the call is "needs more starts" (an interval from the repeats alone
    covered a +5 % change under half the time: it left that variation out)."""
    rng = np.random.default_rng(2024)
    a = nested(_side(rng, 1, 6, 0.05))
    b = nested(_side(rng, 1, 6, 0.05, scale=1.05))
    est = estimate_nested(a, b, stat=mean, resamples=500, rng=seeded_rng(0, "cov"))
    assert est is not None and est.ratio == pytest.approx(1.05, abs=0.2)
    assert (est.ratio_low, est.ratio_high) == (None, None)
    assert call(est, "higher") == "needs more starts"
    two = estimate_nested(
        nested(_side(rng, 2, 3, 0.05)),
        b,
        stat=mean,
        resamples=500,
        rng=seeded_rng(0, "cov"),
    )
    assert two is not None and call(two, "higher") == "needs more starts"  # one side has one


def test_with_no_variation_between_starts_the_interval_stays_narrow() -> None:
    """No regime effect: 5 starts x 3 repeats give an interval near the 1 % repeat noise."""
    rng = np.random.default_rng(5)
    a = nested(_side(rng, 5, 3, between=0.0))
    b = nested(_side(rng, 5, 3, between=0.0, scale=1.05))
    est = estimate_nested(a, b, stat=mean, resamples=1000, rng=seeded_rng(0, "narrow"))
    assert est is not None and est.half_width is not None
    assert est.half_width < 0.02
    assert call(est, "higher") == "better"
    assert (est.starts_baseline, est.starts_variant) == (5, 5)


@pytest.mark.parametrize("fixed", [0, 1, 2])
def test_each_resample_picks_whole_starts_and_repeats(fixed: int) -> None:
    """Counts add up to the picked starts' sizes; kept levels keep their units."""
    h = nested(
        [
            [np.arange(3.0), np.arange(5.0)],  # start 1: repeats of 3 and 5 requests
            [np.arange(4.0)],  # start 2: one repeat of 4
        ]
    )
    counts = _counts(h, 400, np.random.default_rng(1), fixed=fixed)
    assert counts.shape == (400, 12)
    totals = counts.sum(axis=1)
    if fixed == 0:  # starts (1, 1): four repeats of 3 or 5; (1, 2): two and 4; (2, 2): 8
        assert set(totals.tolist()) == {8, 10, 12, 14, 16, 18, 20}
        assert (counts[:, 8:].sum(axis=1) == 0).any()  # start 2 left out sometimes
    if fixed >= 1:  # both starts, each once
        assert (counts[:, 8:].sum(axis=1) == 4).all()
    if fixed == 2:  # every repeat once: exactly its size
        assert (counts[:, :3].sum(axis=1) == 3).all()
        assert (counts[:, 3:8].sum(axis=1) == 5).all()


@pytest.mark.parametrize("fixed", [0, 1, 2])
def test_a_balanced_hierarchy_is_resampled_the_same_way(fixed: int) -> None:
    """3 starts x 2 repeats x 4 values: 24 picks a resample; kept levels keep their units."""
    h = nested([[np.arange(4.0) + 10 * (2 * s + r) for r in range(2)] for s in range(3)])
    counts = _counts(h, 300, np.random.default_rng(2), fixed=fixed)
    assert counts.shape == (300, 24)
    assert (counts.sum(axis=1) == 24).all()
    per_start = counts.reshape(300, 3, 8).sum(axis=2)
    per_point = counts.reshape(300, 6, 4).sum(axis=2)
    if fixed == 0:
        assert (per_start == 0).any()  # a start left out of some resamples
        assert set(per_start.ravel().tolist()) == {0, 8, 16, 24}
    else:
        assert (per_start == 8).all()
    if fixed == 2:
        assert (per_point == 4).all()
    else:
        assert (per_point == 0).any()


def test_weighted_quantile_matches_numpy_on_resamples_of_any_size() -> None:
    """The count-based quantile of rows with different totals equals numpy's on the values."""
    rng = np.random.default_rng(3)
    ordered = np.sort(rng.lognormal(3, 0.5, size=40))
    counts = rng.integers(0, 3, size=(30, 40))
    counts[:, 0] += 1  # no empty row
    for q in (0.0, 0.5, 0.9, 0.99, 1.0):
        expected = [np.quantile(np.repeat(ordered, row), q) for row in counts]
        np.testing.assert_allclose(weighted_statistic(q, ordered, counts), expected, rtol=1e-12)
    expected_mean = [np.repeat(ordered, row).mean() for row in counts]
    np.testing.assert_allclose(weighted_statistic(None, ordered, counts), expected_mean)


def _tiny_change(min_effect: float) -> tuple[Estimate, str]:
    rng = np.random.default_rng(8)
    base = 1000 * (1 + rng.normal(0, 0.0005, size=8))
    plus = 1003 * (1 + rng.normal(0, 0.0005, size=8))
    est = estimate(base, plus, stat=mean, resamples=1000, rng=seeded_rng(0, "tiny"))
    assert est is not None
    return est, call(est, "higher", min_effect)


def test_a_real_change_below_min_effect_is_no_meaningful_difference() -> None:
    """+0.3 % with an interval clear of zero: not "better" at 1 %, "better" at 0."""
    est, verdict = _tiny_change(0.01)
    assert est.ratio_low is not None and est.ratio_low > 1.0
    assert verdict == "no meaningful difference"
    assert _tiny_change(0.0)[1] == "better"


def test_percentiles_are_resampled_by_request_within_each_start() -> None:
    """p99 over 2 starts x 2 repeats x 300 requests: an interval, its starts counted."""
    rng = np.random.default_rng(9)

    def side(scale: float) -> list[list[np.ndarray]]:
        return [[scale * rng.lognormal(3, 0.4, size=300) for _ in range(2)] for _ in range(2)]

    est = estimate_nested(
        nested(side(1.0)),
        nested(side(2.0)),
        stat=quantile(0.99),
        resamples=500,
        rng=seeded_rng(1, "p99"),
    )
    assert est is not None and est.ratio_low is not None and est.ratio_high is not None
    assert est.ratio_low < 2.0 < est.ratio_high
    assert (est.n_baseline, est.starts_baseline) == (1200, 2)
    assert call(est, "lower") == "worse"


def test_flat_values_are_one_start_of_single_value_repeats() -> None:
    """The one-level case: each value a repeat of its own, all in one start."""
    h = flat(np.array([1.0, 2.0, np.nan, 3.0]))
    assert (h.starts, h.points, h.size, h.levels()) == (1, 3, 3, ("repeats",))
