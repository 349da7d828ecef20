"""The lean SSE classification: content detection by bytes, usage and error events."""

from __future__ import annotations

import pytest

from servegate.bench.stream import CHAT_KEYS, COMPLETION_KEYS, StreamFailure, _event, has_content


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
    assert found is not None and found is not True
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
