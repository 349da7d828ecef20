"""The streaming HTTP client against real servers: framings, and the simulated engine."""

from __future__ import annotations

import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator

import pytest
from tests.bench.conftest import stop_server
from tests.conftest import free_port

from servegate.bench import BenchSettings, run_point


def test_body_read_until_close_with_crlf_events(sse_server: Callable[..., str]) -> None:
    """A body without chunked coding, ended by closing, with CRLF event separators."""
    url = sse_server("--until-close", "--ttft-ms", "5", "--itl-ms", "2")
    result = run_point(BenchSettings(url=url, concurrency=2, requests=6, input_len=4, output_len=5))
    assert (result.completed, result.failed) == (6, 0)
    assert all(len(s.chunks_s) == 5 and s.usage_output_tokens == 5 for s in result.samples)


def test_zero_delay_bursts_count_every_token(sse_server: Callable[..., str]) -> None:
    """Hundreds of events per socket read are all counted (the pattern-counting path)."""
    url = sse_server()
    result = run_point(
        BenchSettings(url=url, concurrency=8, requests=32, input_len=4, output_len=300)
    )
    assert result.completed == 32
    assert all(len(s.chunks_s) == 300 for s in result.samples)
    assert not [w for w in result.warnings if "token" in w]


@pytest.fixture
def sim() -> Iterator[str]:
    """``servegate sim`` as a vLLM with 20 ms TTFT and 5 ms steps, started for the test."""
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "servegate",
            "sim",
            "--engine",
            "vllm",
            "--port",
            str(port),
            "--startup",
            "0",
            "--ttft-ms",
            "20",
            "--itl-ms",
            "5",
            "--batch-slowdown",
            "0",
            "--jitter",
            "0",
            "--prefill-tok-s",
            "0",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            with urllib.request.urlopen(url + "/v1/models", timeout=1):
                break
        except OSError:
            if time.monotonic() > deadline or proc.poll() is not None:
                stop_server(proc)
                pytest.fail("the simulator did not start")
            time.sleep(0.1)
    yield url
    stop_server(proc)


def test_against_the_simulator(sim: str) -> None:
    """The simulated vLLM: delays measured, counters diffed, model discovered."""
    result = run_point(
        BenchSettings(url=sim, concurrency=4, requests=12, input_len=8, output_len=6)
    )
    assert (result.completed, result.failed) == (12, 0)
    # configured 20 ms and 5 ms; 10x allowed on a busy machine (precise figures: bench/)
    assert 18.0 <= result.summary["ttft_ms_p50"] <= 200.0
    assert 0.5 <= result.summary["itl_ms_p50"] <= 50.0
    counters = result.server_metrics["counters"]
    assert counters["generation_tokens"]["delta"] == result.summary["total_output_tokens"] == 72
