"""Arrivals (issue 24, item 3): ``--rate`` sweeps, ``--burstiness`` (gamma gaps), and the
offered against the achieved rate in every point, against the real simulator.

The coefficient of variation (CV) of gamma gaps with shape B is 1/sqrt(B). Its estimate
from n gaps has a relative standard error of about sqrt((2 + 6/B) / (4n) + 1/(B n))
(the delta method on the sample standard deviation and mean, dropping their positive
covariance, which only makes the bound wider); the tolerances below are 4 of those.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tests.conftest import vllm_simulators

from servegate.bench import arrival_offsets

SIM = ("--startup", "0", "--ttft-ms", "5", "--itl-ms", "2")
SHORT = ("--input-len", "8", "--output-len", "3")


def cv_tolerance(burstiness: float, n: int) -> float:
    """Four relative standard errors of the CV estimated from ``n`` gamma gaps."""
    b = burstiness
    return 4 * math.sqrt((2 + 6 / b) / (4 * n) + 1 / (b * n))


def cv(gaps: np.ndarray) -> float:
    return float(gaps.std(ddof=1) / gaps.mean())


@pytest.fixture
def sim() -> Iterator[Callable[..., str]]:
    """A factory: ``sim(*flags)`` -> the base URL of a running simulator; all are stopped."""
    yield from vllm_simulators()


def bench(*args: str) -> subprocess.CompletedProcess[str]:
    """The command line, output captured."""
    return subprocess.run(
        [sys.executable, "-m", "servegate", "bench", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )


def points_of(path: Path) -> list[dict[str, Any]]:
    return list(json.loads(path.read_text())["points"])


@pytest.mark.parametrize("burstiness", [0.25, 0.5, 1.0, 2.0, 4.0])
def test_schedule_gaps_have_the_gamma_cv(burstiness: float) -> None:
    """The generator's gaps: mean 1/rate, CV 1/sqrt(B), within 4 standard errors."""
    n = 20_000
    gaps = np.diff([0.0, *arrival_offsets(10.0, n, None, seed=11, burstiness=burstiness)])
    expected = 1 / math.sqrt(burstiness)
    assert abs(cv(gaps) / expected - 1) < cv_tolerance(burstiness, n)
    assert gaps.mean() == pytest.approx(0.1, rel=4 / math.sqrt(burstiness * n))


def test_burstiness_one_is_the_poisson_schedule_of_before() -> None:
    """B = 1 draws the same exponential gaps as the Poisson schedule servegate always made,
    so older rows (Poisson) are rows of burstiness 1."""
    rng = np.random.default_rng(5)
    before = [float(x) for x in np.cumsum(rng.exponential(1 / 8.0, 100))]
    assert before == arrival_offsets(8.0, 100, None, seed=5, burstiness=1.0)


def test_a_rate_list_runs_each_point_with_offered_and_achieved(
    sim: Callable[..., str], tmp_path: Path
) -> None:
    """--rate 20,40 measures two points, each with its offered, sent and achieved rate in
    the JSON and an arrivals line on the terminal; no cap by default."""
    url = sim(*SIM)
    out = tmp_path / "r.json"
    done = bench("--url", url, "--rate", "20,40", "--requests", "30", *SHORT, "--json-file",
                 str(out))  # fmt: skip
    assert done.returncode == 0, done.stderr
    points = points_of(out)
    assert [p["label"] for p in points] == ["rate=20/s", "rate=40/s"]
    for point, rate in zip(points, (20, 40), strict=True):
        summary = point["summary"]
        assert point["settings"]["rate"] == rate
        assert point["settings"]["concurrency"] is None
        assert point["settings"]["burstiness"] == 1.0
        assert summary["offered_rate"] == rate
        sends = sorted(s["send_s"] for s in point["samples"])
        # the JSON keeps send times to the microsecond: over a span under a second that
        # moves the rate by up to about 2e-6 of itself
        assert summary["sent_rate"] == pytest.approx(29 / (sends[-1] - sends[0]), rel=1e-5)
        assert summary["achieved_rate"] == pytest.approx(summary["request_throughput"])
    assert done.stdout.count("  arrivals            offered ") == 2


def test_rates_cross_concurrency_caps(sim: Callable[..., str], tmp_path: Path) -> None:
    """--rate 20,40 --concurrency 1,2: four points, each rate under each cap (as campaigns)."""
    url = sim(*SIM)
    out = tmp_path / "r.json"
    done = bench("--url", url, "--rate", "20,40", "--concurrency", "1,2", "--requests", "8",
                 *SHORT, "--json-file", str(out))  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert [p["label"] for p in points_of(out)] == [
        "rate=20/s, c<=1", "rate=20/s, c<=2", "rate=40/s, c<=1", "rate=40/s, c<=2",
    ]  # fmt: skip


def test_closed_loop_states_it_has_no_offered_rate(sim: Callable[..., str], tmp_path: Path) -> None:
    """A closed loop has no schedule: offered_rate is null, sent and achieved are measured."""
    url = sim(*SIM)
    out = tmp_path / "c.json"
    done = bench("--url", url, "--concurrency", "2", "--requests", "10", *SHORT,
                 "--json-file", str(out))  # fmt: skip
    assert done.returncode == 0, done.stderr
    summary = points_of(out)[0]["summary"]
    assert summary["offered_rate"] is None
    assert summary["achieved_rate"] > 0
    assert "closed loop (no offered rate)" in done.stdout


@pytest.mark.parametrize("burstiness", [0.25, 4.0])
def test_client_send_times_follow_the_burstiness(
    sim: Callable[..., str], tmp_path: Path, burstiness: float
) -> None:
    """The scheduled times the client logs are the generator's; the gaps between the send
    times it logs have CV 1/sqrt(B) within 4 standard errors of n = 240 gaps.

    At 40/s the mean gap is 25 ms; a send lag of a few ms moves the CV by a few percent,
    well inside the tolerance (25% at B = 4, 58% at B = 0.25).
    """
    url = sim(*SIM)
    out = tmp_path / "b.json"
    n = 241
    done = bench("--url", url, "--rate", "40", "--burstiness", str(burstiness), "--requests",
                 str(n), "--seed", "3", *SHORT, "--json-file", str(out))  # fmt: skip
    assert done.returncode == 0, done.stderr
    point = points_of(out)[0]
    samples = point["samples"]
    scheduled = sorted(s["scheduled_s"] for s in samples)
    # the JSON keeps microseconds
    assert scheduled == pytest.approx(arrival_offsets(40.0, n, None, 3, burstiness), abs=1e-6)
    gaps = np.diff(sorted(s["send_s"] for s in samples))
    expected = 1 / math.sqrt(burstiness)
    assert abs(cv(gaps) / expected - 1) < cv_tolerance(burstiness, n - 1)
    assert point["settings"]["burstiness"] == burstiness
    assert f"burstiness {burstiness:g}" in done.stdout


def test_bad_burstiness_is_one_sentence() -> None:
    """--burstiness 0: exit 2, one sentence naming the flag, before anything is sent."""
    done = bench("--url", "http://127.0.0.1:9", "--rate", "4", "--burstiness", "0")
    assert done.returncode == 2
    assert "--burstiness must be a positive number" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_bad_rate_list_is_one_sentence() -> None:
    """--rate 2,,4 and a repeated rate: exit 2 with one sentence naming --rate."""
    for text in ("2,,4", "2,2"):
        done = bench("--url", "http://127.0.0.1:9", "--rate", text)
        assert done.returncode == 2, text
        assert "--rate" in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1
