"""Comparison statistics: real differences found, noise called noise, directions right."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from servegate.report import build_report
from servegate.report.bootstrap import Statistic, call, estimate, mean, median, seeded_rng
from servegate.store import AttemptStatus, Store

from .campaign import build


def _est(a: np.ndarray, b: np.ndarray, stat=mean, seed: int = 0):  # type: ignore[no-untyped-def]
    return estimate(a, b, stat=stat, resamples=2000, rng=seeded_rng(seed, "t"))


def test_a_real_five_percent_gain_with_low_noise_is_detected() -> None:
    """Five repeats each, 0.5 % noise, +5 % throughput: called better, interval near 1.05."""
    rng = np.random.default_rng(1)
    base = 1000 * (1 + rng.normal(0, 0.005, size=5))
    fast = 1050 * (1 + rng.normal(0, 0.005, size=5))
    est = _est(base, fast)
    assert est is not None
    assert call(est, "higher") == "better"
    assert est.ratio_low is not None
    assert est.ratio_high is not None
    assert 1.0 < est.ratio_low < 1.05 < est.ratio_high < 1.1


def test_identical_distributions_are_no_detectable_difference() -> None:
    """Two samples from the same distribution: no call, for throughput and for latency."""
    rng = np.random.default_rng(2)
    runs_a, runs_b = 1000 * (1 + rng.normal(0, 0.02, size=(2, 5)))
    lat_a, lat_b = rng.lognormal(np.log(50), 0.3, size=(2, 400))
    assert call(_est(runs_a, runs_b), "higher") == "no meaningful difference"
    assert call(_est(lat_a, lat_b, median), "lower") == "no meaningful difference"


def test_false_alarms_stay_near_the_nominal_rate() -> None:
    """Over 200 same-distribution pairs, a 95 % interval calls a change about 5 % of the time."""
    rng = np.random.default_rng(3)
    calls = []
    for i in range(200):
        a, b = rng.lognormal(np.log(40), 0.3, size=(2, 60))
        est = estimate(a, b, stat=median, resamples=500, rng=seeded_rng(i, "fa"))
        calls.append(call(est, "lower"))
    rate = sum(c != "no meaningful difference" for c in calls) / len(calls)
    assert rate < 0.12


def test_direction_is_right_for_latency_and_throughput() -> None:
    """Lower latency is better, lower throughput is worse."""
    rng = np.random.default_rng(4)
    slow = rng.lognormal(np.log(100), 0.1, size=300)
    quick = rng.lognormal(np.log(90), 0.1, size=300)
    assert call(_est(slow, quick, median), "lower") == "better"
    assert call(_est(quick, slow, median), "lower") == "worse"
    runs = np.array([100.0, 101.0, 99.5, 100.4])
    assert call(_est(runs, runs * 0.9), "higher") == "worse"


def test_one_run_gives_a_ratio_but_no_interval() -> None:
    """n=1 on either side: the ratio is reported, the interval is not, and no call is made."""
    est = _est(np.array([100.0, 101.0, 99.0]), np.array([110.0]))
    assert est is not None
    assert est.ratio == pytest.approx(1.1)
    assert (est.ratio_low, est.ratio_high, est.has_interval) == (None, None, False)
    assert call(est, "higher") == "1 run, no interval"


def test_no_values_is_no_data() -> None:
    """A side without finite values cannot be compared."""
    assert _est(np.array([np.nan]), np.array([1.0, 2.0])) is None
    assert call(None, "higher") == "no data"


def test_resampling_is_seeded() -> None:
    """The same data and seed give the same interval; another seed gives another."""
    rng = np.random.default_rng(5)
    a, b = rng.normal(10, 1, size=(2, 50))
    first, again, other = _est(a, b, seed=1), _est(a, b, seed=1), _est(a, b, seed=2)
    assert first == again
    assert first != other


def test_campaign_comparison_calls_each_variant(tmp_path: Path) -> None:
    """The constructed campaign: fast is better, spec has one run, oom a crash row, uncompared."""
    path = tmp_path / "c.db"
    build(path)
    with Store.open(path) as store:
        report = build_report(store)
    rows = {row.name: row for row in report.variants}
    assert list(rows) == ["baseline", "fast", "oom", "spec"]
    assert (rows["oom"].status, rows["oom"].kind) == ("crash", "oom")
    assert rows["oom"].hint == "lower --mem-fraction-static or batch size"
    for load in report.loads:
        fast = report.get("fast", load, "output_throughput")
        spec = report.get("spec", load, "output_throughput")
        assert fast is not None
        assert spec is not None
        assert fast.call == "better"
        assert spec.call == "1 run, no interval"
        assert report.get("oom", load, "output_throughput") is None  # never compared
    assert rows["oom"].not_compared == "not compared: it did not start"
    tpot = report.get("fast", "c=16", "tpot_ms_p50")
    assert tpot is not None
    assert tpot.call == "better"  # 5 % lower inter-token time, thousands of requests
    assert report.loads == ("c=1", "c=4", "c=16")
    headline = report.headline("fast")
    assert headline is not None
    assert headline.load == "c=16"


def _start(store: Store, cid: int, variant: str, key: str, elapsed: float) -> int:
    aid = store.start_attempt(
        cid,
        variant=variant,
        server_key=key,
        command=["serve"],
        env={},
        host="local",
        versions={},
        git_commit=None,
    )
    store.record_verdict(aid, {"status": "ready", "elapsed_s": elapsed, "phases": []})
    store.finish_attempt(aid, AttemptStatus.DONE)
    return aid


def test_startup_is_compared_cold_and_warm(tmp_path: Path) -> None:
    """First starts are compared with first starts, later ones with later ones."""
    with Store.open(tmp_path / "s.db") as store:
        cid = store.campaign("boot", "cfg", "baseline")
        _start(store, cid, "baseline", "b", 60.0)
        _start(store, cid, "jit", "j", 90.0)
        for warm in (20.0, 20.5, 19.8):
            _start(store, cid, "baseline", "b", warm)
        for warm in (25.0, 25.4, 24.9):
            _start(store, cid, "jit", "j", warm)
        report = build_report(store, "boot")
    by_kind = {c.temperature: c for c in report.startup}
    assert by_kind["cold"].call == "1 run, no interval"
    assert by_kind["cold"].estimate is not None
    assert by_kind["cold"].estimate.ratio == pytest.approx(1.5)
    assert by_kind["warm"].call == "worse"
    jit = next(row for row in report.variants if row.name == "jit")
    assert (jit.cold_startup_s, jit.warm_startups_s) == (90.0, (25.0, 25.4, 24.9))


def test_a_bench_only_variant_uses_the_server_it_was_measured_on(tmp_path: Path) -> None:
    """A variant measured on another variant's server reports that server's startup."""
    with Store.open(tmp_path / "s.db") as store:
        cid = store.campaign("shared", "cfg", "baseline")
        aid = _start(store, cid, "baseline", "b", 30.0)
        for variant in ("baseline", "long-prompts"):
            store.record_point(
                aid,
                variant=variant,
                load="c=4",
                repeat=0,
                result={"summary": {"output_throughput": 10.0}, "completed": 1, "failed": 0},
            )
        report = build_report(store, cid)
    row = next(r for r in report.variants if r.name == "long-prompts")
    assert (row.status, row.shared_server_of, row.cold_startup_s) == ("done", "baseline", 30.0)


@pytest.mark.parametrize("q", [None, 0.5, 0.25, 0.9, 0.99, 0.0, 1.0])
def test_resampling_by_counts_matches_resampling_the_values(q: float | None) -> None:
    """The count-based statistic of a resample equals numpy's on the resampled values."""
    rng = np.random.default_rng(6)
    values = rng.lognormal(3, 0.5, size=101)
    picks = rng.integers(0, values.size, size=(50, values.size))
    ordered = np.sort(values)
    rank = np.argsort(values, kind="stable")
    position = np.empty_like(rank)
    position[rank] = np.arange(values.size)
    counts = np.zeros((50, values.size), dtype=np.int64)
    for row, pick in enumerate(picks):
        np.add.at(counts[row], position[pick], 1)
    stat = Statistic(q=q)
    expected = [stat.of(values[pick]) for pick in picks]
    np.testing.assert_allclose(stat.resampled(ordered, counts), expected, rtol=1e-12)


def test_a_load_only_one_side_measured_is_a_no_data_comparison(tmp_path: Path) -> None:
    """The variant measured a load its reference did not: that load is still compared,
    with no estimate and the call "no data" (the console's "-" under it, a JSON entry)."""
    from tests.report.starts import Campaign

    with Store.open(tmp_path / "s.db") as store:
        campaign = Campaign(store)
        campaign.measured("baseline", [[100.0, 101.0], [99.0, 100.5]], load="c=1")
        for start in range(2):
            aid = campaign.start("fast")
            for repeat, load in enumerate(("c=1", "c=4")):
                campaign.point(aid, "fast", load, start * 2 + repeat, throughput=120.0)
            campaign.stop(aid)
        report = build_report(store, "c")
    measured = report.get("fast", "c=1", "output_throughput")
    assert measured is not None and measured.call == "better"
    unmeasured = report.get("fast", "c=4", "output_throughput")
    assert unmeasured is not None
    assert (unmeasured.estimate, unmeasured.call) == (None, "no data")
    assert {c.load for c in report.comparisons if c.variant == "fast"} == {"c=1", "c=4"}
