"""Server-sent events as the specification defines them, and the lean classification."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from servegate.bench import BenchSettings, run_point
from servegate.bench.http import HttpFailure
from servegate.bench.stream import (
    CHAT_KEYS,
    COMPLETION_KEYS,
    StreamFailure,
    _classify,
    _payloads,
    _Stream,
    _Usage,
    has_content,
    patterns,
)


def _event(event: bytes, keys: tuple[bytes, ...]) -> bool | _Usage | None:
    """Classify the one event in ``event`` (lines without the closing blank line)."""
    payloads = _payloads(event + b"\n\n")
    return _classify(payloads[0], keys) if payloads else None


@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        (b'{"choices":[{"text":"hi"}]}', True),
        (b'{"choices": [{"text": " a", "finish_reason": null}]}', True),
        (b'{"choices":[{"text":""}]}', False),
        (b'{"choices": [{"text": "", "finish_reason": "length"}]}', False),
        (b'{"choices":[{"text":null}]}', False),
        (b'{"choices":[],"usage":{"completion_tokens":3}}', False),
        (b'{"choices":[{"text":"\\"quoted\\""}]}', True),
    ],
)
def test_completion_content_detection(payload: bytes, expected: bool) -> None:
    """A completions event counts as content only when its text is a non-empty string."""
    assert has_content(payload, COMPLETION_KEYS) is expected


@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        (b'{"choices":[{"delta":{"role":"assistant","content":""}}]}', False),
        (b'{"choices":[{"delta":{"role":"assistant"}}]}', False),
        (b'{"choices":[{"delta":{"content":"x"}}]}', True),
        (b'{"choices":[{"delta":{"content":null,"reasoning_content":"think"}}]}', True),
        (b'{"choices":[{"delta":{"content": null}}]}', False),
    ],
)
def test_chat_content_detection(payload: bytes, expected: bool) -> None:
    """A chat delta counts when content or reasoning content is a non-empty string."""
    assert has_content(payload, CHAT_KEYS) is expected


def test_usage_event_is_parsed() -> None:
    """The usage chunk yields completion and prompt tokens and is not content."""
    found = _event(
        b'data: {"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":5}}', COMPLETION_KEYS
    )
    assert isinstance(found, _Usage)
    assert (found.content, found.output_tokens, found.input_tokens) == (False, 5, 7)


def test_done_comments_and_null_usage_are_ignored() -> None:
    """[DONE], comments and ``"usage": null`` carry nothing."""
    assert _event(b"data: [DONE]", COMPLETION_KEYS) is None
    assert _event(b": keep-alive", COMPLETION_KEYS) is None
    assert _event(b'data: {"choices":[{"text":""}],"usage":null}', COMPLETION_KEYS) is None


def test_multiline_event_with_event_name() -> None:
    """An event with an ``event:`` line before its data is still read."""
    assert _event(b'event: message\ndata: {"choices":[{"text":"x"}]}', COMPLETION_KEYS) is True


def test_truncated_json_is_malformed() -> None:
    """A payload that is not a whole JSON object is a malformed stream."""
    with pytest.raises(StreamFailure) as info:
        _event(b'data: {"choices": [{"text": "bro', COMPLETION_KEYS)
    assert info.value.kind == "malformed_stream"


def test_error_event_is_a_stream_error() -> None:
    """An error object inside the stream fails the request with its message."""
    with pytest.raises(StreamFailure) as info:
        _event(b'data: {"error": {"message": "engine died"}}', COMPLETION_KEYS)
    assert (info.value.kind, info.value.detail) == ("stream_error", "engine died")


CONTENT = b'{"choices":[{"text":" a"}]}'
USAGE = b'{"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":3}}'


def _feed(stream: bytes, pieces: int | None = None) -> _Stream:
    """Parse ``stream`` as one 200 response, in reads of ``pieces`` bytes (default: one read)."""
    parser = _Stream(COMPLETION_KEYS, patterns(COMPLETION_KEYS))
    parser.head(200)
    step = pieces or len(stream)
    for at in range(0, len(stream), step):
        parser.feed(stream[at : at + step], float(at))
    parser.close(float(len(stream)))
    return parser


SPEC_STREAMS = {
    "lf": b"data: %s\n\n" * 3 + b"data: %u\n\ndata: [DONE]\n\n",
    "crlf": b"data: %s\r\n\r\n" * 3 + b"data: %u\r\n\r\ndata: [DONE]\r\n\r\n",
    "cr": b"data: %s\r\r" * 3 + b"data: %u\r\rdata: [DONE]\r\r",
    "no space": b"data:%s\n\n" * 3 + b"data:%u\n\ndata:[DONE]\n\n",
    "comment first": b": ping\ndata: %s\n\n" * 3 + b": ping\ndata: %u\n\n",
    "comment after": b"data: %s\n: pong\n\n" * 3 + b"data: %u\n: pong\n\n",
    "comment events": b": keep-alive\n\n" + b"data: %s\n\n: x\n\n" * 3 + b"data: %u\n\n",
    "fields": b"event: completion\nid: 1\ndata: %s\nretry: 5\n\n" * 3 + b"id: 2\ndata: %u\n\n",
    "multi-line data": b'data: {"choices":\ndata: [{"text":" a"}]}\n\n' * 3
    + b'data: {"choices":[],\ndata: "usage":{"prompt_tokens":7,"completion_tokens":3}}\n\n',
    "blank lines between": b"data: %s\n\n\n\n" * 3 + b"data: %u\n\n",
    "byte order mark": b"\xef\xbb\xbfdata: %s\n\n" + b"data: %s\n\n" * 2 + b"data: %u\n\n",
    "no final blank line": b"data: %s\n\n" * 3 + b"data: %u",
    "usage first": b"data: %u\n\n" + b"data: %s\n\n" * 3,
    "usage between": b"data: %s\n\n" + b"data: %u\n\n" + b"data: %s\n\n" * 2,
    "usage null in each": b'data: {"choices":[{"text":" a"}],"usage":null}\n\n' * 3
    + b"data: %u\n\n",
}


@pytest.mark.parametrize("name", list(SPEC_STREAMS))
@pytest.mark.parametrize("pieces", [None, 1, 7])
def test_spec_streams_are_read_whole(name: str, pieces: int | None) -> None:
    """Every framing the SSE specification allows gives 3 content chunks and the usage,
    in one read, byte by byte (CRLF split between reads) and in 7-byte reads."""
    stream = SPEC_STREAMS[name].replace(b"%s", CONTENT).replace(b"%u", USAGE)
    parser = _feed(stream, pieces)
    assert len(parser.times) == 3
    assert parser.usage is not None
    assert (parser.usage.output_tokens, parser.usage.input_tokens) == (3, 7)


def test_two_data_lines_are_one_event() -> None:
    """Two data lines in one event join into one payload: one chunk, not two."""
    parser = _feed(b"data: %s\ndata: %s\n\n" % (CONTENT, CONTENT) * 2)
    assert len(parser.times) == 2


def test_truncated_event_over_lines_is_malformed() -> None:
    """Data lines that join into something other than a JSON object: ``malformed_stream``."""
    with pytest.raises(HttpFailure) as info:
        _feed(b'data: {"choices":\ndata: [{"text":" a"\n\n')
    assert info.value.kind == "malformed_stream"


def test_comment_holding_the_key_is_not_content() -> None:
    """A comment line that happens to hold a text key is skipped, whatever path reads it."""
    parser = _feed(b'data: %s\n: {"text":"x"}\n\n' % CONTENT * 2)
    assert len(parser.times) == 2


def test_stream_without_usage_ends_at_done() -> None:
    """Content events then ``[DONE]`` in one read (no usage asked): counted, no usage."""
    parser = _feed(b"data: %s\n\n" % CONTENT * 3 + b"data: [DONE]\n\n")
    assert (len(parser.times), parser.usage) == (3, None)


def test_one_line_event_that_is_not_json_is_malformed() -> None:
    """A one-line event that is neither a JSON object nor ``[DONE]``: ``malformed_stream``."""
    with pytest.raises(HttpFailure) as info:
        _feed(b"data: %s\n\ndata: hello\n\n" % CONTENT)
    assert info.value.kind == "malformed_stream"


def test_empty_data_event_is_nothing() -> None:
    """``data:`` with nothing after it dispatches no payload (no failure, no chunk)."""
    parser = _feed(b"data:\n\ndata: %s\n\n" % CONTENT)
    assert len(parser.times) == 1


def test_compressed_stream_is_a_bad_response(sse_server: Callable[..., str]) -> None:
    """A server that gzips its answer although asked for identity: ``bad_response`` saying so."""
    url = sse_server("--gzip-every", "3", "--gzip-ignores-identity")
    result = run_point(BenchSettings(url=url, concurrency=1, requests=9, input_len=4, output_len=4))
    # the probe is the server's request 1; measured requests are 2..10
    assert result.failures == {"bad_response": 3}
    assert "Content-Encoding: gzip" in result.failure_details["bad_response"]
    assert result.completed == 6


def test_identity_is_asked_for(sse_server: Callable[..., str]) -> None:
    """Requests send ``Accept-Encoding: identity``: a server that would compress does not."""
    url = sse_server("--gzip-every", "1")
    result = run_point(BenchSettings(url=url, concurrency=2, requests=6, input_len=4, output_len=4))
    assert (result.completed, result.failed) == (6, 0)


@pytest.mark.parametrize("style", ["crlf", "cr", "nospace", "fields", "multiline"])
def test_spec_framings_over_http(sse_server: Callable[..., str], style: str) -> None:
    """A real server framing its events each valid way: every token and the usage are read."""
    url = sse_server("--sse-style", style, "--ttft-ms", "2", "--itl-ms", "1")
    result = run_point(BenchSettings(url=url, concurrency=2, requests=6, input_len=4, output_len=5))
    assert (result.completed, result.failed) == (6, 0)
    assert all(len(s.chunks_s) == 5 and s.usage_output_tokens == 5 for s in result.samples)
    assert not [w for w in result.warnings if "token" in w or "usage" in w]
