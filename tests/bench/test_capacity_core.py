"""The capacity search's decision core, without a server: the fit, the stop rule, the
probe sequence."""

from __future__ import annotations

import math
from types import SimpleNamespace
from typing import cast

import numpy as np
import pytest

from servegate.bench.capacity import Probe, Search, SearchOptions, fit_capacity, isotonic
from servegate.bench.result import PointResult
from servegate.bench.sample import RequestSample
from servegate.bench.slo import StopRule, StopState, parse_slo


def _sample(tpot_ms: float, tokens: int = 11) -> RequestSample:
    step = tpot_ms / 1000.0
    return RequestSample(
        index=0, send_s=0.0, scheduled_s=None,
        chunks_s=tuple(0.01 + i * step for i in range(tokens)), end_s=0.01 + tokens * step,
        usage_output_tokens=tokens, usage_input_tokens=8, input_len=8, output_len=tokens,
    )  # fmt: skip


def test_isotonic_pools_adjacent_violators_by_weight() -> None:
    """[1, 3, 2, 4] with weights [1, 1, 3, 1] pools 3 and 2 into 2.25."""
    fit = isotonic(np.array([1.0, 3.0, 2.0, 4.0]), np.array([1.0, 1.0, 3.0, 1.0]))
    assert fit.tolist() == [1.0, 2.25, 2.25, 4.0]


def test_a_p99_probe_of_100_stops_at_its_second_violation() -> None:
    """N=100, p99: floor(99 x 0.99) = 98, so 100 - 98 = 2 requests beyond the bound make
    the percentile's lower sorted value beyond it: certain failure at the second."""
    rule = StopRule(targets=parse_slo("tpot_p99<=50ms"), planned=100)
    state = StopState()
    calls = [rule.observe(state, _sample(t)) for t in (10, 60, 10, 10, 70)]
    assert calls == [False, False, False, False, True]


def test_a_mean_target_stops_once_the_sum_seen_over_n_exceeds_it() -> None:
    """N=4, tpot_mean<=50ms: 100 + 90 = 190 ms seen, 190 / 4 < 50; + 30 = 220 / 4 > 50."""
    rule = StopRule(targets=parse_slo("tpot_mean<=50ms"), planned=4)
    state = StopState()
    assert [rule.observe(state, _sample(t)) for t in (100, 90, 30)] == [False, False, True]


def test_the_search_doubles_then_bisects_to_one_user() -> None:
    """Capacity 13 of 1..64: 1, 2, 4, 8, 16 (fails), then 12, 14 (fails), 13, and stop."""
    search = Search(SearchOptions(over="concurrency", low=1, high=64))
    seen = []
    while (load := search.next_load()) is not None:
        seen.append(load)
        search.record(load, load <= 13)
    assert seen == [1, 2, 4, 8, 16, 12, 14, 13]
    assert (search.passes, search.fails) == (13, 14)


def _probe(load: float, e2el_ms: np.ndarray, number: int) -> Probe:
    """A probe of requests with the given end-to-end latencies, sent in that order."""
    samples = [
        RequestSample(
            index=i,
            send_s=i * 0.01,
            scheduled_s=None,
            chunks_s=(0.001, v / 1000.0),
            end_s=v / 1000.0,
            usage_output_tokens=2,
            usage_input_tokens=8,
            input_len=8,
            output_len=2,
        )
        for i, v in enumerate(e2el_ms)
    ]
    result = SimpleNamespace(samples=samples, completed=len(samples), failed=0, summary={})
    return Probe(
        number=number, load=load, result=cast(PointResult, result), met=False,
        stopped_early=False, offered_rate=None, achieved_rate=0.0, queue_growing=False,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("slo", "rho"),
    [("e2el_mean<=290ms", 0.9), ("e2el_p90<=400ms", 0.0)],
    ids=["mean-of-correlated-requests", "p90-of-independent-requests"],
)
def test_the_capacity_interval_covers_the_truth_about_95_in_100(slo: str, rho: float) -> None:
    """Latency 100 + 10 x load ms on average, each request's off by 25 % (an AR(1) in send
    order with ``rho``: a queue's requests resemble their neighbours): 100 searches of 8
    probes of 200 requests each. The true capacity is where the model's statistic meets
    the bound; the interval holds it in 90 or more of them (the bootstrap of requests it
    replaced held it in 72 of 200 correlated searches, 182 of 200 independent ones)."""
    targets = parse_slo(slo)
    loads = [4.0, 8.0, 12.0, 16.0, 20.0, 24.0, 28.0, 32.0]
    z90 = 1.2815515655446004
    # mean: 100 + 10 L = 290 at L = 19; p90: (100 + 10 L)(1 + 0.25 z90) = 400
    truth = 19.0 if "mean" in slo else (400 / (1 + 0.25 * z90) - 100) / 10
    covered, widths = 0, []
    for seed in range(100):
        rng = np.random.default_rng(seed)
        probes = []
        search = Search(SearchOptions(over="rate", low=4, high=32))
        for number, load in enumerate(loads, 1):
            noise = np.empty(200)
            noise[0] = rng.standard_normal()
            for i in range(1, 200):
                noise[i] = rho * noise[i - 1] + math.sqrt(1 - rho * rho) * rng.standard_normal()
            probes.append(_probe(load, (100 + 10 * load) * (1 + 0.25 * noise), number))
        found = fit_capacity(probes, search.options, targets, None, search)
        assert found.low is not None and found.high is not None
        covered += found.low <= truth <= found.high
        widths.append(found.high - found.low)
    assert covered >= 90, covered
    # and narrow enough to say something: a few probes' spacing, not the whole range
    assert float(np.median(widths)) < (12.0 if rho else 4.0), np.median(widths)


def test_a_p99_of_too_few_requests_leaves_the_low_end_at_0_and_says_why() -> None:
    """200 requests a probe cannot bound a p99 from above at 95 % (368 can): the interval
    reaches 0 and the note names the target and the count that would bound it."""
    rng = np.random.default_rng(0)
    search = Search(SearchOptions(over="rate", low=4, high=32))
    probes = [
        _probe(load, (100 + 10 * load) * (1 + 0.25 * rng.standard_normal(200)), n)
        for n, load in enumerate([4.0, 8.0, 16.0, 24.0, 32.0], 1)
    ]
    found = fit_capacity(probes, search.options, parse_slo("e2el_p99<=450ms"), None, search)
    assert found.value is not None and 16 < found.value < 24
    assert found.low == 0.0
    assert found.note is not None
    assert "e2el_p99<=450ms" in found.note and "368 or more" in found.note, found.note
    more = [
        _probe(load, (100 + 10 * load) * (1 + 0.25 * rng.standard_normal(800)), n)
        for n, load in enumerate([4.0, 8.0, 16.0, 24.0, 32.0], 1)
    ]
    bounded = fit_capacity(more, search.options, parse_slo("e2el_p99<=450ms"), None, search)
    assert bounded.low is not None and bounded.low > 0.0 and bounded.note is None


def test_a_rate_capacity_is_refined_by_every_probe_near_the_crossing() -> None:
    """The margin is load / 42 (the capacity 42/s), each probe's mean read without noise
    except the failing probe right above the crossing, read 4 % high: the two probes
    around the crossing alone put it at 40.6; the line through the six probes within
    15 % of it puts it within 1 % of 42. A concurrency search keeps the two probes'
    crossing (its bisection ends at one user)."""
    loads = [16.0, 32.0, 38.0, 40.0, 41.0, 43.0, 44.0, 46.0, 64.0]
    read = {41.0: 41.0 / 42 * 1.04}
    probes = [
        _probe(load, np.full(200, 250.0 * read.get(load, load / 42)), n)
        for n, load in enumerate(loads, 1)
    ]
    rate = Search(SearchOptions(over="rate", low=16, high=64))
    found = fit_capacity(probes, rate.options, parse_slo("e2el_mean<=250ms"), None, rate)
    assert found.value is not None and abs(found.value - 42.0) < 0.42, found.value
    users = Search(SearchOptions(over="concurrency", low=16, high=64))
    kept = fit_capacity(probes, users.options, parse_slo("e2el_mean<=250ms"), None, users)
    assert kept.value == 40.0  # floor(40.6): the two probes around the crossing


def _arrival(index: int, at: float) -> RequestSample:
    return RequestSample(
        index=index, send_s=at, scheduled_s=at, chunks_s=(at + 0.01,), end_s=at + 0.02,
        usage_output_tokens=1, usage_input_tokens=8, input_len=8, output_len=1,
    )  # fmt: skip


def test_a_rate_probe_that_ran_its_window_is_held_at_its_count_over_the_window() -> None:
    """Poisson arrivals at 40/s over a 6 s window after a 1.5 s lead-in: the probe's rate
    is the count of its arrivals over 6 s, whose mean over 4,000 windows is 40 within
    0.1 %; (n - 1) / span, kept for a probe stopped early, reads about 1/n high."""
    from servegate.bench.capacity import measure_probe

    rng = np.random.default_rng(7)
    counted: list[float] = []
    spans: list[float] = []
    for _ in range(4000):
        times = np.sort(rng.uniform(1.5, 7.5, rng.poisson(40 * 6)))
        samples = [_arrival(i, float(t)) for i, t in enumerate(times)]
        for stopped, into in ((False, counted), (True, spans)):
            result = SimpleNamespace(
                samples=samples, completed=len(samples), failed=0, summary={"duration_s": 6.0},
                slo=None, stopped_early=stopped, server_metrics=None,
                settings=SimpleNamespace(open_loop=True),
            )  # fmt: skip
            probe = measure_probe(1, 40.0, cast(PointResult, result), 40.0, 6.0)
            assert probe.offered_rate is not None
            into.append(probe.offered_rate)
    assert abs(np.mean(counted) / 40.0 - 1.0) < 0.001
    assert np.mean(spans) / 40.0 - 1.0 > 0.002  # the span's estimate, about +0.4 %
