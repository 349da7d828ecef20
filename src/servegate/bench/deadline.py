"""HTTP requests bounded as a whole: the probe request, ``/v1/models`` and ``/metrics``.

urllib's ``timeout`` bounds each socket operation, not the request: a server that sends
its headers or body one byte a second never lets one read wait that long, and the
request runs for ever. Under `within`, every connection opened through its ``open`` is
shut at the deadline (the blocked read then returns at once), and what the block was
doing ends with `Late`.

    with within(20.0) as client:
        with client.open(request) as resp:
            body = resp.read()
"""

from __future__ import annotations

import contextlib
import http.client
import socket
import threading
import urllib.request
from collections.abc import Iterator
from typing import Any

__all__ = ["Late", "Opener", "within"]


class Late(TimeoutError):
    """The request did not complete within its deadline."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"no complete answer within {seconds:g} s")
        self.seconds = seconds


class _Sockets:
    """The sockets opened under one deadline, shut all at once when it passes."""

    def __init__(self) -> None:
        self.open: list[socket.socket] = []
        self.expired = threading.Event()
        self._lock = threading.Lock()

    def add(self, sock: socket.socket | None) -> None:
        if sock is None:
            return
        with self._lock:
            self.open.append(sock)
            expired = self.expired.is_set()
        if expired:
            self._shut(sock)

    def expire(self) -> None:
        with self._lock:
            self.expired.set()
            sockets = list(self.open)
        for sock in sockets:
            self._shut(sock)

    @staticmethod
    def _shut(sock: socket.socket) -> None:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


def _connection(base: type[http.client.HTTPConnection], sockets: _Sockets) -> Any:
    """An ``http.client`` connection class whose sockets ``sockets`` records."""

    class Connection(base):  # type: ignore[valid-type,misc]
        def connect(self) -> None:
            super().connect()
            sockets.add(self.sock)

    return Connection


class _HttpHandler(urllib.request.HTTPHandler):
    def __init__(self, sockets: _Sockets) -> None:
        super().__init__()
        self._class = _connection(http.client.HTTPConnection, sockets)

    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(self._class, req)


class _HttpsHandler(urllib.request.HTTPSHandler):
    def __init__(self, sockets: _Sockets) -> None:
        super().__init__()
        self._class = _connection(http.client.HTTPSConnection, sockets)

    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(self._class, req, context=self._context)  # type: ignore[attr-defined]


class Opener:
    """Opens requests whose connections end at the deadline of their `within`."""

    def __init__(self, sockets: _Sockets, seconds: float) -> None:
        self._opener = urllib.request.build_opener(_HttpHandler(sockets), _HttpsHandler(sockets))
        self._seconds = seconds

    def open(self, request: urllib.request.Request | str) -> Any:
        """``urlopen`` (HTTPError for an error status), bounded by the deadline."""
        return self._opener.open(request, timeout=self._seconds)


@contextlib.contextmanager
def within(seconds: float) -> Iterator[Opener]:
    """An `Opener` whose requests, and the block's reading of them, end within
    ``seconds``; `Late` when the deadline cut them off, whatever the block raised."""
    sockets = _Sockets()
    timer = threading.Timer(seconds, sockets.expire)
    timer.daemon = True
    timer.start()
    try:
        yield Opener(sockets, seconds)
    except Exception:
        if sockets.expired.is_set():
            raise Late(seconds) from None
        raise
    finally:
        timer.cancel()
    if sockets.expired.is_set():
        raise Late(seconds)
