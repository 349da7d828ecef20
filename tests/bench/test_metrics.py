"""Metric definitions (vLLM's) on known timings: constructed samples and a real server."""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest

from servegate.bench import BenchSettings, RequestSample, run_point
from servegate.bench.metrics import summarize


def _sample(
    send: float, chunks: tuple[float, ...], usage: int | None, end: float = 0.0
) -> RequestSample:
    return RequestSample(
        index=0,
        send_s=send,
        scheduled_s=None,
        chunks_s=chunks,
        end_s=end or (chunks[-1] if chunks else 0.0),
        usage_output_tokens=usage,
        usage_input_tokens=10,
        input_len=10,
        output_len=len(chunks),
    )


def test_definitions_on_constructed_samples() -> None:
    """TTFT, E2EL, TPOT, pooled ITL and throughputs follow vLLM's definitions exactly."""
    a = _sample(0.0, (0.1, 0.2, 0.4), usage=3, end=0.5)  # gaps 0.1, 0.2
    b = _sample(1.0, (0.3, 0.4), usage=4, end=0.4)  # 4 tokens in 2 chunks, gap 0.1
    failed = RequestSample(
        index=2,
        send_s=0.5,
        scheduled_s=None,
        chunks_s=(),
        end_s=0.1,
        usage_output_tokens=None,
        usage_input_tokens=None,
        input_len=10,
        output_len=3,
        error="http_500",
    )
    s = summarize([a, b, failed])
    assert s["ttft_ms_mean"] == pytest.approx(200.0)  # (100 + 300) / 2
    assert s["e2el_ms_mean"] == pytest.approx(400.0)  # (400 + 400) / 2
    # TPOT per request: a (0.4-0.1)/(3-1)=150 ms, b (0.4-0.3)/(4-1)=33.3 ms
    assert s["tpot_ms_mean"] == pytest.approx((150.0 + 100.0 / 3) / 2)
    # ITL pools every chunk gap: 100, 200, 100
    assert s["itl_ms_mean"] == pytest.approx(400.0 / 3)
    assert s["itl_ms_p50"] == pytest.approx(100.0)
    # duration: first send (0.0) -> last completion (1.0 + 0.4)
    assert s["duration_s"] == pytest.approx(1.4)
    assert s["output_throughput"] == pytest.approx(7 / 1.4)
    assert s["request_throughput"] == pytest.approx(2 / 1.4)
    assert s["total_token_throughput"] == pytest.approx((7 + 20) / 1.4)


def test_no_completed_request_gives_empty_latencies() -> None:
    """Without a completed request, throughputs are 0 and latencies NaN, not an exception."""
    failed = RequestSample(
        index=0,
        send_s=0.0,
        scheduled_s=None,
        chunks_s=(),
        end_s=0.1,
        usage_output_tokens=None,
        usage_input_tokens=None,
        input_len=1,
        output_len=1,
        error="timeout",
    )
    s = summarize([failed])
    assert s["output_throughput"] == 0.0
    assert math.isnan(s["ttft_ms_p50"])


def test_known_delays_are_measured(sse_server: Callable[..., str]) -> None:
    """Against a server with 40 ms TTFT and 10 ms ITL, the summary shows those delays."""
    url = sse_server("--ttft-ms", "40", "--itl-ms", "10")
    result = run_point(
        BenchSettings(url=url, concurrency=4, requests=12, input_len=20, output_len=6)
    )
    s = result.summary
    assert (result.completed, result.failed) == (12, 0)
    # lower bounds are physical (the server writes no token earlier); upper bounds allow
    # 10x for a busy machine: bench/loadgen_fidelity.py measures the precise error
    assert 38.0 <= s["ttft_ms_p50"] <= 400.0
    assert 1.0 <= s["itl_ms_p50"] <= 100.0
    assert 1.0 <= s["tpot_ms_p50"] <= 100.0
    assert 88.0 <= s["e2el_ms_p50"] <= 900.0  # 40 + 5 * 10
    assert all(len(x.chunks_s) == 6 and x.usage_output_tokens == 6 for x in result.samples)
    assert s["total_output_tokens"] == 72


def test_chat_role_chunk_is_not_the_first_token(sse_server: Callable[..., str]) -> None:
    """The chat role-only delta, sent at once, does not count: TTFT waits for content."""
    url = sse_server("--ttft-ms", "60", "--itl-ms", "5")
    result = run_point(
        BenchSettings(url=url, api="chat", concurrency=2, requests=4, input_len=5, output_len=3)
    )
    assert result.completed == 4
    assert result.summary["ttft_ms_p50"] >= 55.0
    assert all(len(x.chunks_s) == 3 for x in result.samples)


def test_two_workers_measure_the_same_requests(sse_server: Callable[..., str]) -> None:
    """With two worker processes every request is measured once and merged in send order."""
    url = sse_server("--ttft-ms", "20", "--itl-ms", "5")
    result = run_point(
        BenchSettings(url=url, concurrency=4, requests=16, input_len=5, output_len=4, workers=2)
    )
    assert result.completed == 16
    assert result.client.workers == 2
    assert sorted(x.index for x in result.samples) == list(range(16))
    sends = [x.send_s for x in result.samples]
    assert sends == sorted(sends)
    assert 18.0 <= result.summary["ttft_ms_p50"] <= 200.0  # 20 ms, 10x allowed when busy


def test_progress_is_reported_while_running(sse_server: Callable[..., str]) -> None:
    """The progress callback sees done, failed and chunk counts during the run."""
    url = sse_server("--ttft-ms", "400", "--itl-ms", "5")
    seen: list[object] = []
    result = run_point(
        BenchSettings(url=url, concurrency=2, requests=6, input_len=3, output_len=2),
        progress=seen.append,
    )
    assert result.completed == 6
    assert seen
    last = seen[-1]
    assert getattr(last, "total", None) == 6
    assert 0 < getattr(last, "done", 0) <= 6
