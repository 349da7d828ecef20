"""The capacity search's decision core, without a server: the fit, the stop rule, the
probe sequence."""

from __future__ import annotations

import numpy as np

from servegate.bench.capacity import Search, SearchOptions, isotonic
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
