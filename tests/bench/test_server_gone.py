"""A server that goes away mid-run is noticed: back-off, the point ends, exit 1."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from tests.bench.conftest import start_server, stop_server

from servegate.bench import BenchSettings, run_point

DEADLINE_S = 60.0


def _requests_served(url: str) -> int:
    with urllib.request.urlopen(url + "/stats", timeout=5) as resp:
        return int(json.loads(resp.read())["requests"])


def _final_stats(proc: subprocess.Popen[str]) -> dict[str, Any]:
    """Stop the test server and read the stats line it prints on SIGTERM."""
    proc.terminate()
    assert proc.stdout is not None
    out, _ = proc.communicate(timeout=DEADLINE_S)
    stats: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return stats


def _connection_failures(point: dict[str, Any]) -> int:
    """Samples that met no answering server: refused, or closed before any response byte."""
    return sum(
        1
        for s in point["samples"]
        if s["error"] == "connect_error"
        or (s["error"] == "connection_reset" and "before any byte" in (s["detail"] or ""))
    )


def test_killed_server_ends_the_point_and_exits_1(tmp_path: Path) -> None:
    """SIGKILL of the server mid-run: the point ends with the sentence, exit 1, and the
    connection attempts after the kill stay few (back-off, not thousands a second)."""
    proc, url = start_server("--ttft-ms", "2", "--itl-ms", "2")
    out = tmp_path / "r.json"
    cmd = [sys.executable, "-m", "servegate", "bench", "--url", url, "--concurrency", "4",
           "--requests", "20000", "--input-len", "4", "--output-len", "10", "--metrics-url", "",
           "--json-file", str(out)]  # fmt: skip
    bench = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + DEADLINE_S
        while _requests_served(url) < 60:
            assert time.monotonic() < deadline and bench.poll() is None, "no load arrived"
            time.sleep(0.05)
        proc.kill()
        stdout, stderr = bench.communicate(timeout=DEADLINE_S)
    finally:
        if bench.poll() is None:
            bench.kill()
            bench.communicate()
        stop_server(proc)
    assert bench.returncode == 1, stderr
    last = stderr.strip().splitlines()[-1]
    assert re.fullmatch(
        r"Error: c=4: the server stopped answering at t=\d+\.\ds .*; the point ended there; "
        r"\d+ of 20000 requests were not sent\.",
        last,
    ), last
    assert "c=4  model test-model" in stdout  # what was measured is still shown
    point = json.loads(out.read_text())["points"][0]
    assert point["completed"] >= 40
    assert point["server_gone_s"] is not None
    assert 0 < point["server_gone_s"] < max(s["send_s"] + s["end_s"] for s in point["samples"])
    assert _connection_failures(point) <= 4 + 20  # the first wave, then one probe at a time


@pytest.mark.parametrize(
    ("concurrency", "rate", "most"),
    [(8, None, 8 + 20), (8, 300.0, 8 + 20), (None, 300.0, 150)],
    ids=["closed-loop", "rate-capped", "rate"],
)
def test_hung_up_server_is_probed_with_backoff(
    concurrency: int | None, rate: float | None, most: int
) -> None:
    """A server closing every connection at once: it counts few attempts, and the point ends.

    At most the requests in flight fail at once, then one probe at a time goes out; an
    uncapped rate also sends the arrivals due before the first failure is seen.
    """
    proc, url = start_server("--hang-up-after", "1000", "--ttft-ms", "1", "--itl-ms", "1")
    try:
        result = run_point(
            BenchSettings(
                url=url,
                concurrency=concurrency,
                rate=rate,
                requests=5000,
                input_len=4,
                output_len=10,
                metrics_url="",
                workers=1,
            )
        )
    finally:
        stats = _final_stats(proc)
        stop_server(proc)
    assert result.server_gone_s is not None
    assert any(w.startswith("the server stopped answering at t=") for w in result.warnings)
    assert result.completed >= 10  # about 100 requests of 10 tokens before the hang-up
    assert len(result.samples) < 1000  # of 5000: the point ended
    assert stats["hung_up"] <= most
