"""A TCP listener for tests that plays a misbehaving peer, and closes everything it
accepted before ``close()`` returns.

A plain ``accept()`` loop in a daemon thread leaks: closing the listening socket does
not wake a thread blocked in ``accept()``, so a connection that arrives late is accepted
after the test has closed what it knew of, and its socket is collected (with a
ResourceWarning) during some later test. Here the accept loop polls, and every
connection is closed by the thread that handles it, which ``close()`` joins.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable


class Listener:
    """Accepts on 127.0.0.1 (a free port) and runs ``handle(conn, closing)`` for each
    connection in a thread of its own; the connection is closed when ``handle`` returns.
    ``handle`` must return soon after ``closing`` is set (wait on it, never sleep)."""

    def __init__(self, handle: Callable[[socket.socket, threading.Event], None]) -> None:
        self._handle = handle
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.05)
        self.port = int(self.sock.getsockname()[1])
        self.url = f"http://127.0.0.1:{self.port}"
        self.accepted = threading.Event()
        self.closing = threading.Event()
        self._threads = [threading.Thread(target=self._serve, daemon=True)]
        self._threads[0].start()

    def _serve(self) -> None:
        with self.sock:
            while not self.closing.is_set():
                try:
                    conn, _ = self.sock.accept()
                except TimeoutError:
                    continue
                conn.settimeout(None)
                self.accepted.set()
                thread = threading.Thread(target=self._run, args=(conn,), daemon=True)
                self._threads.append(thread)
                thread.start()

    def _run(self, conn: socket.socket) -> None:
        with conn, contextlib.suppress(OSError):
            self._handle(conn, self.closing)

    def close(self) -> None:
        """Stop accepting; every connection is closed before this returns."""
        self.closing.set()
        self._threads[0].join(10)  # nothing is accepted after this
        for thread in self._threads[1:]:
            thread.join(10)

    def __enter__(self) -> Listener:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def silent(conn: socket.socket, closing: threading.Event) -> None:
    """Accept and never say a word until the listener closes."""
    closing.wait()


def answering(answer: bytes) -> Callable[[socket.socket, threading.Event], None]:
    """Read one chunk, send ``answer``, then hold the connection open until closing."""

    def handle(conn: socket.socket, closing: threading.Event) -> None:
        conn.recv(1024)
        conn.sendall(answer)
        closing.wait()

    return handle
