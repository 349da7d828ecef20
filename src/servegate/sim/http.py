"""A lean HTTP/1.1 server protocol on asyncio: keep-alive, Content-Length bodies, chunked
streaming responses.

The simulator must stream far faster than any client it measures, so the per-request
path is a header split and a dict, and a streamed write is one ``transport.write`` of
already-framed bytes. Requests on one connection are answered in order; a handler owns
the connection until it calls ``finish`` (or ``end_stream``).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from email.utils import formatdate

__all__ = ["Connection", "HttpRequest", "reason"]

MAX_HEAD = 64 * 1024
MAX_BODY = 32 * 1024 * 1024

_REASONS = {
    200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed",
    411: "Length Required", 413: "Payload Too Large", 431: "Request Header Fields Too Large",
    500: "Internal Server Error", 503: "Service Unavailable",
}  # fmt: skip


def reason(status: int) -> str:
    """The reason phrase of ``status``."""
    return _REASONS.get(status, "Unknown")


_date_cache: tuple[int, bytes] = (0, b"")


def _date() -> bytes:
    global _date_cache
    now = int(time.time())
    if _date_cache[0] != now:
        _date_cache = (now, formatdate(now, usegmt=True).encode())
    return _date_cache[1]


@dataclass(frozen=True, slots=True, kw_only=True)
class HttpRequest:
    """One parsed request."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    peer: str


Handler = Callable[["Connection", HttpRequest], None]


class Connection(asyncio.Protocol):
    """One client connection; ``handler`` is called once per complete request."""

    def __init__(self, handler: Handler, server_name: bytes) -> None:
        self.handler = handler
        self.server_name = server_name
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.busy = False
        self.keep_alive = True
        self.closed = False
        self.paused = False
        self.on_resume: Callable[[], None] | None = None
        self.on_close: Callable[[], None] | None = None
        self.peer = "-"

    # --- asyncio.Protocol ---------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        sock = transport.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        peer = transport.get_extra_info("peername")
        if peer:
            self.peer = f"{peer[0]}:{peer[1]}"

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if not self.busy:
            self._next()

    def eof_received(self) -> bool:
        # the client closed its side: as for uvicorn, that is the client gone, so the
        # request in progress is abandoned now, before a step still due is written
        self._gone()
        return False  # the transport closes

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._gone()

    def _gone(self) -> None:
        """The client went away (an end of file, a reset, a failed write): tell the
        request in progress, once."""
        callback, self.on_close = self.on_close, None
        if callback is not None:
            callback()

    def pause_writing(self) -> None:
        self.paused = True

    def resume_writing(self) -> None:
        self.paused = False
        callback, self.on_resume = self.on_resume, None
        if callback is not None:
            callback()

    # --- parsing ------------------------------------------------------------------------

    def _next(self) -> None:
        """Parse and dispatch the next complete request in the buffer, if any."""
        if self.closed or self.busy:
            return
        end = self.buffer.find(b"\r\n\r\n")
        if end < 0:
            if len(self.buffer) > MAX_HEAD:
                self._fail(431, "Request headers are too large.")
            return
        head = bytes(self.buffer[:end]).decode("latin-1")
        lines = head.split("\r\n")
        parts = lines[0].split(" ")
        if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
            self._fail(400, "Malformed request line.")
            return
        method, target, version = parts
        headers: dict[str, str] = {}
        for line in lines[1:]:
            name, sep, value = line.partition(":")
            if not sep:
                self._fail(400, "Malformed header line.")
                return
            headers[name.strip().lower()] = value.strip()
        if "chunked" in headers.get("transfer-encoding", "").lower():
            self._fail(411, "Chunked request bodies are not supported; send Content-Length.")
            return
        try:
            length = int(headers.get("content-length", "0"))
        except ValueError:
            self._fail(400, "Content-Length is not a number.")
            return
        if length < 0 or length > MAX_BODY:
            self._fail(413, "The request body is too large.")
            return
        if len(self.buffer) < end + 4 + length:
            return
        body = bytes(self.buffer[end + 4 : end + 4 + length])
        del self.buffer[: end + 4 + length]
        connection = headers.get("connection", "").lower()
        self.keep_alive = connection != "close" and (
            version == "HTTP/1.1" or connection == "keep-alive"
        )
        self.busy = True
        path = target.split("?", 1)[0]
        self.handler(
            self, HttpRequest(method=method, path=path, headers=headers, body=body, peer=self.peer)
        )

    def _fail(self, status: int, message: str) -> None:
        from servegate.sim.api import error_body

        self.keep_alive = False
        self.busy = True
        self.respond(status, error_body(status, message, "BadRequestError"))

    # --- responses ----------------------------------------------------------------------

    def _head(self, status: int, content_type: bytes, extra: bytes) -> bytes:
        return b"HTTP/1.1 %d %s\r\ndate: %s\r\nserver: %s\r\ncontent-type: %s\r\n%s" % (
            status,
            reason(status).encode(),
            _date(),
            self.server_name,
            content_type,
            extra,
        )

    def respond(self, status: int, body: bytes, content_type: bytes = b"application/json") -> None:
        """Send a whole response and move on to the next request."""
        if self.closed or self.transport is None:
            return
        extra = b"content-length: %d\r\n" % len(body)
        if not self.keep_alive:
            extra += b"connection: close\r\n"
        self.transport.write(self._head(status, content_type, extra) + b"\r\n" + body)
        self.finish()

    def start_stream(self, first: bytes = b"") -> None:
        """Send the headers of a chunked ``text/event-stream`` response (and ``first``)."""
        if self.closed or self.transport is None:
            return
        extra = b"transfer-encoding: chunked\r\n"
        if not self.keep_alive:
            extra += b"connection: close\r\n"
        head = self._head(200, b"text/event-stream; charset=utf-8", extra) + b"\r\n"
        if first:
            head += b"%x\r\n%s\r\n" % (len(first), first)
        self.transport.write(head)

    def send(self, data: bytes) -> None:
        """Send one HTTP chunk."""
        if not self.closed and self.transport is not None and data:
            self.transport.write(b"%x\r\n%s\r\n" % (len(data), data))

    def end_stream(self, last: bytes = b"") -> None:
        """Send ``last`` and the terminating chunk, then move on."""
        if self.closed or self.transport is None:
            return
        if last:
            self.transport.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(last), last))
        else:
            self.transport.write(b"0\r\n\r\n")
        self.finish()

    def finish(self) -> None:
        """The current request is answered: close, or serve the next one."""
        self.busy = False
        self.on_close = None
        self.on_resume = None
        if self.transport is None or self.closed:
            return
        if not self.keep_alive:
            self.transport.close()
            return
        if self.buffer:
            self._next()

    def abort(self) -> None:
        """Drop the connection at once (a crashing server)."""
        if self.transport is not None and not self.closed:
            self.transport.abort()
