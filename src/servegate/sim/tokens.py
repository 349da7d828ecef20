"""The simulated engine's tokenizer and chat template, so prompt counts are exact.

Two tokenizers, one interface (`SimTokenizer`):

- the built-in one (the default) splits special tokens such as ``<|im_start|>`` out of
  the text, then whitespace; each word is one token, its id a CRC of the word. It is
  deterministic and cheap enough for 10,000 streams, and adds no BOS, so a completion
  prompt of N words is N tokens, as before;
- ``--tokenizer PATH`` loads a Hugging Face ``tokenizer.json`` through the ``tokenizers``
  package (``pip install 'servegate[tokens]'``): a real BPE whose merges cross spaces,
  with its own BOS from its post-processor. A ``tokenizer_config.json`` beside it with a
  ``chat_template`` is rendered with Jinja, as the engines render it.

Chat requests are rendered through the template and tokenized without special tokens
(the template writes its own), as vLLM and SGLang do; the built-in template is ChatML,
which adds 3 tokens per message and 2 for the assistant's turn with the built-in
tokenizer.
"""

from __future__ import annotations

import json
import re
import zlib
from pathlib import Path
from typing import Any

from servegate.errors import UsageError

__all__ = ["CHATML", "SimTokenizer", "load_tokenizer"]

# ChatML, as Qwen's tokenizer_config.json writes it (less the default system message)
CHATML = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{{ message['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
_SPECIAL = re.compile(r"(<\|[A-Za-z_]+\|>|<s>|</s>)")


def _chatml(messages: list[dict[str, str]], add_generation_prompt: bool) -> str:
    """`CHATML` rendered without Jinja (the built-in template, on the request path)."""
    parts = [f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages]
    if add_generation_prompt:
        parts.append("<|im_start|>assistant\n")
    return "".join(parts)


class SimTokenizer:
    """Text to token ids, and chat messages to the text the template makes of them."""

    def __init__(
        self,
        *,
        hf: Any = None,
        template: str | None = None,
        bos_token: str | None = None,
        eos_token: str | None = None,
    ) -> None:
        self._hf = hf  # a tokenizers.Tokenizer, or None for the built-in words
        self._template = template
        self._bos = bos_token
        self._eos = eos_token
        self._jinja: Any = None
        if template is not None:
            from jinja2.sandbox import ImmutableSandboxedEnvironment

            env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
            self._jinja = env.from_string(template)

    @property
    def name(self) -> str:
        """``builtin`` or ``tokenizer.json``, for the log."""
        return "builtin" if self._hf is None else "tokenizer.json"

    def encode(self, text: str, *, special: bool = True) -> list[int]:
        """Token ids of ``text``; ``special`` adds what the tokenizer adds (a BOS)."""
        if self._hf is not None:
            ids: list[int] = self._hf.encode(text, add_special_tokens=special).ids
            return ids
        out: list[int] = []
        for piece in _SPECIAL.split(text):
            if not piece:
                continue
            if _SPECIAL.fullmatch(piece):
                out.append(zlib.crc32(piece.encode()) & 0xFFFF)
            else:
                out.extend(zlib.crc32(word.encode()) | 0x10000 for word in piece.split())
        return out

    def pieces(self, ids: list[int]) -> list[str]:
        """The text of each token (``token_strs``), or ``""`` where it is not known."""
        if self._hf is not None:
            return [self._hf.id_to_token(i) or "" for i in ids]
        return ["" for _ in ids]

    def render(self, messages: list[dict[str, str]], add_generation_prompt: bool = True) -> str:
        """The prompt text the chat template makes of ``messages``."""
        if self._jinja is None:
            return _chatml(messages, add_generation_prompt)
        text: str = self._jinja.render(
            messages=messages,
            add_generation_prompt=add_generation_prompt,
            bos_token=self._bos or "",
            eos_token=self._eos or "",
        )
        return text

    def encode_chat(
        self, messages: list[dict[str, str]], add_generation_prompt: bool = True
    ) -> list[int]:
        """Token ids of a chat request: the rendered template, no special tokens added."""
        return self.encode(self.render(messages, add_generation_prompt), special=False)


def load_tokenizer(path: Path | None) -> SimTokenizer:
    """The built-in tokenizer, or ``path`` (a tokenizer.json, or a folder holding one)."""
    if path is None:
        return SimTokenizer()
    file = path / "tokenizer.json" if path.is_dir() else path
    try:
        from tokenizers import Tokenizer
    except ImportError:
        raise UsageError(
            "--tokenizer needs the tokenizers package; pip install 'servegate[tokens]'."
        ) from None
    try:
        hf = Tokenizer.from_file(str(file))
    except Exception as exc:  # the Rust side raises plain Exceptions
        raise UsageError(
            f"--tokenizer {path}: cannot load a tokenizer.json there ({exc}); "
            "give a Hugging Face tokenizer.json or the folder that holds one."
        ) from None
    config: dict[str, Any] = {}
    config_file = file.parent / "tokenizer_config.json"
    if config_file.is_file():
        try:
            loaded = json.loads(config_file.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise UsageError(
                f"--tokenizer {path}: {config_file} is not JSON ({exc}); fix or remove it."
            ) from None
        config = loaded if isinstance(loaded, dict) else {}
    template = config.get("chat_template")
    return SimTokenizer(
        hf=hf,
        template=template if isinstance(template, str) else CHATML,
        bos_token=_token_text(config.get("bos_token")),
        eos_token=_token_text(config.get("eos_token")),
    )


def _token_text(value: object) -> str | None:
    """A special token as tokenizer_config.json writes it: a string or ``{"content": ...}``."""
    if isinstance(value, dict):
        value = value.get("content")
    return value if isinstance(value, str) else None
