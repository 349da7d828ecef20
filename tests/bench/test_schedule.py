"""The Poisson schedule: planned before the run, reproducible, and kept."""

from __future__ import annotations

import itertools
from collections.abc import Callable

import numpy as np
import pytest

from servegate.bench import BenchSettings, arrival_offsets, run_point


def test_schedule_is_poisson_and_seeded() -> None:
    """Gaps average 1/rate with the exponential's spread; the same seed gives the same plan."""
    offsets = arrival_offsets(50.0, 4000, None, seed=3)
    gaps = np.diff([0.0, *offsets])
    assert gaps.mean() == pytest.approx(1 / 50, rel=0.05)
    assert gaps.std() == pytest.approx(1 / 50, rel=0.08)  # exponential: std == mean
    assert offsets == arrival_offsets(50.0, 4000, None, seed=3)
    assert offsets != arrival_offsets(50.0, 4000, None, seed=4)


def test_duration_schedule_stops_at_the_duration() -> None:
    """A duration-bounded schedule plans arrivals only inside the duration."""
    offsets = arrival_offsets(100.0, None, 2.0, seed=0)
    assert 150 <= len(offsets) <= 250
    assert max(offsets) <= 2.0


def test_rate_run_sends_on_schedule(sse_server: Callable[..., str]) -> None:
    """Requests leave at their planned times: never early, planned times recorded.

    How late they leave is the client's send lag, a figure measured in bench/ (about a
    millisecond); here it only has to stay far below the 25 ms mean gap between
    arrivals times ten, which a busy 2-core machine does not reach.
    """
    url = sse_server("--ttft-ms", "5", "--itl-ms", "2")
    result = run_point(
        BenchSettings(
            url=url, concurrency=None, rate=40.0, requests=30, input_len=5, output_len=3, seed=1
        )
    )
    assert result.completed == 30
    planned = arrival_offsets(40.0, 30, None, seed=1)
    assert sorted(s.scheduled_s or 0.0 for s in result.samples) == pytest.approx(planned)
    lags = sorted(s.send_s - (s.scheduled_s or 0.0) for s in result.samples)
    assert lags[0] >= -1e-6  # a request never leaves before its planned time
    assert lags[len(lags) // 2] < 0.25
    assert result.client.send_lag_ms_p50 is not None and result.client.send_lag_ms_p50 < 250


def test_concurrency_cap_under_a_rate(sse_server: Callable[..., str]) -> None:
    """With a cap of 1, requests never overlap even when the schedule wants them to."""
    url = sse_server("--ttft-ms", "30", "--itl-ms", "1")
    result = run_point(
        BenchSettings(url=url, concurrency=1, rate=200.0, requests=8, input_len=5, output_len=2)
    )
    spans = sorted((s.send_s, s.send_s + s.end_s) for s in result.samples)
    assert all(nxt[0] >= prev[1] - 1e-4 for prev, nxt in itertools.pairwise(spans))


def test_duration_bounds_a_closed_loop(sse_server: Callable[..., str]) -> None:
    """--duration: requests are sent only inside the duration, then the point ends."""
    url = sse_server("--ttft-ms", "10", "--itl-ms", "2")
    result = run_point(
        BenchSettings(
            url=url, concurrency=2, requests=None, duration_s=0.6, input_len=4, output_len=3
        )
    )
    assert result.completed >= 6  # requests of about 16 ms, two at a time: ~75 nominal
    assert max(s.send_s for s in result.samples) <= 0.6 + 0.1  # deadline check, then send
    assert result.summary["duration_s"] < 0.6 + 3.0  # the ones in flight finish, nothing else
