"""Tail percentiles and few starts: intervals that hold, and no call where none can.

Identical servers were called different: a TTFT p99 from 60 requests per start, two
starts a side, came out "+35.3 % [+9.2, +45.9] REGRESSION"; the A/A noise floor split
two starts into one a side and called a third of its comparisons. These tests draw
campaigns from the simulator's own model of identical servers (a lognormal speed
factor per start, noise per request) and check the report's calls on them.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from servegate.report import build_report
from servegate.report.bootstrap import call, estimate_nested, median, quantile, seeded_rng
from servegate.report.check import per_comparison_confidence
from servegate.report.hierarchy import Nested, nested
from servegate.report.quantiles import min_requests, within_variance
from servegate.store import CampaignStatus, Store

from .starts import Campaign


def _side(
    rng: np.random.Generator, starts: int, repeats: int, requests: int, scale: float = 1.0
) -> Nested:
    """TTFT of ``starts`` starts of an identical server: 4 % between starts, 8 % jitter."""
    out = []
    for _ in range(starts):
        factor = math.exp(0.04 * rng.normal() - 0.0008) * max(0.2, 1 + 0.02 * rng.normal())
        out.append(
            [
                20.0 * scale / factor * np.maximum(0.2, 1 + 0.08 * rng.normal(size=requests))
                for _ in range(repeats)
            ]
        )
    return nested(out)


def test_the_fewest_requests_per_start_for_each_percentile() -> None:
    """A distribution-free 95 % interval needs max(q, 1-q)^n <= 2.5 %: 6, 36, 72, 368."""
    assert [min_requests(q) for q in (0.5, 0.9, 0.95, 0.99)] == [6, 36, 72, 368]
    assert 0.99**368 <= 0.025 < 0.99**367
    assert 0.9**36 <= 0.025 < 0.9**35


def test_a_p99_from_too_few_requests_per_start_is_not_estimable() -> None:
    """Two starts of 60 requests a side: the p99's ratio is shown, never an interval or a
    call, and the reason names the requests it needs."""
    rng = np.random.default_rng(1)
    a, b = _side(rng, 2, 2, 30), _side(rng, 2, 2, 30)
    est = estimate_nested(a, b, stat=quantile(0.99), rng=seeded_rng(0, "t"))
    assert est is not None and math.isfinite(est.ratio)
    assert (est.ratio_low, est.ratio_high) == (None, None)
    assert est.refused == (
        "p99 needs at least 368 requests per server start to be estimated; one start had 60"
    )
    assert call(est, "lower") == "not estimable"
    p90 = estimate_nested(a, b, stat=quantile(0.9), rng=seeded_rng(0, "t"))
    assert p90 is not None and p90.has_interval  # 60 >= 36


def test_identical_servers_are_called_different_at_most_at_the_intervals_rate() -> None:
    """400 A/A pairs, two starts a side, 60 requests a start: the median and p90 are
    called better or worse at most about 5 % of the time (the interval's own rate), and
    the p99 never (not estimable)."""
    rng = np.random.default_rng(2026)
    said: dict[str, list[str]] = {"p50": [], "p90": [], "p99": []}
    for trial in range(400):
        a, b = _side(rng, 2, 2, 30), _side(rng, 2, 2, 30)
        for name, stat in (("p50", median), ("p90", quantile(0.9)), ("p99", quantile(0.99))):
            est = estimate_nested(a, b, stat=stat, rng=seeded_rng(trial, name))
            said[name].append(call(est, "lower"))
    for name in ("p50", "p90"):
        called = sum(c in ("better", "worse") for c in said[name])
        assert called <= 0.075 * 400, (name, called)
        assert all(c != "not estimable" for c in said[name])
    assert set(said["p99"]) == {"not estimable"}


def test_tail_intervals_cover_the_true_change() -> None:
    """Three starts a side of 400 requests, a variant 5 % faster in every duration: the
    p99's 95 % interval holds 0.95 in 90-99 % of 300 campaigns."""
    rng = np.random.default_rng(7)
    held = 0
    for trial in range(300):
        a, b = _side(rng, 3, 2, 200), _side(rng, 3, 2, 200, scale=0.95)
        est = estimate_nested(a, b, stat=quantile(0.99), rng=seeded_rng(trial, "cov"))
        assert est is not None and est.ratio_low is not None and est.ratio_high is not None
        held += est.ratio_low <= 0.95 <= est.ratio_high
    assert 0.90 * 300 <= held <= 0.99 * 300


def test_the_within_start_error_of_a_percentile_comes_from_its_order_statistics() -> None:
    """The standard error of a sample median of n standard lognormals is about
    1.2533 / sqrt(n) on the log scale (the normal median's); the order statistics give it."""
    rng = np.random.default_rng(3)
    values = rng.lognormal(0.0, 1.0, size=4000)
    se = math.sqrt(within_variance(values, 0.5))
    assert se == pytest.approx(1.2533 / math.sqrt(4000), rel=0.15)


def _starts(c: Campaign, name: str, count: int, rng: np.random.Generator) -> None:
    """``count`` starts of two repeats each, throughput 1 % apart."""
    c.measured(name, [list(100.0 * rng.normal(1.0, 0.01, size=2)) for _ in range(count)])


def test_the_noise_floor_with_two_starts_splits_one_start_and_makes_no_call(
    tmp_path: Path,
) -> None:
    """Two baseline starts would be one a side: the floor splits the repeats of one start,
    says so, and calls nothing ("needs more starts"); with four it splits the starts."""
    rng = np.random.default_rng(5)
    with Store.open(tmp_path / "r.db") as store:
        c = Campaign(store)
        _starts(c, "baseline", 2, rng)
        store.set_campaign_status(c.cid, CampaignStatus.DONE)
        report = build_report(store, "c")
    floors = report.noise_floor
    assert floors and {f.split for f in floors} == {"repeats 1 vs 2 of start 1, within one start"}
    assert {f.call for f in floors} <= {"needs more starts", "1 run, no interval"}
    assert any(f.call == "needs more starts" for f in floors)
    with Store.open(tmp_path / "four.db") as store:
        c = Campaign(store)
        _starts(c, "baseline", 4, rng)
        store.set_campaign_status(c.cid, CampaignStatus.DONE)
        report = build_report(store, "c")
    floor = report.noise("c=4", "output_throughput")
    assert floor is not None and floor.split == "starts 1, 3 vs 2, 4"
    assert floor.call in ("better", "worse", "no meaningful difference")


def test_a_check_keeps_its_false_alarm_rate_over_many_comparisons() -> None:
    """Six comparisons at 95 % would fail identical servers about 6 times in 20 (at most
    1 - 0.975^6 = 14 % one-sided); each interval at 1 - 5 %/6 keeps the check's rate under 5 %."""
    assert per_comparison_confidence(0.95, 1) == pytest.approx(0.95)
    assert per_comparison_confidence(0.95, 6) == pytest.approx(1 - 0.05 / 6)
    one_sided = (1 - per_comparison_confidence(0.95, 6)) / 2
    assert 1 - (1 - one_sided) ** 6 <= 0.05
