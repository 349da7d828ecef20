"""Send one streaming request and time its server-sent events: the per-chunk hot path.

The client's own cost grows with output tokens per second, so this path is kept lean:
the socket is read in large pieces and each read gets one timestamp; events are split
with bytes operations; whether an event carries generated content is decided by looking
at the bytes after its ``"text"`` (or ``"content"``) key, not by parsing JSON. JSON is
parsed only for the rare events that need it: the usage chunk and error events. A chunk
with an empty or null text (a role-only chat delta, the final usage chunk) never counts
as a token.
"""

from __future__ import annotations

import json
from time import perf_counter
from typing import Any, NamedTuple

import aiohttp

from servegate.bench.dataset import Prompt
from servegate.bench.sample import RequestSample

COMPLETION_KEYS = (b'"text"',)
CHAT_KEYS = (b'"content"', b'"reasoning_content"', b'"reasoning"')
_DETAIL_MAX = 200


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


def _event_data(event: bytes) -> bytes | None:
    """The data of a multi-line SSE event (``event:``/``id:`` lines around ``data:``)."""
    parts = [line[5:].lstrip(b" ") for line in event.split(b"\n") if line[:5] == b"data:"]
    return b"\n".join(parts) if parts else None


def _usage(payload: bytes) -> tuple[int | None, int | None] | None:
    """(completion_tokens, prompt_tokens) when the event carries a usage object."""
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
    return (
        out if isinstance(out, int) else None,
        inp if isinstance(inp, int) else None,
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


async def send_request(
    session: aiohttp.ClientSession,
    *,
    endpoint: str,
    prompt: Prompt,
    index: int,
    headers: dict[str, str],
    timeout: aiohttp.ClientTimeout,
    keys: tuple[bytes, ...],
    t0: float,
    scheduled_s: float | None = None,
) -> RequestSample:
    """Post one request, read its stream to the end and return its sample; never raises."""
    times: list[float] = []
    append = times.append
    usage: _Usage | None = None
    error: str | None = None
    detail: str | None = None
    send = perf_counter()
    try:
        async with session.post(
            endpoint, data=prompt.body, headers=headers, timeout=timeout
        ) as resp:
            if resp.status != 200:
                body = await resp.content.read(_DETAIL_MAX)
                error = f"http_{resp.status}"
                detail = body.decode("utf-8", "replace").strip() or resp.reason or ""
            else:
                content = resp.content
                buf = b""
                while True:
                    data = await content.readany()
                    if not data:
                        break
                    now = perf_counter()
                    if buf:
                        data = buf + data
                    if b"\r" in data:
                        data = data.replace(b"\r\n", b"\n")
                    events = data.split(b"\n\n")
                    buf = events.pop()
                    for event in events:
                        found = _event(event, keys)
                        if found is True:
                            append(now)
                        elif isinstance(found, _Usage):
                            usage = found
                            if found.content:
                                append(now)
                if buf.strip():
                    # a last event without its blank line
                    found = _event(buf.strip(), keys)
                    if found is True:
                        append(perf_counter())
                    elif isinstance(found, _Usage):
                        usage = found
                        if found.content:
                            append(perf_counter())
                if not times:
                    error, detail = "empty_stream", "the stream ended without generated content"
    except StreamFailure as exc:
        error, detail = exc.kind, exc.detail
    except TimeoutError:
        error, detail = "timeout", f"no complete response within {timeout.total} s"
    except aiohttp.ClientConnectorError as exc:
        error, detail = "connect_error", str(exc)[:_DETAIL_MAX]
    except (
        aiohttp.ServerDisconnectedError,
        aiohttp.ClientPayloadError,
        ConnectionResetError,
        aiohttp.ClientOSError,
    ) as exc:
        error, detail = "connection_reset", (str(exc) or type(exc).__name__)[:_DETAIL_MAX]
    except aiohttp.ClientResponseError as exc:
        error, detail = "bad_response", str(exc)[:_DETAIL_MAX]
    except aiohttp.ClientError as exc:
        error, detail = "client_error", (str(exc) or type(exc).__name__)[:_DETAIL_MAX]
    end = perf_counter()
    return RequestSample(
        index=index,
        send_s=send - t0,
        scheduled_s=scheduled_s,
        chunks_s=tuple([t - send for t in times]),
        end_s=end - send,
        usage_output_tokens=usage.output_tokens if usage else None,
        usage_input_tokens=usage.input_tokens if usage else None,
        input_len=prompt.input_len,
        output_len=prompt.output_len,
        error=error,
        detail=detail,
    )


def _event(event: bytes, keys: tuple[bytes, ...]) -> bool | _Usage | None:
    """Classify one SSE event: True for a content chunk, a `_Usage` when it carries usage.

    Raises StreamFailure for an error event or a payload that is not a JSON object.
    """
    if event[:5] == b"data:":
        payload = event[6:] if event[5:6] == b" " else event[5:]
    elif not event or event[:1] == b":":
        return None  # a comment or keep-alive
    else:
        data = _event_data(event)
        if data is None:
            return None  # event:/id:/retry: lines only
        payload = data
    if payload[-1:] != b"}":
        payload = payload.strip()
        if payload == b"[DONE]":
            return None
        if payload[:1] != b"{" or payload[-1:] != b"}":
            raise StreamFailure(
                "malformed_stream", f"an event is not a JSON object: {payload[:80]!r}"
            )
    content = has_content(payload, keys)
    if b'"usage"' in payload:
        usage = _usage(payload)
        if usage is not None:
            return _Usage(content, usage[0], usage[1])
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
