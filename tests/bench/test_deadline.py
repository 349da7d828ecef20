"""A server that trickles its answer a byte at a time: every request of bench is bounded
as a whole by its timeout, not per read (urllib's timeout never fires on a trickle)."""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator

import pytest

from servegate.bench.server_metrics import scrape


class Trickle:
    """Answers every connection with an HTTP status line and headers, a byte each 0.2 s,
    never finishing them."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.closing = threading.Event()
        self.conns: list[socket.socket] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        with contextlib.suppress(OSError):
            while True:
                conn, _ = self.sock.accept()
                self.conns.append(conn)
                threading.Thread(target=self._trickle, args=(conn,), daemon=True).start()

    def _trickle(self, conn: socket.socket) -> None:
        head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n" + b"X-Pad: " + b"a" * 10**6
        with contextlib.suppress(OSError):
            conn.recv(65536)
            for byte in head:
                if self.closing.wait(0.2):
                    return
                conn.sendall(bytes([byte]))

    def close(self) -> None:
        self.closing.set()
        self.sock.close()
        for conn in self.conns:
            conn.close()


@pytest.fixture
def trickle() -> Iterator[Trickle]:
    server = Trickle()
    yield server
    server.close()


def test_bench_timeout_bounds_a_server_that_trickles_its_headers(trickle: Trickle) -> None:
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


def test_metrics_scrape_is_bounded_as_a_whole(trickle: Trickle) -> None:
    """/metrics trickled: the scrape gives up at its timeout (None: no counters)."""
    assert scrape(trickle.url + "/metrics", timeout_s=1.0) is None
