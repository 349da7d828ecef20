"""The client's open-files limit is the client's: checked before a point, raised where the
hard limit allows, refused in one sentence where it does not, and a socket the client
could not open (EMFILE) is a failure kind of its own, never the server's."""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import urllib.request
from collections.abc import Callable
from typing import Any


def bench(url: str, soft: int, hard: int, *args: str) -> subprocess.CompletedProcess[str]:
    """``servegate bench --json`` under ``ulimit -n`` of ``soft`` (hard ``hard``)."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))

    return subprocess.run(
        [sys.executable, "-m", "servegate", "bench", "--url", url, "--json", "-q", *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        preexec_fn=limit,
    )


def stats(url: str) -> dict[str, Any]:
    """The test server's own record (its request count)."""
    with urllib.request.urlopen(url + "/stats", timeout=30) as resp:
        return dict(json.load(resp))


def test_a_concurrency_the_hard_limit_cannot_hold_is_exit_2_before_any_request(
    sse_server: Callable[..., str],
) -> None:
    """--concurrency 3000 under ulimit -n 1024 (hard 1024): exit 2 naming ulimit -n and
    the number needed; not one request reached the server."""
    url = sse_server()
    done = bench(url, 1024, 1024, "--concurrency", "3000", "--requests", "3000")
    assert done.returncode == 2, done.stderr
    error = json.loads(done.stdout)["error"]
    assert error.startswith("--concurrency 3000 needs ")
    needed = int(error.split(" needs ")[1].split()[0])
    assert needed > 1500  # its share of 2 workers and the process's own files
    assert f"ulimit -n allows 1024 (hard limit): raise it with ulimit -n {needed}" in error
    assert "--workers 4" in error  # 3000 streams in 4 processes fit under 1024 each
    assert stats(url)["requests"] == 0


def test_the_soft_limit_is_raised_where_the_hard_one_allows(
    sse_server: Callable[..., str],
) -> None:
    """--concurrency 1500 in one worker under a soft limit of 1024 (hard 4096): the soft
    limit is raised, every request completes; none fails with the client's EMFILE."""
    url = sse_server()
    done = bench(url, 1024, 4096, "--concurrency", "1500", "--requests", "1500", "--workers", "1")
    assert done.returncode == 0, done.stderr
    (point,) = json.loads(done.stdout)["points"]
    assert ({}, 1500) == (point["failures"], point["completed"])


def test_emfile_in_an_uncapped_open_loop_is_the_clients_failure(
    sse_server: Callable[..., str],
) -> None:
    """An open loop without a cap in one worker under a hard limit of 256, against a server
    that holds each request 5 s (all 600 leave within a fraction of that): the requests
    the client had no socket for fail as client_fd_limit (not connect_error), the server
    is not declared gone, and a warning says whose limit it was."""
    url = sse_server("--ttft-ms", "5000")
    done = bench(
        url, 256, 256, "--rate", "5000", "--requests", "600", "--output-len", "2", "--workers", "1"
    )
    assert done.returncode == 0, done.stderr
    (point,) = json.loads(done.stdout)["points"]
    assert set(point["failures"]) == {"client_fd_limit"}, point["failures"]
    assert point["completed"] + point["failures"]["client_fd_limit"] == 600
    assert point["completed"] > 0
    assert point["server_gone_s"] is None
    assert any("ran out of open files (EMFILE)" in w for w in point["warnings"])


def test_the_need_counts_every_stream_of_the_busiest_process() -> None:
    """A closed loop without --concurrency sends every request at once: each is a stream;
    an open loop without a cap is estimated from its rate and timeout (not a bound)."""
    from servegate.bench.fds import RESERVE, need
    from servegate.bench.settings import BenchSettings

    url = "http://127.0.0.1:1"
    at_once, bound = need(BenchSettings(url=url, concurrency=None, requests=3000, workers=3))
    assert (at_once - RESERVE, bound) == (1000, True)
    paced, bound = need(
        BenchSettings(url=url, concurrency=None, rate=10.0, requests=5000, timeout_s=60, workers=2)
    )
    assert (paced - RESERVE, bound) == (300, False)
