"""The one definition of TTFT, TPOT, E2EL and ITL (`servegate.bench.metrics`), on
hand-made arrays with known answers, and the store and the reports reading through it."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from servegate.bench import BenchSettings, ClientStats, PointResult, RequestSample
from servegate.bench.metrics import e2el, failures_by_kind, itl, summarize, tpot, ttft
from servegate.report.data import tpot_ms
from servegate.store import Store


def test_ttft_and_e2el_are_the_first_and_last_content_chunk() -> None:
    """Per request: the first and last chunk times; None for a request without content."""
    assert ttft((0.25, 0.5, 1.0)) == 0.25
    assert e2el((0.25, 0.5, 1.0)) == 1.0
    assert ttft((7.0,)) == e2el((7.0,)) == 7.0  # one chunk: both the same time
    assert ttft(()) is None
    assert e2el(()) is None


def test_tpot_on_known_arrays() -> None:
    """(E2EL - TTFT) / (tokens - 1), request by request, in the unit given."""
    got = tpot([100.0, 300.0, 50.0], [400.0, 400.0, 250.0], [3, 4, 5])
    np.testing.assert_array_equal(got, [150.0, 100.0 / 3, 50.0])
    assert got.dtype == np.float64


def test_tpot_leaves_out_single_token_and_missing_values() -> None:
    """A one-token request has no TPOT; a NaN time or token count (a row the store could
    not fill) is left out instead of turning the statistics into NaN."""
    got = tpot(
        [10.0, 10.0, math.nan, 10.0, 10.0],
        [10.0, 30.0, 50.0, 70.0, math.nan],
        [1, 3, 3, math.nan, 3],
    )
    np.testing.assert_array_equal(got, [10.0])  # only the second request counts
    assert tpot([], [], []).size == 0
    assert tpot([5.0], [5.0], [0]).size == 0  # zero tokens: not a division by -1


def test_itl_pools_every_gap_between_content_chunks() -> None:
    """Gaps within each request, pooled in request order; one-chunk requests add nothing."""
    got = itl([np.array([1.0, 3.0, 6.0]), (2.0,), [], [10.0, 10.5]])
    np.testing.assert_array_equal(got, [2.0, 3.0, 0.5])
    assert got.dtype == np.float64
    empty = itl([(1.0,), ()])
    assert empty.size == 0 and empty.dtype == np.float64


def _sample(
    index: int, chunks: tuple[float, ...], usage: int | None, error: str | None = None
) -> RequestSample:
    return RequestSample(
        index=index,
        send_s=0.1 * index,
        scheduled_s=None,
        chunks_s=chunks,
        end_s=chunks[-1] if chunks else 0.05,
        usage_output_tokens=usage,
        usage_input_tokens=8,
        input_len=8,
        output_len=4,
        error=error,
    )


SAMPLES = [
    _sample(0, (0.100, 0.150, 0.250, 0.400), usage=4),  # TPOT 100 ms, gaps 50, 100, 150
    _sample(1, (0.200,), usage=1),  # one token: TTFT = E2EL, no TPOT, no gap
    _sample(2, (0.050, 0.090), usage=None),  # no usage: 2 chunks count as 2 tokens
    _sample(3, (), usage=None, error="http_500"),  # failed: in no latency
    _sample(4, (0.010, 0.020), usage=2, error="timeout"),  # failed after content
]


def test_summary_of_a_point_uses_the_definitions() -> None:
    """Single-token outputs enter TTFT and E2EL only; failed requests enter nothing."""
    s = summarize(SAMPLES)
    assert s["ttft_ms_mean"] == pytest.approx((100.0 + 200.0 + 50.0) / 3)
    assert s["e2el_ms_mean"] == pytest.approx((400.0 + 200.0 + 90.0) / 3)
    assert s["tpot_ms_mean"] == pytest.approx((100.0 + 40.0) / 2)
    assert s["itl_ms_mean"] == pytest.approx((50.0 + 100.0 + 150.0 + 40.0) / 4)
    assert s["total_output_tokens"] == 4 + 1 + 2


def _point(samples: list[RequestSample]) -> PointResult:
    """A measured point as the load generator returns it."""
    completed = sum(1 for x in samples if x.ok)
    return PointResult(
        settings=BenchSettings(url="http://127.0.0.1:9", concurrency=1, requests=len(samples)),
        model="m",
        summary=summarize(samples),
        completed=completed,
        failed=len(samples) - completed,
        failures=failures_by_kind(samples),
        samples=samples,
        server_metrics={},
        warnings=[],
        client=ClientStats(
            workers=1,
            cpu_fraction=0.1,
            cpu_fraction_mean=0.1,
            loop_lag_ms_p50=0.0,
            loop_lag_ms_p99=0.0,
            loop_lag_ms_max=0.0,
        ),
        started_at="2026-12-03T00:00:00+00:00",
    )


def test_store_and_report_read_the_same_metrics(tmp_path: Path) -> None:
    """A point written to a real SQLite store reads back with the same TTFT, E2EL, ITL and
    (through the report's tpot_ms) TPOT as the point's own summary, failures left out."""
    with Store.open(tmp_path / "m.db") as store:
        cid = store.campaign("m", "", "a")
        aid = store.start_attempt(
            cid,
            variant="a",
            server_key="k",
            command=["x"],
            env={},
            host="h",
            versions={},
            git_commit=None,
        )
        pid = store.record_point(aid, variant="a", load="c=1", repeat=0, result=_point(SAMPLES))
        got = store.samples([pid])
    np.testing.assert_allclose(got.ttft_ms, [100.0, 200.0, 50.0])
    np.testing.assert_allclose(got.e2el_ms, [400.0, 200.0, 90.0])
    np.testing.assert_allclose(got.output_tokens, [4, 1, 2])
    # chunk times are stored as float32: equal to a few ulps
    np.testing.assert_allclose(got.itl_ms, [50.0, 100.0, 150.0, 40.0], rtol=1e-6)
    np.testing.assert_allclose(tpot_ms(got), [100.0, 40.0])
    assert got.errors == {"http_500": 1, "timeout": 1}
