"""A minimal HTTP/1.1 client for streaming responses: keep-alive connections as protocols.

General-purpose clients pay per HTTP chunk: a buffer entry, a wake-up, flow-control
bookkeeping. A token stream is one small chunk per token, so at tens of thousands of
tokens per second that overhead becomes the client's ceiling. Here each connection is an
`asyncio.Protocol`: every socket read arrives in `data_received`, gets one timestamp,
is de-chunked with bytes operations and handed to the response's event parser, with no
coroutine switch per chunk. Only what a benchmark needs is supported: one request at a
time per connection, ``Content-Length``, chunked and read-until-close bodies, 1xx skips,
TLS through the event loop. Requests ask for ``Accept-Encoding: identity``; a compressed
response is a ``bad_response`` that says so, since timing compressed token streams
would time the compressor's buffering.

A kept-alive connection is reused only while nothing says it is over: a response's
``Connection: close``, an end of stream from the server (seen in ``eof_received``, or by
a zero-wait poll of the socket when the connection leaves the pool), or the idle time a
``Keep-Alive: timeout=N`` header allows. A chunked
body ends after its last chunk's trailer section, so the next request never goes out
while a byte of the previous response is still on its way.
"""

from __future__ import annotations

import asyncio
import select
import socket
import ssl
import struct
import sys
from collections.abc import Callable
from itertools import repeat
from time import perf_counter, perf_counter_ns, time_ns
from typing import Any
from urllib.parse import urlsplit

MAX_HEAD = 65536

_HEAD, _CHUNKED, _LENGTH, _UNTIL_CLOSE, _TRAILER, _DONE = range(6)
IDLE_MARGIN_S = 1.0  # stop reusing this long before a server's Keep-Alive timeout


class HttpFailure(Exception):
    """The response broke HTTP framing or the response's own parser refused it."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(detail)
        self.kind = kind
        self.detail = detail


class Sink:
    """What a connection feeds: the status, then body bytes with their read time."""

    status: int = 0

    def head(self, status: int) -> None:
        """The response's status code."""
        self.status = status

    def feed(self, payload: bytes, now: float) -> None:
        """Body bytes (de-chunked) read at ``now``; may raise HttpFailure."""

    def close(self, now: float) -> None:
        """The body ended normally; may raise HttpFailure."""


class ReadClock:
    """When the event loop last learned that sockets were readable.

    All sockets found readable by one ``select`` had their data in the kernel at that
    moment; stamping each read with it, rather than with the time its callback finally
    runs, keeps a burst of simultaneous responses from being timed one callback apart.
    """

    def __init__(self) -> None:
        self.at = perf_counter()

    @classmethod
    def install(cls, loop: asyncio.AbstractEventLoop) -> ReadClock | None:
        """Hook the loop's selector; None when the loop has no selector to hook."""
        selector = getattr(loop, "_selector", None)
        select = getattr(selector, "select", None)
        if selector is None or select is None:
            return None
        clock = cls()

        def timed_select(timeout: float | None = None) -> Any:
            events = select(timeout)
            clock.at = perf_counter()
            return events

        selector.select = timed_select
        return clock


_SO_TIMESTAMPNS = 35  # Linux: SO_TIMESTAMPNS_OLD, a struct timespec of CLOCK_REALTIME
_TIMESPEC = struct.Struct("qq")
_ANCILLARY = 64  # room for one timestamp's control message
_STAMP_SLACK_S = (10.0, 1.0)  # a kernel stamp this far before / after the select is a clock step


class StampedSocket:
    """A transport's TCP socket read with ``recvmsg``, so each read has the kernel's time.

    With ``SO_TIMESTAMPNS`` the kernel stamps every segment as it arrives; a read returns
    the stamp of the last segment it took. That is when the bytes were there, however
    long the event loop took to come round to this socket: a burst of thousands of
    simultaneous responses, parsed one callback after another, or a wave that lands
    while the loop is still parsing the previous one, keeps each read's own time. The
    stamp is ``CLOCK_REALTIME``; it is moved onto ``perf_counter`` by the offset between
    the two clocks read when the socket was wrapped.

    Everything but ``recv`` goes to the socket itself.
    """

    __slots__ = ("_offset_ns", "_sock", "at")

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._offset_ns = time_ns() - perf_counter_ns()
        self.at = 0.0  # perf_counter time of the last read's newest byte; 0: none given

    @classmethod
    def wrap(cls, transport: asyncio.BaseTransport) -> StampedSocket | None:
        """Put a stamped socket under a plain TCP transport; None where that cannot be done.

        Linux only, and only for asyncio's own selector transport reading with
        ``recv`` (TLS, other event loops and other systems keep the select's time).
        """
        if sys.platform != "linux":
            return None
        sock = getattr(transport, "_sock", None)
        if type(sock) is not socket.socket or sock.type != socket.SOCK_STREAM:
            return None
        if not hasattr(transport, "_read_ready__data_received"):
            return None  # not the selector transport whose reads go through sock.recv
        try:
            sock.setsockopt(socket.SOL_SOCKET, _SO_TIMESTAMPNS, 1)
        except OSError:
            return None
        stamped = cls(sock)
        transport._sock = stamped  # type: ignore[attr-defined]
        return stamped

    def recv(self, size: int) -> bytes:
        data, ancillary, _flags, _addr = self._sock.recvmsg(size, _ANCILLARY)
        self.at = 0.0
        for level, kind, raw in ancillary:
            if level == socket.SOL_SOCKET and kind == _SO_TIMESTAMPNS and len(raw) >= 16:
                sec, nsec = _TIMESPEC.unpack_from(raw)
                self.at = (sec * 1_000_000_000 + nsec - self._offset_ns) * 1e-9
        return data

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sock, name)


class Connection(asyncio.Protocol):
    """One keep-alive connection carrying one streaming request at a time."""

    def __init__(self, clock: ReadClock | None = None) -> None:
        self.clock = clock
        self.transport: asyncio.Transport | None = None
        self._stamped: StampedSocket | None = None  # the kernel's receive times, where read
        self.closed = False
        self.received = False  # a byte of the current response's status line arrived
        self._sink: Sink | None = None
        self._done: asyncio.Future[str | None] | None = None
        self._state = _DONE
        self._buf = b""
        self._left = 0  # bytes left in the current chunk, or of a Content-Length body
        self._crlf = False  # a chunk's trailing CRLF is still to skip
        self._keep = True
        self._idle_s: float | None = None  # how long it may sit idle (Keep-Alive: timeout)
        self._ended = 0.0  # when the last response ended

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        if self.clock is not None:
            self._stamped = StampedSocket.wrap(transport)

    def eof_received(self) -> bool | None:
        # the server closed its side: never send on this connection again
        self.closed = True
        return None  # close the transport; connection_lost ends a request in flight

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self._sink is None:
            return
        if self._state in (_UNTIL_CLOSE, _TRAILER):
            self._finish(None)  # a body read until close, or all but the final CRLF
        else:
            self._finish("connection_reset")

    def request(self, data: bytes, sink: Sink) -> asyncio.Future[str | None]:
        """Send one request; the future ends with None (done) or a failure kind."""
        assert self.transport is not None
        loop = asyncio.get_running_loop()
        self._done = loop.create_future()
        self._sink = sink
        self._state = _HEAD
        self._buf = b""
        self._left = 0
        self._crlf = False
        self._keep = True
        self._idle_s = None
        self.received = False
        if self.closed:  # lost between connecting and this request: the server hung up
            self._sink = None
            self._state = _DONE
            self._done.set_result("connection_reset")
            return self._done
        self.transport.write(data)
        return self._done

    def abort(self, kind: str) -> None:
        """End the current request with failure ``kind`` and drop the connection."""
        self._finish(kind)
        self.closed = True
        if self.transport is not None:
            self.transport.abort()

    @property
    def reusable(self) -> bool:
        """True when another request may use this connection."""
        if self.closed or not self._keep or self._state != _DONE:
            return False
        transport = self.transport
        if transport is None or transport.is_closing():
            return False
        return self._idle_s is None or perf_counter() - self._ended < self._idle_s

    def stale(self) -> bool:
        """True when the idle socket is readable: an end of stream not handled yet.

        The task that sends the next request can run before the event loop reads the
        server's FIN; one zero-wait ``poll`` when the connection leaves the pool catches it.
        """
        transport = self.transport
        sock = transport.get_extra_info("socket") if transport is not None else None
        poll = getattr(select, "poll", None)
        if sock is None or poll is None:
            return False
        poller = poll()
        poller.register(sock.fileno(), select.POLLIN)
        return bool(poller.poll(0))

    def _finish(self, error: str | None) -> None:
        sink, done = self._sink, self._done
        self._sink = None
        if self._state != _DONE and error is not None:
            self._keep = False
        self._state = _DONE
        self._ended = now = perf_counter()
        if done is not None and not done.done():
            if error is None and sink is not None:
                try:
                    sink.close(now)
                except HttpFailure as exc:
                    done.set_exception(exc)
                    return
            done.set_result(error)

    def data_received(self, data: bytes) -> None:
        clock = self.clock
        now = clock.at if clock is not None else perf_counter()
        stamped = self._stamped
        if stamped is not None:
            at = stamped.at  # the kernel's time for these bytes, unless a clock stepped
            if now - _STAMP_SLACK_S[0] < at < now + _STAMP_SLACK_S[1]:
                now = at
        sink = self._sink
        if sink is None:
            self._keep = False  # bytes nobody asked for: this connection is not reused
            return
        try:
            if self._state == _HEAD:
                data = self._head(data, sink)
                if self._state == _HEAD:
                    return  # the headers are not complete yet
            state = self._state
            payload = b""
            if not data or state == _DONE:
                pass
            elif state == _CHUNKED:
                payload = self._dechunk(data)
            elif state == _LENGTH:
                payload = data[: self._left]
                self._left -= len(payload)
                if self._left == 0:
                    self._state = _DONE
                    if len(data) > len(payload):
                        self._keep = False  # bytes after the body: not reused
            elif state == _TRAILER:
                self._trailer(data)
            else:
                payload = data
            if payload:
                sink.feed(payload, now)
        except HttpFailure as exc:
            done = self._done
            self._sink = None
            self._state = _DONE
            self._keep = False
            if done is not None and not done.done():
                done.set_exception(exc)
            if self.transport is not None:
                self.transport.abort()
            return
        if self._state == _DONE:
            self._finish(None)
            if not self._keep and self.transport is not None:
                self.transport.close()

    def _head(self, data: bytes, sink: Sink) -> bytes:
        """Parse the status line and headers; return the body bytes that followed."""
        buf = self._buf + data if self._buf else data
        while True:
            buf = buf.lstrip(b"\r\n")  # empty lines before a status line are skipped
            if buf:
                self.received = True
            end = buf.find(b"\r\n\r\n")
            if end < 0:
                if len(buf) > MAX_HEAD:
                    raise HttpFailure("bad_response", "response headers too long")
                self._buf = buf
                return b""
            lines = buf[:end].split(b"\r\n")
            status_line = lines[0]
            if not status_line.startswith(b"HTTP/1.") or len(status_line) < 12:
                raise HttpFailure("bad_response", f"not an HTTP response: {status_line[:60]!r}")
            try:
                status = int(status_line[9:12])
            except ValueError:
                raise HttpFailure("bad_response", f"bad status line {status_line[:60]!r}") from None
            buf = buf[end + 4 :]
            if 100 <= status < 200:
                continue  # an interim response: the real one follows
            break
        self._buf = b""
        chunked, length = False, -1
        self._keep = status_line.startswith(b"HTTP/1.1")
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            name = name.strip().lower()
            if name == b"transfer-encoding":
                chunked = b"chunked" in value.lower()
            elif name == b"content-length":
                try:
                    length = int(value.strip())
                except ValueError:
                    raise HttpFailure("bad_response", "bad Content-Length") from None
            elif name == b"connection":
                tokens = value.lower()
                if b"close" in tokens:
                    self._keep = False
                elif b"keep-alive" in tokens:
                    self._keep = True
            elif name == b"keep-alive":
                self._idle_s = _idle_allowance(value)
            elif name == b"content-encoding" and value.strip().lower() not in (b"", b"identity"):
                coding = value.strip().decode("latin-1")[:40]
                raise HttpFailure(
                    "bad_response",
                    f"the response is compressed (Content-Encoding: {coding}) although the "
                    "request asked for identity; turn compression off for text/event-stream "
                    "on the server or its proxy",
                )
        sink.head(status)
        if chunked:
            self._state = _CHUNKED
        elif length >= 0:
            self._left = length
            self._state = _LENGTH if length else _DONE
        else:
            self._state = _UNTIL_CLOSE
            self._keep = False
        return buf

    def _dechunk(self, data: bytes) -> bytes:
        """The payload bytes of ``data`` under chunked transfer coding."""
        if not self._buf and not self._left and not self._crlf and data[-2:] == b"\r\n":
            whole = _whole_chunks(data)
            if whole is not None:
                payload, last = whole
                if last:
                    self._state = _DONE
                return payload
        if self._buf:
            data = self._buf + data
            self._buf = b""
        out: list[bytes] = []
        pos, n = 0, len(data)
        while pos < n:
            left = self._left
            if left:
                take = min(left, n - pos)
                out.append(data[pos : pos + take])
                pos += take
                self._left = left - take
                if self._left == 0:
                    self._crlf = True
                continue
            if self._crlf:
                if n - pos < 2:
                    self._buf = data[pos:]
                    break
                pos += 2
                self._crlf = False
                continue
            eol = data.find(b"\r\n", pos)
            if eol < 0:
                if n - pos > 1024:
                    raise HttpFailure("bad_response", "chunk size line too long")
                self._buf = data[pos:]
                break
            try:
                size = int(data[pos:eol], 16)
            except ValueError:
                size = _chunk_size(data[pos:eol])
            if size < 0:
                raise HttpFailure("bad_response", f"bad chunk size {data[pos:eol][:20]!r}")
            pos = eol + 2
            if size == 0:
                self._state = _TRAILER
                self._trailer(data[pos:])
                break
            end = pos + size
            if end + 2 <= n:  # the whole chunk and its CRLF are here: one step
                out.append(data[pos:end])
                pos = end + 2
                continue
            self._left = size
        return out[0] if len(out) == 1 else b"".join(out)

    def _trailer(self, data: bytes) -> None:
        """Skip the trailer section after the last chunk: the body ends at its empty line."""
        buf = self._buf + data if self._buf else data
        if buf.startswith(b"\r\n"):
            end = 2
        else:
            found = buf.find(b"\r\n\r\n")
            if found < 0:
                if len(buf) > MAX_HEAD:
                    raise HttpFailure("bad_response", "chunked trailer too long")
                self._buf = buf
                return
            end = found + 4
        self._buf = b""
        self._state = _DONE
        if len(buf) > end:
            self._keep = False  # bytes after the response: the connection is not reused


def _whole_chunks(data: bytes) -> tuple[bytes, bool] | None:
    """(payload, last) when ``data`` is whole chunks, each ``SIZE CRLF DATA CRLF``, maybe
    ended by the last chunk ``0 CRLF CRLF`` (no trailer); None for anything else, which
    the general loop then reads (a chunk cut by the read, a CRLF inside a chunk's data,
    a size with an extension).

    The usual read of a stream: one chunk, or a burst of them. Split at CRLF, sizes and
    data alternate; the check that every size is its data's length runs in C (``map``),
    not in a Python loop per chunk.
    """
    parts = data.split(b"\r\n")
    parts.pop()  # data ends with CRLF: the empty piece after it
    last = len(parts) >= 2 and parts[-1] == b"" and parts[-2] == b"0"
    if last:
        del parts[-2:]
    if not parts or len(parts) % 2:
        return None
    sizes, chunks = parts[0::2], parts[1::2]
    try:
        if list(map(int, sizes, repeat(16))) != list(map(len, chunks)):
            return None
    except ValueError:
        return None
    if not all(chunks):
        return None  # a zero size before the end: the general loop decides
    return (chunks[0] if len(chunks) == 1 else b"".join(chunks)), last


def _chunk_size(line: bytes) -> int:
    """The size of a chunk size line with extensions (``1a;name=value``)."""
    try:
        return int(line.split(b";", 1)[0], 16)
    except ValueError:
        raise HttpFailure("bad_response", f"bad chunk size {line[:20]!r}") from None


def _idle_allowance(value: bytes) -> float | None:
    """Seconds a connection may stay idle under ``Keep-Alive: timeout=N``, or None.

    Reuse stops `IDLE_MARGIN_S` (at most half of N) before the server's own deadline, so a
    request is not sent just as the server closes the connection.
    """
    for part in value.split(b","):
        name, _, number = part.partition(b"=")
        if name.strip().lower() == b"timeout":
            try:
                timeout = float(number.strip())
            except ValueError:
                return None
            return max(0.0, timeout - min(IDLE_MARGIN_S, timeout / 2))
    return None


class Pool:
    """Keep-alive connections to one origin, opened on demand and reused."""

    def __init__(self, url: str, clock: ReadClock | None = None) -> None:
        self.clock = clock
        parts = urlsplit(url)
        self.host = parts.hostname or "127.0.0.1"
        self.tls = parts.scheme == "https"
        self.port = parts.port or (443 if self.tls else 80)
        self.path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        default = (self.tls and self.port == 443) or (not self.tls and self.port == 80)
        host = f"[{self.host}]" if ":" in self.host else self.host
        self.authority = host if default else f"{host}:{self.port}"
        self._ssl = ssl.create_default_context() if self.tls else None
        self._idle: list[Connection] = []
        self._all: set[Connection] = set()
        self.opened = [0, 0]  # connections opened: [read with the kernel's stamps, not]

    def idle(self) -> Connection | None:
        """A kept-alive connection ready for a request, without waiting, or None."""
        while self._idle:
            conn = self._idle.pop()
            if conn.reusable and not conn.stale():
                return conn
            self._drop(conn)
        return None

    async def acquire(self, *, fresh: bool = False) -> tuple[Connection, bool]:
        """A connection and whether it was idle in the pool; OSError when connecting fails.

        ``fresh`` opens a new connection even when an idle one is there.
        """
        if not fresh:
            conn = self.idle()
            if conn is not None:
                return conn, True
        loop = asyncio.get_running_loop()
        _, conn = await loop.create_connection(
            lambda: Connection(self.clock),
            self.host,
            self.port,
            ssl=self._ssl,
            server_hostname=self.host if self.tls else None,
        )
        self._all.add(conn)
        self.opened[conn._stamped is None] += 1
        return conn, False

    @property
    def read_stamps(self) -> str:
        """``kernel`` when every connection opened read the kernel's receive stamps,
        ``select`` when none did (or none was opened), else ``mixed``."""
        kernel, other = self.opened
        return "mixed" if kernel and other else "kernel" if kernel else "select"

    def release(self, conn: Connection) -> None:
        """Return a connection after its response; it is dropped unless reusable."""
        if conn.reusable:
            self._idle.append(conn)
        else:
            self._drop(conn)

    def _drop(self, conn: Connection) -> None:
        """Forget a connection that will not be used again, closing it."""
        self._all.discard(conn)
        if conn.transport is not None and not conn.closed:
            conn.transport.close()

    async def fill(self, count: int) -> None:
        """Open up to ``count`` idle connections ahead of use (errors are left for later)."""

        async def one() -> None:
            try:
                conn, _ = await self.acquire(fresh=True)
            except OSError:
                return
            self._idle.append(conn)

        await asyncio.gather(*(one() for _ in range(count - len(self._idle))))

    def close(self) -> None:
        """Close every connection."""
        for conn in self._all:
            if conn.transport is not None:
                conn.transport.close()
        self._all.clear()
        self._idle.clear()


def request_bytes(pool: Pool, headers: dict[str, str]) -> Callable[[bytes], bytes]:
    """A function that frames a POST of a JSON body to the pool's path."""
    head = (
        f"POST {pool.path} HTTP/1.1\r\nHost: {pool.authority}\r\n"
        "Accept: text/event-stream\r\nAccept-Encoding: identity\r\nConnection: keep-alive\r\n"
        + "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    ).encode("latin-1")

    def frame(body: bytes) -> bytes:
        return b"%sContent-Length: %d\r\n\r\n%s" % (head, len(body), body)

    return frame
