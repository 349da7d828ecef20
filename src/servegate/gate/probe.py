"""Readiness probes, run in a thread so the gate's loop never waits on HTTP.

The probe GETs the engine's true readiness route (``/health``, ``/health_generate``;
never ``/v1/models``, which answers 200 while models still load) and, where the profile
asks for it, sends one real 1-token completion. It probes slowly until a ready line
is seen, then every few milliseconds, and wakes the loop through a pipe when it passes.
A profile with ``probe_absent_ok`` (llama-cpp-python has no ``/health``) also passes on
a 404 once a ready line was seen: the ready line decides, the answer proves the port.
A 4xx that waiting will not change (404: no such route) wakes the loop once (``a``), so
that the user hears at once that the server answers, but not at this URL.

Stopping never waits for a request in flight: its socket is shut down, and the thread
writes to a wake-up descriptor of its own, which it closes itself, so a probe that
outlives ``stop()`` (a connect that hangs) can never write into a reused descriptor.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import socket
import threading
import time
from urllib.parse import urlsplit

__all__ = ["Prober", "http_get_status"]

FAST_INTERVAL_S = 0.01
_STOP_JOIN_S = 0.5  # stop() waits this long at most for the thread to notice
_TRANSIENT_4XX = frozenset({408, 425, 429})  # timeout, too early, too many: ask again


def _connection(url: str, timeout_s: float) -> tuple[http.client.HTTPConnection, str]:
    parts = urlsplit(url)
    host = parts.hostname or "127.0.0.1"
    conn_cls = (
        http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    )
    conn = conn_cls(host, parts.port, timeout=timeout_s)
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    return conn, path


def http_get_status(url: str, timeout_s: float = 2.0) -> int:
    """The HTTP status of GET ``url``; raises OSError when nothing answers."""
    conn, path = _connection(url, timeout_s)
    try:
        conn.request("GET", path, headers={"Connection": "close"})
        response = conn.getresponse()
        response.read()
        return response.status
    finally:
        conn.close()


class Prober:
    """Probe ``url`` in a thread; write a byte to ``wake_fd`` when the server is ready."""

    def __init__(
        self,
        url: str,
        *,
        wake_fd: int,
        any_2xx: bool = False,
        absent_ok: bool = False,
        generate_url: str | None = None,
        model: str | None = None,
        interval_s: float = 0.5,
        timeout_s: float = 5.0,
    ) -> None:
        self.url = url
        self.generate_url = generate_url
        self.last_error = "not probed yet"
        self.ok_at: float | None = None  # monotonic time the probe passed
        self.at_once = False  # it passed on its first try: the server was up already
        self.route_absent = False  # it passed on a 404: the engine has no such route
        self.last_status: int | None = None  # the last HTTP status GET url gave, if any
        # the last 4xx that waiting will not turn into a pass (404 at a wrong URL)
        self.refused_status: int | None = None
        # the thread's own copy, closed by the thread: never written after being reused
        self._wake_fd = os.dup(wake_fd)
        self._any_2xx = any_2xx
        self._absent_ok = absent_ok
        self._line_seen = False
        self._model = model
        self._interval_s = interval_s
        self._timeout_s = timeout_s
        self._fast = False
        self._nudged = threading.Event()
        self._stopped = threading.Event()
        self._lock = threading.Lock()
        self._conn: http.client.HTTPConnection | None = None  # the request in flight
        self._thread = threading.Thread(target=self._run, name="servegate-probe", daemon=True)
        self._started = False

    def start(self) -> Prober:
        """Start probing; returns self."""
        self._started = True
        self._thread.start()
        return self

    def nudge(self) -> None:
        """A ready line was seen: probe now, then every few milliseconds."""
        self._line_seen = True
        self._fast = True
        self._nudged.set()

    def stop(self) -> None:
        """Stop probing: abort a request in flight; never wait on a server that hangs."""
        self._stopped.set()
        self._nudged.set()
        with self._lock:
            conn = self._conn
        if conn is not None and conn.sock is not None:
            with contextlib.suppress(OSError):
                conn.sock.shutdown(socket.SHUT_RDWR)  # a blocked read returns at once
        if not self._started:
            os.close(self._wake_fd)
        elif self._thread.is_alive():
            self._thread.join(_STOP_JOIN_S)

    def _run(self) -> None:
        first = True
        try:
            while not self._stopped.is_set():
                if self._check() and not self._stopped.is_set():
                    self.at_once = first
                    self.ok_at = time.monotonic()
                    with contextlib.suppress(OSError):
                        os.write(self._wake_fd, b"p")
                    return
                first = False
                interval = FAST_INTERVAL_S if self._fast else self._interval_s
                self._nudged.wait(interval)
                self._nudged.clear()
        finally:
            os.close(self._wake_fd)

    def _status(self, url: str, body: dict[str, object] | None = None) -> int:
        """GET ``url`` (POST ``body`` as JSON when given); the status. OSError if none."""
        conn, path = _connection(url, self._timeout_s)
        with self._lock:
            self._conn = conn
        try:
            if self._stopped.is_set():
                raise OSError("probe stopped")
            headers = {"Connection": "close"}
            if body is None:
                conn.request("GET", path, headers=headers)
            else:
                headers["Content-Type"] = "application/json"
                conn.request("POST", path, body=json.dumps(body).encode(), headers=headers)
            response = conn.getresponse()
            response.read()
            return response.status
        finally:
            with self._lock:
                self._conn = None
            conn.close()

    def _check(self) -> bool:
        try:
            status = self._status(self.url)
        except (OSError, http.client.HTTPException) as exc:
            self.last_error = f"GET {self.url}: {exc.__class__.__name__}: {exc}"
            return False
        self.last_status = status
        if status == 404 and self._absent_ok and self._line_seen:
            # no such route in this build; the ready line decides, and the server answers
            self.route_absent = True
        elif not (200 <= status < 300 if self._any_2xx else status == 200):
            self.last_error = f"GET {self.url} returned {status}"
            # a 404 where the route may be absent (absent_ok) waits for the ready line
            absent = status == 404 and self._absent_ok
            if 400 <= status < 500 and status not in _TRANSIENT_4XX and not absent:
                first = self.refused_status is None
                self.refused_status = status  # before the wake-up: the loop reads it then
                if first:
                    with contextlib.suppress(OSError):
                        os.write(self._wake_fd, b"a")
            return False
        if self.generate_url is None:
            return True
        body: dict[str, object] = {"prompt": "Hi", "max_tokens": 1, "temperature": 0}
        if self._model:
            body["model"] = self._model
        try:
            status = self._status(self.generate_url, body)
        except (OSError, http.client.HTTPException) as exc:
            self.last_error = f"POST {self.generate_url}: {exc.__class__.__name__}: {exc}"
            return False
        if not 200 <= status < 300:
            self.last_error = f"a 1-token completion at {self.generate_url} returned {status}"
            return False
        return True
