"""``POST /tokenize`` in each engine's request and response shape.

- vLLM: ``{"prompt": ..., "add_special_tokens": true}`` or ``{"messages": [...],
  "add_generation_prompt": true}`` -> ``{"count", "max_model_len", "tokens", "token_strs"}``
  (``/tokenize``; chat messages go through the chat template, without special tokens);
- SGLang: ``{"prompt": ..., "add_special_tokens": true}`` -> ``{"tokens", "count",
  "max_model_len"}`` (``/tokenize`` and ``/v1/tokenize``; no messages);
- llama.cpp: ``{"content": ..., "add_special": false, "with_pieces": false}`` ->
  ``{"tokens": [...]}`` (pieces as ``{"id", "piece"}`` with ``with_pieces``), and
  ``/apply-template`` (``{"messages"}`` -> ``{"prompt"}``);
- the generic engine answers as TGI does: ``{"inputs": ...}`` -> ``[{"id", "text",
  "start", "stop"}, ...]``, with the tokenizer's special tokens added.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from servegate.sim.api import error_body

if TYPE_CHECKING:
    from servegate.sim.server import App

__all__ = ["tokenize_route"]


def _dump(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


def _bad(message: str) -> tuple[int, bytes]:
    return 400, error_body(400, message, "BadRequestError")


def _messages(value: object) -> list[dict[str, str]] | None:
    """Chat messages with string contents, or None when they are not that."""
    if not isinstance(value, list) or not value:
        return None
    out = []
    for message in value:
        if not isinstance(message, dict):
            return None
        role, content = message.get("role"), message.get("content")
        if not isinstance(role, str) or not isinstance(content, str):
            return None
        out.append({"role": role, "content": content})
    return out


def tokenize_route(app: App, path: str, raw: bytes) -> tuple[int, bytes]:
    """The status and body of a tokenize (or apply-template) request to ``app``."""
    try:
        body = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        return _bad(f"The request body is not valid JSON: {exc}.")
    if not isinstance(body, dict):
        return _bad("The request body must be a JSON object.")
    engine = app.config.engine
    tok = app.tokenizer
    if path == "/apply-template":
        messages = _messages(body.get("messages"))
        if engine != "llamacpp" or messages is None:
            return _bad("Field 'messages' is required: a list of {role, content} strings.")
        return 200, _dump({"prompt": tok.render(messages)})
    if engine == "llamacpp":
        content = body.get("content")
        if not isinstance(content, str):
            return _bad("Field 'content' is required: a string.")
        ids = tok.encode(content, special=bool(body.get("add_special", False)))
        if body.get("with_pieces"):
            pieces = tok.pieces(ids)
            rows = [{"id": i, "piece": p} for i, p in zip(ids, pieces, strict=True)]
            return 200, _dump({"tokens": rows})
        return 200, _dump({"tokens": ids})
    if engine == "generic":
        inputs = body.get("inputs")
        if not isinstance(inputs, str):
            return _bad("Field 'inputs' is required: a string.")
        ids = tok.encode(inputs)
        pieces = tok.pieces(ids)
        tgi = [
            {"id": i, "text": p, "start": 0, "stop": 0} for i, p in zip(ids, pieces, strict=True)
        ]
        return 200, _dump(tgi)
    max_len = app.config.max_model_len
    if engine == "vllm" and "messages" in body:
        messages = _messages(body.get("messages"))
        if messages is None:
            return _bad("Field 'messages' must be a list of {role, content} strings.")
        text = tok.render(messages, bool(body.get("add_generation_prompt", True)))
        ids = tok.encode(text, special=bool(body.get("add_special_tokens", False)))
    else:
        prompt = body.get("prompt")
        if isinstance(prompt, list) and len(prompt) == 1:
            prompt = prompt[0]
        if not isinstance(prompt, str):
            return _bad("Field 'prompt' is required: a string.")
        ids = tok.encode(prompt, special=bool(body.get("add_special_tokens", True)))
    if engine == "sglang":
        return 200, _dump({"tokens": ids, "count": len(ids), "max_model_len": max_len})
    strs = tok.pieces(ids) if body.get("return_token_strs") else None
    return 200, _dump(
        {"count": len(ids), "max_model_len": max_len, "tokens": ids, "token_strs": strs}
    )
