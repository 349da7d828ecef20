"""Send one streaming request and time its server-sent events: the per-chunk hot path.

The client's own cost grows with output tokens per second, so this path is kept lean.
Each socket read arrives once (see `servegate.bench.http`) with one timestamp. The usual
read (only complete one-line ``data: {...}`` events, no usage, no error) is not even
split into events: the content chunks in it are counted with byte-pattern counts (the
``"text":"`` occurrences minus the empty ones). Anything else takes the general path,
which reads events as the server-sent events specification defines them: ``\n``,
``\r\n`` and ``\r`` line ends, comment lines anywhere, ``data:`` with or without its
space, several ``data:`` lines joined by ``\n``, other fields ignored. Each event's data
is then classified from the bytes after its ``"text"`` (or ``"content"``) key. JSON is
parsed only for the usage chunk and error events. A chunk with an empty or null text (a
role-only chat delta, the final usage chunk) never counts as a token.
"""

from __future__ import annotations

import asyncio
import errno
import json
from collections.abc import Callable
from time import perf_counter
from typing import Any, NamedTuple

from servegate.bench.dataset import Prompt
from servegate.bench.http import HttpFailure, Pool, Sink
from servegate.bench.sample import RequestSample

COMPLETION_KEYS = (b'"text"',)
CHAT_KEYS = (b'"content"', b'"reasoning_content"', b'"reasoning"')
_DETAIL_MAX = 200
# the longest event (so the longest line) a stream may send: far above a chunk with
# top-20 logprobs (a few KiB a token) or a tool call's arguments in one piece; a longer
# one fails its request at once as a bad_response instead of growing memory until
# --timeout
MAX_EVENT_BYTES = 16 << 20
_BOM = b"\xef\xbb\xbf"
# the start of the detail of the two failures that mean "no connection that answers"
UNANSWERED = "the connection closed before any byte of a response"
NO_CONNECTION = "no connection within"
# a request the client could not even open a socket for (EMFILE, ENFILE): its own failure
CLIENT_FD_LIMIT = "client_fd_limit"
_OUT_OF_FILES = (errno.EMFILE, errno.ENFILE)
_OUT_OF_FILES_DETAIL = "the client ran out of open files (EMFILE): raise ulimit -n"


class StreamFailure(Exception):
    """The stream broke a rule of the protocol; ``kind`` names the failure."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(detail)
        self.kind = kind
        self.detail = detail


def has_content(payload: bytes, keys: tuple[bytes, ...]) -> bool:
    """True when one of ``keys`` holds a non-empty JSON string in ``payload``."""
    for key in keys:
        at = payload.find(key)
        if at >= 0:
            end = at + len(key)
            value = payload[end : end + 8].lstrip(b" \t:")
            if value[:1] == b'"' and value[1:2] != b'"':
                return True
    return False


def _payloads(block: bytes) -> list[bytes]:
    """The data of each complete event in ``block``, as the SSE specification reads it.

    ``block`` holds whole lines ending in ``\n`` (CR and CRLF already turned into LF);
    an event ends at an empty line. An event that is one ``data:`` line is taken as it
    is; any other is read line by line (`_event_lines`). An event without data, or with
    empty data, yields nothing.
    """
    if block[:3] == _BOM:
        block = block[3:]
    out: list[bytes] = []
    for event in block.split(b"\n\n"):
        if event[:5] == b"data:" and b"\n" not in event:
            payload = event[6:] if event[5:6] == b" " else event[5:]
            if payload:
                out.append(payload)
        elif event:
            out += _event_lines(event)
    return out


def _event_lines(text: bytes) -> list[bytes]:
    """The data of the events in ``text``, line by line (an empty line ends an event).

    Comment lines (``:...``) and the ``event``, ``id``, ``retry`` and unknown fields are
    skipped; ``data:`` loses one leading space; several data lines join with ``\n``.
    """
    out: list[bytes] = []
    data: list[bytes] = []
    for line in [*text.split(b"\n"), b""]:
        if not line:
            payload = b"\n".join(data)
            if payload:
                out.append(payload)
            data = []
        elif line[:5] == b"data:":
            data.append(line[6:] if line[5:6] == b" " else line[5:])
        elif line == b"data":
            data.append(b"")
    return out


def _usage(payload: bytes) -> tuple[int | None, int | None, int | None] | None:
    """(completion_tokens, prompt_tokens, cached prompt tokens) when the event carries usage."""
    at = payload.find(b'"usage"')
    if at < 0 or payload[at + 7 : at + 16].lstrip(b" \t:")[:1] != b"{":
        return None
    try:
        usage = json.loads(payload)["usage"]
    except (ValueError, KeyError, TypeError):
        raise StreamFailure("malformed_stream", "a usage event is not valid JSON") from None
    if not isinstance(usage, dict):
        return None
    out, inp = usage.get("completion_tokens"), usage.get("prompt_tokens")
    details = usage.get("prompt_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, dict) else None
    return (
        out if isinstance(out, int) else None,
        inp if isinstance(inp, int) else None,
        cached if isinstance(cached, int) else None,
    )


def _stream_error(payload: bytes) -> str | None:
    """The message of an error event (``{"error": ...}`` or ``"object": "error"``), if any."""
    try:
        obj: Any = json.loads(payload)
    except ValueError:
        return None
    if not isinstance(obj, dict):
        return None
    if "error" in obj:
        err = obj["error"]
        msg = err.get("message", err) if isinstance(err, dict) else err
        return str(msg)[:_DETAIL_MAX]
    if obj.get("object") == "error":
        return str(obj.get("message", "error"))[:_DETAIL_MAX]
    return None


class _Stream(Sink):
    """The event parser of one response: content-chunk times, usage, failures."""

    def __init__(
        self, keys: tuple[bytes, ...], fast: _Patterns | None, *, keep: bool = False
    ) -> None:
        self.keys = keys
        self.fast = fast
        self.kept: list[bytes] | None = [] if keep else None  # the raw body (multiturn)
        self.times: list[float] = []
        self.usage: _Usage | None = None
        self.rest: list[bytes] = []  # an incomplete event's pieces (line ends as LF)
        self.held = 0  # their bytes
        self.cr = False  # the last read ended with CR: an LF opening the next one is its pair
        self.body = b""  # the start of a non-200 body, for the failure detail

    def feed(self, payload: bytes, now: float) -> None:
        if self.status != 200:
            if len(self.body) < _DETAIL_MAX:
                self.body += payload[:_DETAIL_MAX]
            return
        if self.kept is not None:
            self.kept.append(payload)
        if self.cr:
            self.cr = False
            if payload[:1] == b"\n":
                payload = payload[1:]
        if b"\r" in payload:
            self.cr = payload[-1:] == b"\r"
            payload = payload.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        rest = self.rest
        if rest:
            if b"\n\n" not in payload and (payload[:1] != b"\n" or rest[-1][-1:] != b"\n"):
                self._hold(payload)  # the event goes on: joined once, when it ends
                return
            data = b"".join(rest) + payload
            self.rest = []
            self.held = 0
        else:
            data = payload
        cut = data.rfind(b"\n\n")
        if cut < 0:
            self._hold(data)
            return
        end = cut + 2
        if end < len(data):
            self._hold(data[end:])
        counted = _fast_count(data, end, self.fast) if self.fast is not None else None
        if counted is None:
            self._events(data[:end], now)
            return
        count, split = counted
        if count:
            self.times += [now] * count
        if split < end:
            self._events(data[split:end], now)  # from the first usage or error event on

    def _hold(self, piece: bytes) -> None:
        """Keep a piece of an event not ended yet; HttpFailure past `MAX_EVENT_BYTES`."""
        self.rest.append(piece)
        self.held += len(piece)
        if self.held > MAX_EVENT_BYTES:
            raise HttpFailure(
                "bad_response",
                f"an event of the stream passed {MAX_EVENT_BYTES >> 20} MiB without ending "
                "(a line that long is no token stream)",
            )

    def close(self, now: float) -> None:
        rest = b"".join(self.rest)
        if self.status == 200 and rest.strip():
            self._events(rest + b"\n\n", now)  # a last event without its blank line
            self.rest = []

    def _events(self, block: bytes, now: float) -> None:
        """The general path: classify each event on its own."""
        keys = self.keys
        for payload in _payloads(block):
            try:
                found = _classify(payload, keys)
            except StreamFailure as exc:
                raise HttpFailure(exc.kind, exc.detail) from None
            if found is True:
                self.times.append(now)
            elif isinstance(found, _Usage):
                self.usage = found
                if found.content:
                    self.times.append(now)


class _Patterns(NamedTuple):
    """Byte patterns that count content events of one key without splitting events."""

    key: bytes
    filled: tuple[bytes, bytes]
    empty: tuple[bytes, bytes]
    null: tuple[bytes, bytes]
    bail: tuple[bytes, ...]


def patterns(keys: tuple[bytes, ...]) -> _Patterns:
    """The fast-path patterns for an API's content keys."""
    key = keys[0]
    return _Patterns(
        key=key,
        filled=(key + b':"', key + b': "'),
        empty=(key + b':""', key + b': ""'),
        null=(key + b":null", key + b": null"),
        bail=(b'"usage"', b'"error"', *(k.strip(b'"') for k in keys[1:])),
    )


def _fast_count(data: bytes, end: int, p: _Patterns) -> tuple[int, int] | None:
    """Content events counted by patterns in ``data[:split]``, and ``split``; None when unsure.

    ``split`` is where the first event that names usage or an error starts (``end`` when
    none does): it and the events after it need the general path, so a burst that ends
    with the usage chunk is counted up to that chunk. Sure means: every event before
    ``split`` is one ``data:`` line (no comment, no other field, no second data line)
    holding a JSON object or ``[DONE]``, and every occurrence of the key is followed by a
    string or null.
    """
    split = end
    for word in p.bail:
        at = data.find(word, 0, split)
        if at >= 0:
            split = at
    if split < end:
        before = data.rfind(b"\n\n", 0, split)
        if before < 0:
            return None
        split = before + 2
    events = data.count(b"\n\n", 0, split)
    if data.count(b"\n", 0, split) != 2 * events:
        return None  # an event of several lines, or an empty line between events
    if data[:5] != b"data:" or data.count(b"\n\ndata:", 0, split) != events - 1:
        return None  # an event that does not start with its data line
    closed = data.count(b"}\n\n", 0, split)
    if closed != events and (closed != events - 1 or data[split - 8 : split] != b"[DONE]\n\n"):
        return None  # an event that is neither a JSON object nor the final [DONE]
    keys = data.count(p.key, 0, split)
    # the compact spelling (``"text":"``) first: where it accounts for every key, the
    # spaced one (``"text": "``) need not be counted (three passes over the read fewer)
    filled = data.count(p.filled[0], 0, split)
    null = data.count(p.null[0], 0, split)
    empty = data.count(p.empty[0], 0, split)
    if filled + null != keys:
        filled += data.count(p.filled[1], 0, split)
        null += data.count(p.null[1], 0, split)
        if filled + null != keys:
            return None
        empty += data.count(p.empty[1], 0, split)
    return filled - empty, split


async def send_request(
    pool: Pool,
    frame: Callable[[bytes], bytes],
    *,
    prompt: Prompt,
    index: int,
    timeout_s: float,
    keys: tuple[bytes, ...],
    fast: _Patterns | None,
    t0: float,
    scheduled_s: float | None = None,
    text_out: list[str] | None = None,
) -> RequestSample:
    """Post one request, read its stream to the end and return its sample; never raises.

    A request sent on a connection taken from the pool that closes before any byte of
    the response arrived met a connection the server had already closed (its idle
    timeout, its limit of requests per connection, or a close it did not announce): it
    is sent once more on a fresh connection and marked ``reconnected``. Its times still
    count from the first send, since the user waited for the reconnect too. With a
    ``text_out`` list the generated text is appended to it (a multiturn session's next
    turn sends it back); only then is the body kept and parsed.
    """
    stream = _Stream(keys, fast, keep=text_out is not None)
    error: str | None = None
    detail: str | None = None
    loop = asyncio.get_running_loop()
    send = perf_counter()
    deadline = send + timeout_s
    data = frame(prompt.body)
    reconnected = False
    received = False  # a byte of a response arrived
    while True:
        try:
            ready = None if reconnected else pool.idle()
            if ready is not None:
                conn, reused = ready, True
            else:
                wait = max(0.0, deadline - perf_counter())
                conn, reused = await asyncio.wait_for(pool.acquire(fresh=reconnected), wait)
        except TimeoutError:
            error, detail = "timeout", f"{NO_CONNECTION} {timeout_s:g} s"
            break
        except OSError as exc:
            if exc.errno in _OUT_OF_FILES:  # the client's own limit: says nothing of the server
                error, detail = CLIENT_FD_LIMIT, _OUT_OF_FILES_DETAIL
            else:
                error, detail = "connect_error", (str(exc) or type(exc).__name__)[:_DETAIL_MAX]
            break
        done = conn.request(data, stream)
        timer = loop.call_at(loop.time() + (deadline - perf_counter()), conn.abort, "timeout")
        try:
            error = await done
        except HttpFailure as exc:
            error, detail = exc.kind, exc.detail
        finally:
            timer.cancel()
            pool.release(conn)
        received = conn.received
        if error == "connection_reset" and reused and not conn.received:
            error, reconnected = None, True  # once, on a new connection
            continue
        break
    if error == "timeout" and detail is None:
        detail = f"no complete response within {timeout_s:g} s"
    elif error == "connection_reset":
        detail = UNANSWERED if not received else "the connection closed before the response ended"
        if reconnected:
            detail += ", on a fresh connection after a kept-alive one had been closed"
    elif error is None and stream.status != 200:
        error = f"http_{stream.status}"
        detail = stream.body.decode("utf-8", "replace").strip()[:_DETAIL_MAX]
    elif error is None and not stream.times:
        error, detail = "empty_stream", "the stream ended without generated content"
    end = perf_counter()
    usage = stream.usage
    if text_out is not None and stream.kept is not None:
        text_out.append(content_text(b"".join(stream.kept)))
    return RequestSample(
        index=index,
        send_s=send - t0,
        scheduled_s=scheduled_s,
        chunks_s=tuple([t - send for t in stream.times]),
        end_s=end - send,
        usage_output_tokens=usage.output_tokens if usage else None,
        usage_input_tokens=usage.input_tokens if usage else None,
        input_len=prompt.input_len,
        output_len=prompt.output_len,
        error=error,
        detail=detail,
        reconnected=reconnected,
        usage_cached_tokens=usage.cached_tokens if usage else None,
    )


def content_text(raw: bytes) -> str:
    """The generated text of a streamed body: each event's ``choices[0]`` ``text`` or
    ``delta.content``, joined."""
    raw = raw.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    out: list[str] = []
    for payload in _payloads(raw if raw.endswith(b"\n\n") else raw + b"\n\n"):
        try:
            event = json.loads(payload)
            choice = event["choices"][0]
        except (ValueError, KeyError, IndexError, TypeError):
            continue
        if not isinstance(choice, dict):
            continue
        delta = choice.get("delta")
        piece = delta.get("content") if isinstance(delta, dict) else choice.get("text")
        if isinstance(piece, str):
            out.append(piece)
    return "".join(out)


def connection_failed(sample: RequestSample) -> bool:
    """True when a request found no server that answers: refused, unreachable, no
    connection within the timeout, or a connection closed before any response byte."""
    error, detail = sample.error, sample.detail or ""
    if error == "connect_error":
        return True
    if error == "connection_reset":
        return detail.startswith(UNANSWERED)
    return error == "timeout" and detail.startswith(NO_CONNECTION)


def _classify(payload: bytes, keys: tuple[bytes, ...]) -> bool | _Usage | None:
    """Classify one event's data: True for a content chunk, a `_Usage` when it carries usage.

    Raises StreamFailure for an error event or data that is not a JSON object.
    """
    if payload[-1:] != b"}":
        payload = payload.strip()
        if payload == b"[DONE]" or not payload:
            return None
        if payload[:1] != b"{" or payload[-1:] != b"}":
            raise StreamFailure(
                "malformed_stream", f"an event is not a JSON object: {payload[:80]!r}"
            )
    content = has_content(payload, keys)
    if b'"usage"' in payload:
        usage = _usage(payload)
        if usage is not None:
            return _Usage(content, usage[0], usage[1], usage[2])
    if content:
        return True
    if b'"error"' in payload:
        message = _stream_error(payload)
        if message is not None:
            raise StreamFailure("stream_error", message)
    return None


class _Usage(NamedTuple):
    """A usage object seen in an event, and whether that event also carried content."""

    content: bool
    output_tokens: int | None
    input_tokens: int | None
    cached_tokens: int | None = None
