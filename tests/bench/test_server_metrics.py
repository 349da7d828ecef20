"""The engine's /metrics counters, read before and after a point."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable

from servegate.bench import BenchSettings, run_point
from servegate.bench.server_metrics import scrape


def test_counter_deltas_match_the_run(sse_server: Callable[..., str]) -> None:
    """Generated-token and prompt-token deltas equal what the run's requests carried."""
    url = sse_server()
    result = run_point(
        BenchSettings(url=url, concurrency=2, requests=10, warmup=3, input_len=7, output_len=9)
    )
    server = result.server_metrics
    assert server["available"] is True
    # warmup and probe happen before the first scrape: only the measured run is counted
    assert server["counters"]["generation_tokens"]["delta"] == 90
    assert server["counters"]["prompt_tokens"]["delta"] == 70


def test_spec_acceptance_length(sse_server: Callable[..., str]) -> None:
    """Acceptance length is 1 + accepted / drafts over the run (vLLM's formula)."""
    url = sse_server("--spec-accept", "2.5")
    result = run_point(BenchSettings(url=url, concurrency=2, requests=6, input_len=5, output_len=8))
    assert result.server_metrics["spec_acceptance_length"] == 2.5


def test_server_ttft_histogram_mean(sse_server: Callable[..., str]) -> None:
    """The server's own TTFT histogram gives its mean over the run, beside ours."""
    url = sse_server("--ttft-ms", "30", "--itl-ms", "1")
    result = run_point(BenchSettings(url=url, concurrency=2, requests=6, input_len=5, output_len=2))
    server_ttft = result.server_metrics["server_latency_ms"]["ttft_ms_mean"]
    assert 29.0 <= server_ttft <= 300.0  # 30 ms configured; 10x allowed when busy
    assert result.summary["ttft_ms_mean"] >= server_ttft


def test_metrics_absent_or_disabled(sse_server: Callable[..., str]) -> None:
    """An empty --metrics-url disables scraping; the point still completes."""
    url = sse_server()
    result = run_point(
        BenchSettings(url=url, concurrency=1, requests=2, input_len=5, output_len=2, metrics_url="")
    )
    assert result.server_metrics == {"available": False, "url": None}
    assert result.completed == 2


def test_a_metrics_body_cut_short_is_no_scrape() -> None:
    """A /metrics reply that promises more bytes than it sends is absent, not a crash."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]

        def serve() -> None:
            conn, _ = listener.accept()
            with conn:
                conn.recv(65536)
                conn.sendall(
                    b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 500\r\n\r\n"
                    b"vllm:num_requests_running 1\n"
                )

        thread = threading.Thread(target=serve)
        thread.start()
        try:
            assert scrape(f"http://127.0.0.1:{port}/metrics", timeout_s=10.0) is None
        finally:
            thread.join()
