"""A small OpenAI-compatible streaming server with exact delays and chosen failures.

Run as a script: ``python tests/bench/sse_server.py --port N [--ttft-ms 50 --itl-ms 10]``.
It speaks HTTP/1.1 with keep-alive on raw asyncio (no framework), streams one SSE event
per token on a drift-free schedule (token k is written at arrival + TTFT + k * ITL), and
keeps its own record of when it wrote what, served at ``/stats`` as JSON. With zero
delays every event of a response is written back to back, which makes it a fast
zero-delay server for measuring a client's ceiling. ``/metrics`` exposes vLLM-named
Prometheus counters. Failure flags make every K-th request fail in one chosen way;
``--sse-style`` frames events the other ways the SSE specification allows (CR or CRLF
line ends, no space after ``data:``, comments and other fields, data over several
lines); ``--huge-line-every K`` sends in every K-th stream one line of
``--huge-line-mib`` MiB that never ends; ``--gzip-every K`` compresses every K-th answer
unless the request asked for identity; ``--hang-up-after N`` plays a server that went
away after N tokens (every connection, open or new, is closed at once, and counted).
Prints ``listening on PORT``
once it accepts connections, and its stats as one JSON line when SIGTERM stops it.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import os
import re
import signal
import socket
import struct
import sys
import time

_CHAT_ROLE = {"role": "assistant", "content": ""}


SELECTED = [0.0]  # perf_counter() right after the event loop's last select
_OFFSET_NS = time.time_ns() - time.perf_counter_ns()  # CLOCK_REALTIME less CLOCK_MONOTONIC


class _KernelTimed:
    """A connection's socket read with recvmsg: ``at`` is the kernel's receive time.

    Written for this server apart from the client's code, so that the record it keeps
    does not share the client's errors: a request read while the loop is busy writing a
    wave of responses is timed when it arrived, not at the next select.
    """

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.at = 0.0

    def recv(self, size: int) -> bytes:
        data, ancillary, _, _ = self.sock.recvmsg(size, 64)
        self.at = 0.0
        for level, kind, raw in ancillary:
            if level == socket.SOL_SOCKET and kind == 35 and len(raw) >= 16:
                sec, nsec = struct.unpack_from("qq", raw)
                self.at = (sec * 1_000_000_000 + nsec - _OFFSET_NS) / 1e9
        return data

    def __getattr__(self, name: str) -> object:
        return getattr(self.sock, name)


def _kernel_timed(transport: asyncio.BaseTransport) -> _KernelTimed | None:
    sock = getattr(transport, "_sock", None)
    if sys.platform != "linux" or type(sock) is not socket.socket:
        return None
    try:
        sock.setsockopt(socket.SOL_SOCKET, 35, 1)  # SO_TIMESTAMPNS
    except OSError:
        return None
    timed = _KernelTimed(sock)
    transport._sock = timed  # type: ignore[attr-defined]
    return timed


def _time_selects(loop: asyncio.AbstractEventLoop) -> None:
    """Record when each select returns, so requests read in one burst share its time."""
    selector = getattr(loop, "_selector", None)
    if selector is None:
        return
    select = selector.select

    def timed(timeout: float | None = None) -> object:
        events = select(timeout)
        SELECTED[0] = time.perf_counter()
        return events

    selector.select = timed


_MAX_TOKENS = re.compile(rb'"max_tokens":\s*(\d+)')
STYLE = ["lf"]  # --sse-style
HUNG_UP = [False]  # --hang-up-after reached: every connection is closed at once
OPEN: set[Server] = set()
_CACHE: dict[tuple[bool, bool, str], tuple[bytes, bytes, bytes]] = {}


def _events(chat: bool, until_close: bool, model: str) -> tuple[bytes, bytes, bytes]:
    """(role event, content event, JSON head) for an API, built once."""
    key = (chat, until_close, model)
    if key not in _CACHE:
        frame = _raw if until_close else _chunk
        kind = "chat.completion.chunk" if chat else "text_completion"
        head = {"id": "c1", "object": kind, "model": model}
        if chat:
            role = frame(
                json.dumps(head | {"choices": [{"index": 0, "delta": _CHAT_ROLE}]}).encode()
            )
            choice: dict[str, object] = {"index": 0, "delta": {"content": " tok"}}
        else:
            role = b""
            choice = {"index": 0, "text": " tok", "finish_reason": None}
        content = frame(json.dumps(head | {"choices": [choice]}).encode())
        _CACHE[key] = (role, content, json.dumps(head).encode()[:-1])
    return _CACHE[key]


def _sse(payload: bytes) -> bytes:
    """One SSE event in the chosen --sse-style."""
    style = STYLE[0]
    if style == "crlf":
        return b"data: " + payload + b"\r\n\r\n"
    if style == "cr":
        return b"data: " + payload + b"\r\r"
    if style == "nospace":
        return b"data:" + payload + b"\n\n"
    if style == "fields":
        return b": ping\nevent: completion\ndata: " + payload + b"\nid: 7\n: pong\n\n"
    if style == "multiline":
        return b"data: " + payload.replace(b",", b",\ndata: ") + b"\n\n"
    return b"data: " + payload + b"\n\n"


def _raw(payload: bytes) -> bytes:
    """One SSE event without chunked framing (a body read until the connection closes)."""
    return b"data: " + payload + b"\r\n\r\n" if STYLE[0] == "lf" else _sse(payload)


def _chunk(payload: bytes) -> bytes:
    """One HTTP chunk holding one SSE event."""
    event = _sse(payload)
    return b"%x\r\n%s\r\n" % (len(event), event)


class Stats:
    """What the server did: tokens written, and its own TTFT and ITL record."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.requests = 0
        self.tokens = 0
        self.prompt_tokens = 0
        self.first_token_at: float | None = None
        self.last_token_at: float | None = None
        self.ttft_s: list[float] = []
        self.ttft_at: list[float] = []  # when each first token was written
        self.itl_s: list[float] = []
        self.drafts = 0
        self.arrivals: list[float] = []
        self.accepted = 0
        self.connections = 0  # connections accepted
        self.discarded = 0  # requests that reached a connection being closed: never answered
        self.hung_up = 0  # connections closed at once after --hang-up-after

    def _steady(self) -> float | None:
        """Tokens/s from request arrivals after the first quarter (closed-loop steady state).

        Under a closed loop each arrival means the client finished a response, so the
        arrival rate times tokens per request is the rate the client consumed tokens; the
        first quarter (the initial burst) is left out.
        """
        n = len(self.arrivals)
        if n < 8 or not self.requests:
            return None
        first, last = n // 4, n - 1
        span = self.arrivals[last] - self.arrivals[first]
        return (last - first) * (self.tokens / self.requests) / span if span > 0 else None

    def to_json(self) -> dict[str, object]:
        span = (
            (self.last_token_at - self.first_token_at)
            if self.first_token_at is not None and self.last_token_at is not None
            else 0.0
        )

        def p50(xs: list[float]) -> float | None:
            return sorted(xs)[len(xs) // 2] * 1000 if xs else None

        return {
            "requests": self.requests,
            "tokens": self.tokens,
            "span_s": span,
            "tokens_per_s": self.tokens / span if span > 0 else None,
            "ttft_ms_p50": p50(self.ttft_s),
            "itl_ms_p50": p50(self.itl_s),
            "ttft_ms_mean": sum(self.ttft_s) / len(self.ttft_s) * 1000 if self.ttft_s else None,
            "steady_tokens_per_s": self._steady(),
            "first_token_at": self.first_token_at,  # time.perf_counter() (CLOCK_MONOTONIC)
            "last_token_at": self.last_token_at,
            "connections": self.connections,
            "discarded": self.discarded,
            "hung_up": self.hung_up,
        }


class Server(asyncio.Protocol):
    """One connection: parse requests, answer them one at a time (keep-alive)."""

    def __init__(self, args: argparse.Namespace, stats: Stats, counter: list[int]) -> None:
        self.args = args
        self.stats = stats
        self.counter = counter
        self.buf = b""
        self.transport: asyncio.Transport | None = None
        self.busy = False
        self.handles: list[asyncio.TimerHandle] = []
        self.arrived = 0.0
        self.timed: _KernelTimed | None = None
        self.closing = False  # the connection is being closed: requests are discarded
        self.idle: asyncio.TimerHandle | None = None
        self.identity = False  # the request being answered sent Accept-Encoding: identity

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        if HUNG_UP[0]:
            self.stats.hung_up += 1
            transport.abort()
            return
        self.transport = transport
        self.timed = _kernel_timed(transport)
        self.stats.connections += 1
        OPEN.add(self)
        self._idle_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        OPEN.discard(self)
        for handle in self.handles:
            handle.cancel()
        if self.idle is not None:
            self.idle.cancel()
        self.transport = None

    def data_received(self, data: bytes) -> None:
        if self.closing:
            self.stats.discarded += data.count(b" HTTP/1.1\r\n")
            return
        if self.idle is not None:
            self.idle.cancel()
            self.idle = None
        # the record starts when the bytes arrived: the kernel's receive time, else the
        # select that found them
        self.arrived = SELECTED[0] or time.perf_counter()
        timed = self.timed
        if timed is not None and self.arrived - 10 < timed.at < self.arrived + 1:
            self.arrived = timed.at
        self.buf += data
        self._next()

    def _idle_timer(self) -> None:
        """Close the connection after --keep-alive-timeout seconds without a request."""
        timeout = self.args.keep_alive_timeout
        if timeout and self.transport is not None:
            loop = asyncio.get_running_loop()
            self.idle = loop.call_later(timeout, self.transport.close)

    def _close_after_stream(self) -> None:
        """End a chunked body as llama.cpp's server does, then close without a word.

        Its ``0\r\n`` and the final CRLF are two writes; anything the client sends
        meanwhile is read and dropped, and the connection closes --close-after-stream ms
        later (with --fin-first, its write side is shut right after the CRLF, as
        llama.cpp's server does before draining).
        """
        transport = self.transport
        assert transport is not None
        self.closing = True
        self.stats.discarded += self.buf.count(b" HTTP/1.1\r\n")
        self.buf = b""
        transport.write(b"0\r\n")
        loop = asyncio.get_running_loop()
        loop.call_later(0.005, transport.write, b"\r\n")
        if self.args.fin_first:
            loop.call_later(0.005, transport.write_eof)  # llama.cpp shuts down at once
        loop.call_later(self.args.close_after_stream / 1000.0, transport.close)

    def _next(self) -> None:
        if self.busy or self.transport is None:
            return
        head_end = self.buf.find(b"\r\n\r\n")
        if head_end < 0:
            return
        head = self.buf[:head_end].decode("latin-1")
        length = 0
        for line in head.split("\r\n")[1:]:
            name, _, value = line.partition(":")
            if name.strip().lower() == "content-length":
                length = int(value.strip())
        if len(self.buf) < head_end + 4 + length:
            return
        body = self.buf[head_end + 4 : head_end + 4 + length]
        self.buf = self.buf[head_end + 4 + length :]
        method, path = head.split(" ")[:2]
        self.busy = True
        self.identity = "\r\naccept-encoding: identity" in head.lower()
        want = self.args.require_auth
        if want and f"\r\nauthorization: {want}".lower() not in head.lower():
            self.busy = True
            self._reply("401 Unauthorized", "application/json", b'{"error": "auth"}')
            return
        self._handle(method, path, body, self.arrived)

    def _reply(self, status: str, ctype: str, body: bytes) -> None:
        assert self.transport is not None
        self.transport.write(
            b"HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n%s"
            % (status.encode(), ctype.encode(), len(body), body)
        )
        self._done()

    def _done(self) -> None:
        self.busy = False
        self.handles = []
        if self.buf:
            self._next()
        elif self.idle is None:
            self._idle_timer()

    def _handle(self, method: str, path: str, body: bytes, arrived: float) -> None:
        a = self.args
        if a.not_openai:
            self._reply("404 Not Found", "text/html", b"<html>nothing here</html>")
            return
        if path == "/v1/models":
            models = {"object": "list", "data": [{"id": a.model, "object": "model"}]}
            self._reply("200 OK", "application/json", json.dumps(models).encode())
            return
        if path == "/health":
            self._reply("200 OK", "application/json", b"{}")
            return
        if path == "/stats":
            self._reply("200 OK", "application/json", json.dumps(self.stats.to_json()).encode())
            return
        if path == "/stats/reset":
            self.stats.reset()
            self._reply("200 OK", "application/json", b"{}")
            return
        if path == "/metrics":
            self._reply("200 OK", "text/plain; version=0.0.4", self._metrics())
            return
        if method != "POST" or path not in ("/v1/completions", "/v1/chat/completions"):
            self._reply("404 Not Found", "application/json", b'{"error": "not found"}')
            return
        self.counter[0] += 1
        n = self.counter[0]
        if a.fail_every and n % a.fail_every == 0:
            self._reply("500 Internal Server Error", "application/json", b'{"error": "boom"}')
            return
        # bytes searches instead of json.loads: the less work per request, the less time a
        # burst of requests waits unrecorded in this server's socket buffers
        if a.reject_ignore_eos and b'"ignore_eos"' in body:
            self._reply("400 Bad Request", "application/json", b'{"error": "ignore_eos"}')
            return
        chat = path.endswith("chat/completions")
        prompt_tokens = body.count(b" ") + 1  # words of a compact JSON body
        found = _MAX_TOKENS.search(body)
        wanted = int(found.group(1)) if found else 16
        if a.short:
            wanted = min(wanted, a.short)
        per_chunk = a.tokens_per_chunk
        events = -(-wanted // per_chunk)
        if (
            a.gzip_every
            and n % a.gzip_every == 0
            and (a.gzip_ignores_identity or not self.identity)
        ):
            self._gzip(chat=chat, events=events, tokens=wanted, prompt_tokens=prompt_tokens)
            return
        self._stream(
            chat=chat,
            events=events,
            tokens=wanted,
            prompt_tokens=prompt_tokens,
            arrived=arrived,
            mode=self._mode(n),
        )

    def _gzip(self, *, chat: bool, events: int, tokens: int, prompt_tokens: int) -> None:
        """The whole stream at once, gzip-compressed, as a server with compression on sends it."""
        assert self.transport is not None
        role, content, head = _events(chat, True, self.args.model)
        usage = b'{"prompt_tokens":%d,"completion_tokens":%d}' % (prompt_tokens, tokens)
        body = role + content * events + _raw(head + b',"choices":[],"usage":' + usage + b"}")
        packed = gzip.compress(body + _raw(b"[DONE]"))
        self.transport.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Encoding: gzip\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n" % (len(packed), packed)
        )
        self.stats.requests += 1
        self._done()

    def _mode(self, n: int) -> str:
        a = self.args
        for name, every in (
            ("malformed", a.malformed_every),
            ("reset", a.reset_every),
            ("hang", a.hang_every),
            ("error_event", a.error_event_every),
            ("reset_after_head", a.reset_after_head_every),
            ("huge_line", a.huge_line_every),
        ):
            if every and n % every == 0:
                return name
        return "normal"

    def _stream(
        self, *, chat: bool, events: int, tokens: int, prompt_tokens: int, arrived: float, mode: str
    ) -> None:
        a = self.args
        transport = self.transport
        assert transport is not None
        stats = self.stats
        stats.requests += 1
        stats.arrivals.append(arrived)
        if a.until_close:
            transport.write(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
            )
        else:
            extra = b""
            if a.say_close:
                extra += b"Connection: close\r\n"
            if a.keep_alive_timeout:
                extra += b"Keep-Alive: timeout=%g, max=100\r\n" % a.keep_alive_timeout
            transport.write(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                b"Transfer-Encoding: chunked\r\n%s\r\n" % extra
            )
            if mode == "reset_after_head":
                # late enough that the client has read the headers when the reset comes
                asyncio.get_running_loop().call_later(0.02, transport.abort)
                return
        role, content, head = _events(chat, a.until_close, a.model)
        if role:
            transport.write(role)
        frame = _raw if a.until_close else _chunk
        usage = b'{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}' % (
            prompt_tokens,
            tokens + a.usage_offset,
            prompt_tokens + tokens,
        )
        tail = b""
        if not a.no_usage:
            tail += frame(head + b',"choices":[],"usage":' + usage + b"}")
        tail += frame(b"[DONE]")
        closes = bool(a.close_after_stream) and not a.until_close
        if not a.until_close and not closes:
            tail += b"0\r\n\r\n"
        per_chunk = a.tokens_per_chunk
        stats.prompt_tokens += prompt_tokens

        def finish() -> None:
            if self.transport is None:
                return
            self.transport.write(tail)
            if a.until_close:
                self.transport.close()
            elif closes:
                self._close_after_stream()
            stats.drafts += events if a.spec_accept else 0
            stats.accepted += int(events * (a.spec_accept - 1)) if a.spec_accept else 0
            self._done()

        def token(k: int, last_at: float | None) -> float | None:
            """Write event k; return the time it was written, or None if the request ends here."""
            if self.transport is None:
                return None
            if k == 2 and mode != "normal":
                if mode == "malformed":
                    self.transport.write(_chunk(b'{"choices": [{"text": "broken'))
                elif mode == "reset":
                    self.transport.abort()
                    return None
                elif mode == "error_event":
                    self.transport.write(_chunk(b'{"error": {"message": "engine died"}}'))
                    self.transport.write(_chunk(b"[DONE]") + b"0\r\n\r\n")
                    self._done()
                    return None
                elif mode == "hang":
                    return None
                elif mode == "huge_line":  # one line that never ends, then silence
                    line = b'data: {"choices": [{"text": "' + b"x" * (a.huge_line_mib << 20)
                    self.transport.write(b"%x\r\n%s\r\n" % (len(line), line))
                    return None
            # stamped before the write: the client can read the token only after this
            # moment, so a server held up after its write (a busy machine) never reports
            # a later time than the client saw
            now = time.perf_counter()
            self.transport.write(content)
            stats.tokens += min(per_chunk, tokens - k * per_chunk)
            if k == 0:
                stats.ttft_s.append(now - arrived)
                stats.ttft_at.append(now)
                if stats.first_token_at is None:
                    stats.first_token_at = now
            elif last_at is not None and a.itl_ms:
                stats.itl_s.append(now - last_at)
            stats.last_token_at = now
            if a.die_after and stats.tokens >= a.die_after:
                os._exit(0)
            if a.hang_up_after and stats.tokens >= a.hang_up_after:
                _hang_up()
                return None
            return now

        if a.burst and not a.ttft_ms and not a.itl_ms and mode == "normal" and not closes:
            # the whole response in one write: the cheapest possible zero-delay server
            now = time.perf_counter()  # before the write, as in token()
            transport.write(content * events + tail)
            stats.tokens += tokens
            stats.ttft_s.append(now - arrived)
            stats.ttft_at.append(now)
            stats.first_token_at = stats.first_token_at or now
            stats.last_token_at = now
            self._done()
            return
        if not a.ttft_ms and not a.itl_ms:
            for k in range(events):
                if token(k, None) is None:
                    return
            finish()
            return

        loop = asyncio.get_running_loop()
        start = arrived + a.ttft_ms / 1000.0
        step = a.itl_ms / 1000.0

        def tick(k: int, last_at: float | None) -> None:
            written = token(k, last_at)
            if written is None:
                return
            if k + 1 >= events:
                finish()
                return
            when = loop.time() + (start + (k + 1) * step - time.perf_counter())
            self.handles.append(loop.call_at(when, tick, k + 1, written))

        self.handles.append(
            loop.call_at(loop.time() + (start - time.perf_counter()), tick, 0, None)
        )

    def _metrics(self) -> bytes:
        s = self.stats
        lines = [
            "# TYPE vllm:prompt_tokens_total counter",
            f'vllm:prompt_tokens_total{{model_name="{self.args.model}"}} {s.prompt_tokens}',
            "# TYPE vllm:generation_tokens_total counter",
            f'vllm:generation_tokens_total{{model_name="{self.args.model}"}} {s.tokens}',
            "# TYPE vllm:spec_decode_num_drafts_total counter",
            f"vllm:spec_decode_num_drafts_total {s.drafts}",
            "# TYPE vllm:spec_decode_num_accepted_tokens_total counter",
            f"vllm:spec_decode_num_accepted_tokens_total {s.accepted}",
            "# TYPE vllm:num_requests_running gauge",
            "vllm:num_requests_running 0",
            "# TYPE vllm:time_to_first_token_seconds histogram",
            f'vllm:time_to_first_token_seconds_bucket{{le="+Inf"}} {len(s.ttft_s)}',
            f"vllm:time_to_first_token_seconds_count {len(s.ttft_s)}",
            f"vllm:time_to_first_token_seconds_sum {sum(s.ttft_s)}",
        ]
        return ("\n".join(lines) + "\n").encode()


def _hang_up() -> None:
    """From now on, close every connection at once: a server that went away."""
    HUNG_UP[0] = True
    for server in list(OPEN):
        if server.transport is not None:
            server.transport.abort()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--model", default="test-model")
    parser.add_argument("--ttft-ms", type=float, default=0.0)
    parser.add_argument("--itl-ms", type=float, default=0.0)
    parser.add_argument("--tokens-per-chunk", type=int, default=1)
    parser.add_argument("--short", type=int, default=0, help="generate at most this many")
    parser.add_argument("--usage-offset", type=int, default=0, help="add to usage count")
    parser.add_argument("--no-usage", action="store_true")
    parser.add_argument("--spec-accept", type=float, default=0.0)
    parser.add_argument("--fail-every", type=int, default=0, help="every K-th request: 500")
    parser.add_argument(
        "--require-auth", default="", metavar="VALUE", help="401 without this Authorization"
    )
    parser.add_argument("--malformed-every", type=int, default=0)
    parser.add_argument("--reset-every", type=int, default=0)
    parser.add_argument("--hang-every", type=int, default=0)
    parser.add_argument("--error-event-every", type=int, default=0)
    parser.add_argument(
        "--huge-line-every", type=int, default=0, help="every K-th: one endless SSE line"
    )
    parser.add_argument("--huge-line-mib", type=int, default=20, help="that line's MiB")
    parser.add_argument(
        "--reset-after-head-every", type=int, default=0, help="reset right after the headers"
    )
    parser.add_argument(
        "--close-after-stream",
        type=float,
        default=0.0,
        metavar="MS",
        help="close each connection MS after a streamed body, unannounced",
    )
    parser.add_argument(
        "--fin-first", action="store_true", help="with --close-after-stream: FIN at once"
    )
    parser.add_argument(
        "--say-close", action="store_true", help="send Connection: close on streamed responses"
    )
    parser.add_argument(
        "--keep-alive-timeout",
        type=float,
        default=0.0,
        metavar="S",
        help="advertise Keep-Alive: timeout=S and close connections idle that long",
    )
    parser.add_argument("--die-after", type=int, default=0, help="exit after this many tokens")
    parser.add_argument(
        "--hang-up-after",
        type=int,
        default=0,
        metavar="N",
        help="after N tokens, close every connection, open or new, at once (and count them)",
    )
    parser.add_argument(
        "--sse-style",
        choices=["lf", "crlf", "cr", "nospace", "fields", "multiline"],
        default="lf",
        help="how events are framed (all valid server-sent events)",
    )
    parser.add_argument(
        "--gzip-every",
        type=int,
        default=0,
        metavar="K",
        help="gzip every K-th answer unless the request sent Accept-Encoding: identity",
    )
    parser.add_argument(
        "--gzip-ignores-identity", action="store_true", help="with --gzip-every: gzip anyway"
    )
    parser.add_argument("--reject-ignore-eos", action="store_true")
    parser.add_argument("--not-openai", action="store_true")
    parser.add_argument(
        "--burst", action="store_true", help="zero delay: write each response in one piece"
    )
    parser.add_argument(
        "--until-close", action="store_true", help="no chunked coding: close to end the body"
    )
    parser.add_argument(
        "--reuse-port",
        action="store_true",
        help="SO_REUSEPORT: several processes share --port, the kernel spreads connections",
    )
    parser.add_argument(
        "--ttft-file",
        default=None,
        help="on SIGTERM, write [when, TTFT ms] of every request here (when: perf_counter)",
    )
    args = parser.parse_args()
    STYLE[0] = args.sse_style

    async def serve() -> None:
        loop = asyncio.get_running_loop()
        _time_selects(loop)
        stats, counter = Stats(), [0]
        server = await loop.create_server(
            lambda: Server(args, stats, counter),
            args.host,
            args.port,
            backlog=4096,
            reuse_port=args.reuse_port or None,
        )
        stop = asyncio.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        print(f"listening on {args.port}", flush=True)
        async with server:
            await stop.wait()
        if args.ttft_file:
            with open(args.ttft_file, "w", encoding="utf-8") as file:
                pairs = zip(stats.ttft_at, stats.ttft_s, strict=True)
                json.dump([[at, t * 1000] for at, t in pairs], file)
        print(json.dumps(stats.to_json()), flush=True)

    asyncio.run(serve())


if __name__ == "__main__":
    main()
