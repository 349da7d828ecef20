"""The OpenAI-compatible surface: request validation and the engine's exact response bytes.

Requests are checked the way the engines check them (a missing prompt, a bad
``max_tokens``, a context overflow, an unknown model on vLLM) and refused with an
OpenAI-style error body. Responses are pre-encoded per request: a streamed token costs
one ``bytes.join`` of a fixed prefix, the token's bytes and a fixed suffix, never a JSON
encoding. The JSON shapes follow what each engine's server emits.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from typing import Any

from servegate.sim.tokens import SimTokenizer

__all__ = ["DONE", "ApiError", "Encoder", "Request", "error_body", "parse_request"]

DONE = b"data: [DONE]\n\n"
_MARK = "\u2063TEXT\u2063"  # stands in for the token text while templates are built

# Words that common tokenizers encode as one token each (with the leading space).
_WORDS = (
    "the", "of", "and", "to", "in", "is", "was", "for", "on", "that", "with", "as", "by", "at",
    "from", "his", "her", "they", "this", "be", "are", "have", "had", "not", "but", "what",
    "all", "were", "when", "we", "there", "can", "an", "your", "which", "their", "said", "if",
    "do", "will", "each", "about", "how", "up", "out", "them", "then", "she", "many", "some",
    "so", "these", "would", "other", "into", "has", "more", "two", "like", "him", "see",
    "time", "could", "no", "make", "than", "first", "been", "its", "who", "now", "people",
    "my", "made", "over", "did", "down", "only", "way", "find", "use", "may", "water", "long",
    "little", "very", "after", "words",
)  # fmt: skip
VOCAB = tuple((" " + word).encode() for word in _WORDS)


class ApiError(Exception):
    """A request the engine refuses: HTTP ``status`` with an OpenAI-style body."""

    def __init__(
        self, status: int, message: str, *, kind: str = "BadRequestError", param: str | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.kind = kind
        self.param = param


def error_body(status: int, message: str, kind: str, param: str | None = None) -> bytes:
    """``{"error": {...}}`` as the OpenAI API and recent vLLM return it."""
    return json.dumps(
        {"error": {"message": message, "type": kind, "param": param, "code": status}},
        separators=(",", ":"),
    ).encode()


@dataclass(frozen=True, slots=True, kw_only=True)
class Request:
    """A validated completion request."""

    chat: bool
    prompt_tokens: int
    ids: list[int]  # the prompt's token ids (the chat template's included)
    max_tokens: int
    ignore_eos: bool
    stream: bool
    include_usage: bool


def _prompt_ids(body: dict[str, Any], chat: bool, tokenizer: SimTokenizer) -> list[int]:
    """The prompt's token ids: chat messages through the template, text through the tokenizer."""
    if chat:
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise ApiError(
                400,
                "Field 'messages' is required: a non-empty list of "
                '{"role": ..., "content": ...} objects.',
                param="messages",
            )
        rendered: list[dict[str, str]] = []
        for message in messages:
            if not isinstance(message, dict) or not isinstance(message.get("role"), str):
                raise ApiError(
                    400, "Each message needs a 'role' string and a 'content'.", param="messages"
                )
            content = message.get("content")
            if isinstance(content, list):
                content = "".join(
                    part["text"]
                    for part in content
                    if isinstance(part, dict) and isinstance(part.get("text"), str)
                )
            if content is not None and not isinstance(content, str):
                raise ApiError(
                    400,
                    "A message's 'content' must be a string or a list of parts.",
                    param="messages",
                )
            rendered.append({"role": message["role"], "content": content or ""})
        return tokenizer.encode_chat(rendered) or [0]
    prompt = body.get("prompt")
    if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], str | list):
        prompt = prompt[0]
    if isinstance(prompt, str):
        return tokenizer.encode(prompt) or [0]
    if isinstance(prompt, list) and prompt:
        if all(isinstance(t, int) and not isinstance(t, bool) for t in prompt):
            return list(prompt)
        raise ApiError(
            400,
            "Only one prompt per request is simulated; send a string or a list of token ids.",
            param="prompt",
        )
    raise ApiError(
        400, "Field 'prompt' is required: a string or a list of token ids.", param="prompt"
    )


def _int_field(body: dict[str, Any], name: str) -> int | None:
    value = body.get(name)
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ApiError(400, f"'{name}' must be a positive integer, got {value!r}.", param=name)
    return value


def parse_request(
    raw: bytes,
    *,
    chat: bool,
    engine: str,
    model: str,
    max_model_len: int,
    tokenizer: SimTokenizer | None = None,
) -> Request:
    """Validate a completion request body; ``ApiError`` says what is wrong."""
    try:
        body = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ApiError(400, f"The request body is not valid JSON: {exc}.") from None
    if not isinstance(body, dict):
        raise ApiError(400, "The request body must be a JSON object.")
    asked = body.get("model")
    if asked is not None and not isinstance(asked, str):
        raise ApiError(400, "'model' must be a string.", param="model")
    if engine == "vllm" and asked is not None and asked != model:
        raise ApiError(
            404, f"The model `{asked}` does not exist.", kind="NotFoundError", param="model"
        )
    ids = _prompt_ids(body, chat, tokenizer or SimTokenizer())
    prompt_tokens = len(ids)
    n = body.get("n", 1)
    if n != 1:
        raise ApiError(400, f"'n' must be 1 (one completion per request), got {n!r}.", param="n")
    stream = body.get("stream", False)
    if not isinstance(stream, bool):
        raise ApiError(400, "'stream' must be true or false.", param="stream")
    options = body.get("stream_options")
    include_usage = False
    if options is not None:
        if not stream:
            raise ApiError(
                400,
                "Stream options can only be defined when `stream=True`.",
                param="stream_options",
            )
        if not isinstance(options, dict):
            raise ApiError(400, "'stream_options' must be an object.", param="stream_options")
        include_usage = bool(options.get("include_usage", False))
    ignore_eos = body.get("ignore_eos", False)
    if not isinstance(ignore_eos, bool):
        raise ApiError(400, "'ignore_eos' must be true or false.", param="ignore_eos")
    max_tokens = _int_field(body, "max_tokens")
    if chat:
        max_tokens = _int_field(body, "max_completion_tokens") or max_tokens
    if prompt_tokens >= max_model_len:
        raise ApiError(
            400,
            f"This model's maximum context length is {max_model_len} tokens. "
            f"However, your request has {prompt_tokens} input tokens. Please reduce "
            "the length of the input messages.",
            param="prompt",
        )
    if max_tokens is None:
        max_tokens = 16 if not chat else max_model_len - prompt_tokens
    if prompt_tokens + max_tokens > max_model_len:
        raise ApiError(
            400,
            f"This model's maximum context length is {max_model_len} tokens. "
            f"However, you requested {prompt_tokens + max_tokens} tokens "
            f"({prompt_tokens} in the messages, {max_tokens} in the completion). "
            "Please reduce the length of the messages or completion.",
            param="max_tokens",
        )
    return Request(
        chat=chat,
        prompt_tokens=prompt_tokens,
        ids=ids,
        max_tokens=max_tokens,
        ignore_eos=ignore_eos,
        stream=stream,
        include_usage=include_usage,
    )


def _dump(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


class Encoder:
    """The bytes of one response, in the shapes ``engine`` emits."""

    __slots__ = (
        "chat",
        "created",
        "engine",
        "head",
        "last_tail",
        "mid_tail",
        "model",
        "rid",
        "role",
    )

    def __init__(self, engine: str, model: str, chat: bool) -> None:
        self.engine = engine
        self.model = model
        self.chat = chat
        prefix = "chatcmpl-" if chat or engine == "llamacpp" else "cmpl-"
        self.rid = (prefix if engine != "sglang" else "") + os.urandom(16).hex()
        self.created = int(time.time())
        mid = _dump(self._chunk(_MARK, None))
        head, _, tail = mid.partition(_MARK)
        self.head = b"data: " + head.encode()
        self.mid_tail = tail.encode() + b"\n\n"
        self.last_tail = b""
        self.role = b""
        if chat:
            self.role = b"data: " + _dump(self._chunk("", None, role=True)).encode() + b"\n\n"

    def finish(self, reason: str) -> None:
        """Fix the finish reason carried by the last content chunk."""
        last = _dump(self._chunk(_MARK, reason))
        self.last_tail = last.partition(_MARK)[2].encode() + b"\n\n"

    def _chunk(self, text: str, finish: str | None, role: bool = False) -> dict[str, Any]:
        obj = "chat.completion.chunk" if self.chat else "text_completion"
        if self.chat:
            if self.engine == "sglang":
                delta: dict[str, Any] = {
                    "role": "assistant" if role else None,
                    "content": text,
                    "reasoning_content": None,
                    "tool_calls": None,
                }
            elif role:
                delta = {"role": "assistant", "content": text}
            else:
                delta = {"content": text}
            choice: dict[str, Any] = {
                "index": 0,
                "delta": delta,
                "logprobs": None,
                "finish_reason": finish,
            }
        else:
            choice = {"index": 0, "text": text, "logprobs": None, "finish_reason": finish}
        if self.engine == "llamacpp":
            return {
                "choices": [choice],
                "created": self.created,
                "id": self.rid,
                "model": self.model,
                "system_fingerprint": "b4589-eb7cf15a",
                "object": obj,
            }
        if self.engine == "sglang":
            choice["matched_stop"] = None
        else:
            choice["stop_reason"] = None
        out: dict[str, Any] = {
            "id": self.rid,
            "object": obj,
            "created": self.created,
            "model": self.model,
            "choices": [choice],
        }
        if not self.chat or self.engine == "sglang":
            out["usage"] = None
        return out

    def usage_chunk(self, prompt_tokens: int, completion_tokens: int, cached: int = 0) -> bytes:
        """The final chunk that carries ``usage`` (``stream_options.include_usage``)."""
        obj = "chat.completion.chunk" if self.chat else "text_completion"
        body = {
            "id": self.rid,
            "object": obj,
            "created": self.created,
            "model": self.model,
            "choices": [],
            "usage": self._usage(prompt_tokens, completion_tokens, cached),
        }
        return b"data: " + _dump(body).encode() + b"\n\n"

    def full(
        self, text: str, finish: str, prompt_tokens: int, completion_tokens: int, cached: int = 0
    ) -> bytes:
        """The whole non-streamed response."""
        if self.chat:
            choice: dict[str, Any] = {
                "index": 0,
                "message": {"role": "assistant", "content": text, "tool_calls": []},
                "logprobs": None,
                "finish_reason": finish,
            }
            obj = "chat.completion"
        else:
            choice = {"index": 0, "text": text, "logprobs": None, "finish_reason": finish}
            obj = "text_completion"
        if self.engine == "sglang":
            choice["matched_stop"] = None
        elif self.engine != "llamacpp":
            choice["stop_reason"] = None
        body = {
            "id": self.rid,
            "object": obj,
            "created": self.created,
            "model": self.model,
            "choices": [choice],
            "usage": self._usage(prompt_tokens, completion_tokens, cached),
        }
        return _dump(body).encode()

    def _usage(self, prompt_tokens: int, completion_tokens: int, cached: int) -> dict[str, Any]:
        """``usage``; SGLang's carries the prompt's cached tokens (``--enable-cache-report``)."""
        usage: dict[str, Any] = {
            "prompt_tokens": prompt_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
            "completion_tokens": completion_tokens,
        }
        if self.engine == "sglang":
            usage["prompt_tokens_details"] = {"cached_tokens": cached}
        return usage
