"""A server that trickles its answer a byte at a time: every request of bench is bounded
as a whole by its timeout, not per read (urllib's timeout never fires on a trickle)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator

import pytest
from tests.listeners import Listener

from servegate.bench.server_metrics import scrape

HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n" + b"X-Pad: " + b"a" * 10**6


def trickle_head(conn: socket.socket, closing: threading.Event) -> None:
    """Answer with an HTTP status line and headers, a byte each 0.2 s, never finishing."""
    conn.recv(65536)
    for byte in HEAD:
        if closing.wait(0.2):
            return
        conn.sendall(bytes([byte]))


@pytest.fixture
def trickle() -> Iterator[Listener]:
    with Listener(trickle_head) as server:
        yield server


def test_bench_timeout_bounds_a_server_that_trickles_its_headers(trickle: Listener) -> None:
    """bench --timeout 2 against headers sent a byte each 0.2 s: exit 1 with one sentence
    naming --timeout and the JSON error object, instead of waiting for ever."""
    done = subprocess.run(
        [
            *(sys.executable, "-m", "servegate", "bench", "--url", trickle.url),
            *("--model", "m", "--requests", "2", "--timeout", "2", "--json"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    error = json.loads(done.stdout)
    assert error["schema"] == "servegate.error/1"
    assert "sent no complete answer within 2 s (--timeout)" in error["error"]
    assert "Traceback" not in done.stderr


def test_metrics_scrape_is_bounded_as_a_whole(trickle: Listener) -> None:
    """/metrics trickled: the scrape gives up at its timeout (None: no counters)."""
    assert scrape(trickle.url + "/metrics", timeout_s=1.0) is None
