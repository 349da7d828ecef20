"""Token-exact prompts: count a prompt as the server will, and build one to a token count.

A word is not a token: a BPE's merges cross spaces, a tokenizer adds a BOS, and a chat
template adds its own tokens (about 13 pushed a 4096-token prompt into the 8192 prefill
bucket in tt-inference-server #4179). ``--tokenizer`` names who counts:

- ``server``: the engine's own ``POST /tokenize``, in the shape it answers to (vLLM's
  ``{"prompt"}`` or ``{"messages"}``, SGLang's ``{"prompt"}``, llama.cpp's ``{"content"}``
  with ``/apply-template`` for chat, TGI's ``{"inputs"}``). Where the server cannot count
  a chat prompt itself (SGLang, TGI), one chat request with ``max_tokens: 1`` measures the
  template's tokens. A server without ``/tokenize`` (trtllm-serve) is a `TokenizeMissing`;
  the caller falls back to approximate prompts and says so.
- a path: a local ``tokenizer.json`` (through the ``tokenizers`` package, extra
  ``servegate[tokens]``) with the ``chat_template`` of the ``tokenizer_config.json``
  beside it, rendered as the engines render it.

`exact_text` then adjusts a prompt of vocabulary words until the counter says it is the
requested length: a few counts per prompt, never on the send path. A multi-turn session's
later turns are counted whole once each, at send time, with `Counter.count_messages`
(chat) or `Counter.count` (completions): one ``/tokenize`` per turn on vLLM's shape; a
counter travels to the worker processes as a pickle.
"""

from __future__ import annotations

import http.client
import json
import os
import random
import threading
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from servegate.errors import UsageError
from servegate.sim.tokens import SimTokenizer, load_tokenizer

__all__ = [
    "ContentCounter",
    "Counter",
    "LocalCounter",
    "ServerCounter",
    "TokenizeMissing",
    "exact_text",
    "make_counter",
    "model_tokenizer",
]

PROBE = "the water of time"  # a content whose count calibrates a chat template
CONTENT_CACHE = 65_536  # message contents whose counts a server counter keeps


class TokenizeMissing(Exception):
    """The server has no ``/tokenize`` the client knows how to call."""


class Counter(Protocol):
    """What counts prompt tokens as the server will count them."""

    name: str  # how the output names the counter: "server /tokenize (vllm)", a path

    def count(self, text: str, chat: bool) -> int:
        """``usage.prompt_tokens`` of a request whose prompt (or one user message) is ``text``."""

    def count_messages(self, messages: list[dict[str, str]]) -> int:
        """``usage.prompt_tokens`` of a chat request of ``messages`` (a conversation)."""


@dataclass(slots=True)
class LocalCounter:
    """A local tokenizer.json and its chat template."""

    path: Path
    name: str = ""
    _tok: SimTokenizer = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.name = str(self.path)
        self._tok = load_tokenizer(self.path)

    def count(self, text: str, chat: bool) -> int:
        """The tokens of ``text`` with the BOS, or of its chat-templated message."""
        if chat:
            return self.count_messages([{"role": "user", "content": text}])
        return len(self._tok.encode(text))

    def count_messages(self, messages: list[dict[str, str]]) -> int:
        """The tokens of the chat template rendered over ``messages``."""
        return len(self._tok.encode_chat(messages))

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled as its path (a worker loads the tokenizer again) and its name."""
        return (_local_counter, (self.path, self.name))


def _local_counter(path: Path, name: str) -> LocalCounter:
    """A `LocalCounter` unpickled in a worker process."""
    counter = LocalCounter(path)
    counter.name = name
    return counter


@dataclass(slots=True)
class ServerCounter:
    """The engine's ``/tokenize``, its shape found by asking."""

    base_url: str
    model: str
    authorization: str | None = None
    timeout_s: float = 30.0
    shape: str = ""  # vllm (takes messages), sglang, llamacpp, tgi
    name: str = ""
    _overhead: int | None = field(default=None, repr=False)
    _pair: int | None = field(default=None, repr=False)  # template tokens per reply + message
    _contents: dict[str, int] = field(default_factory=dict, repr=False)  # raw counts, cached
    # one kept-alive connection a thread (a session's turns are counted from threads)
    _local: threading.local = field(default_factory=threading.local, repr=False)
    _opened: list[http.client.HTTPConnection] = field(default_factory=list, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __post_init__(self) -> None:
        try:
            self.shape = self._detect()
        finally:
            if not self.shape:
                self.close()
        self.name = f"server /tokenize ({self.shape})"

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled without its connections, its shape and template counts kept (a worker
        asks nothing again)."""
        keys = ("base_url", "model", "authorization", "timeout_s", "shape", "name")
        state = {key: getattr(self, key) for key in (*keys, "_overhead", "_pair")}
        return (_server_counter, (state,))

    def _connection(self) -> http.client.HTTPConnection:
        """This thread's connection to the server, opened on first use."""
        conn: http.client.HTTPConnection | None = getattr(self._local, "conn", None)
        if conn is None:
            url = urllib.parse.urlsplit(self.base_url)
            kind = (
                http.client.HTTPSConnection if url.scheme == "https" else http.client.HTTPConnection
            )
            conn = kind(url.netloc, timeout=self.timeout_s)
            self._local.conn = conn
            with self._lock:
                self._opened.append(conn)
        return conn

    def close(self) -> None:
        """Close every thread's connection (the counter opens one again when used)."""
        with self._lock:
            opened, self._opened[:] = list(self._opened), []
        for conn in opened:
            conn.close()
        self._local = threading.local()

    def _post(self, path: str, body: dict[str, Any]) -> tuple[int, Any]:
        """POST ``body`` on this thread's kept-alive connection: the status and the JSON
        answer (None when the status is not 200). A connection the server closed is
        opened again once; a server that does not answer is a `TokenizeMissing`."""
        headers = {"Content-Type": "application/json"}
        if self.authorization:
            headers["Authorization"] = self.authorization
        target = urllib.parse.urlsplit(self.base_url).path.rstrip("/") + path
        data = json.dumps(body).encode()
        for attempt in range(2):
            conn = self._connection()
            try:
                conn.request("POST", target, body=data, headers=headers)
                resp = conn.getresponse()
                raw = resp.read()
                break
            except (OSError, http.client.HTTPException) as exc:
                conn.close()  # opened again by the next request
                if attempt:
                    raise TokenizeMissing(f"{path} did not answer ({exc})") from None
        if resp.status != 200:
            return resp.status, None
        try:
            return resp.status, json.loads(raw)
        except ValueError as exc:
            raise TokenizeMissing(f"{path} did not answer ({exc})") from None

    def _detect(self) -> str:
        status, body = self._post("/tokenize", {"model": self.model, "prompt": PROBE})
        if status == 200 and isinstance(body, dict) and isinstance(body.get("count"), int):
            return "vllm" if "token_strs" in body else "sglang"
        status, body = self._post("/tokenize", {"content": PROBE})
        if status == 200 and isinstance(body, dict) and isinstance(body.get("tokens"), list):
            return "llamacpp"
        status, body = self._post("/tokenize", {"inputs": PROBE})
        if status == 200 and isinstance(body, list):
            return "tgi"
        raise TokenizeMissing("no /tokenize in the vLLM, SGLang, llama.cpp or TGI shape")

    def _raw(self, text: str, special: bool) -> int:
        """Tokens of ``text`` alone (``special``: with the BOS the server adds)."""
        if self.shape == "llamacpp":
            _, body = self._post("/tokenize", {"content": text, "add_special": special})
            return len(body["tokens"])
        if self.shape == "tgi":
            _, body = self._post("/tokenize", {"inputs": text})
            return len(body)  # TGI always adds its special tokens
        body = {"model": self.model, "prompt": text, "add_special_tokens": special}
        _, answer = self._post("/tokenize", body)
        return int(answer["count"])

    def count(self, text: str, chat: bool) -> int:
        """The server's count of a completion prompt, or of a chat request's messages."""
        if not chat:
            return self._raw(text, special=True)
        messages = [{"role": "user", "content": text}]
        if self.shape == "vllm":
            body = {"model": self.model, "messages": messages, "add_generation_prompt": True}
            _, answer = self._post("/tokenize", body)
            return int(answer["count"])
        if self.shape == "llamacpp":
            _, answer = self._post("/apply-template", {"messages": messages})
            return self._raw(answer["prompt"], special=False)
        return self._raw(text, special=False) + self._template_tokens()

    def count_messages(self, messages: list[dict[str, str]]) -> int:
        """The server's count of a chat request of ``messages``: one ``/tokenize`` with the
        messages (vLLM); ``/apply-template`` and one ``/tokenize`` (llama.cpp); else each
        message's content counted once (cached, so a turn counts its two new ones) plus the
        template's tokens, measured for one user message and for each assistant reply and
        user message after it (a conversation alternates them)."""
        if self.shape == "vllm":
            body = {"model": self.model, "messages": messages, "add_generation_prompt": True}
            _, answer = self._post("/tokenize", body)
            return int(answer["count"])
        if self.shape == "llamacpp":
            _, answer = self._post("/apply-template", {"messages": messages})
            return self._raw(answer["prompt"], special=False)
        if len(self._contents) > CONTENT_CACHE:
            self._contents.clear()
        total = 0
        for message in messages:
            n = self._contents.get(message["content"])
            if n is None:
                n = self._contents[message["content"]] = self._raw(message["content"], False)
            total += n
        return total + self._template_tokens() + (len(messages) - 1) // 2 * self._pair_tokens()

    def _template_tokens(self) -> int:
        """The chat template's tokens, from one chat request's ``usage.prompt_tokens``."""
        if self._overhead is None:
            used = self._chat_usage([{"role": "user", "content": PROBE}])
            self._overhead = used - self._raw(PROBE, special=False)
        return self._overhead

    def _pair_tokens(self) -> int:
        """The template's tokens an assistant reply and the user message after it add."""
        if self._pair is None:
            talk = [{"role": r, "content": PROBE} for r in ("user", "assistant", "user")]
            used = self._chat_usage(talk)
            self._pair = used - 3 * self._raw(PROBE, special=False) - self._template_tokens()
        return self._pair

    def _chat_usage(self, messages: list[dict[str, str]]) -> int:
        """``usage.prompt_tokens`` of one chat request of ``messages`` (``max_tokens: 1``)."""
        body = {"model": self.model, "messages": messages, "max_tokens": 1}
        status, answer = self._post("/v1/chat/completions", body)
        if status != 200 or not isinstance(answer, dict):
            raise TokenizeMissing(f"a chat request to count the template got HTTP {status}")
        return int(answer["usage"]["prompt_tokens"])

    def prepare_conversations(self) -> None:
        """Measure what counting a conversation needs before the counter goes to the
        workers (SGLang, TGI: the template's tokens per reply), so no chat request to
        measure it is sent while the point runs."""
        if self.shape in ("sglang", "tgi"):
            self._pair_tokens()


@dataclass(slots=True)
class ContentCounter:
    """A message's own tokens, without the BOS or template a whole request adds: what a
    later turn's new message of a session is built to (the conversation before it holds
    those)."""

    counter: Counter
    name: str = ""
    _base: int | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.name = self.counter.name

    def count(self, text: str, chat: bool) -> int:
        """The tokens of ``text`` alone (``chat`` makes no difference)."""
        if self._base is None:
            self._base = self.counter.count("", chat=False)
        return self.counter.count(text, chat=False) - self._base

    def count_messages(self, messages: list[dict[str, str]]) -> int:
        """The tokens of the messages' contents alone."""
        return sum(self.count(m["content"], chat=True) for m in messages)


def _server_counter(state: dict[str, Any]) -> ServerCounter:
    """A `ServerCounter` unpickled in a worker process, its shape not asked again."""
    counter = object.__new__(ServerCounter)
    for key, value in state.items():
        setattr(counter, key, value)
    counter._contents, counter._opened = {}, []
    counter._local, counter._lock = threading.local(), threading.Lock()
    return counter


def model_tokenizer(model: str) -> Path | None:
    """The served model's own tokenizer.json on this machine, if it is here: ``model`` as
    a local folder (servers started with a path), else its snapshot in the Hugging Face
    cache (``HF_HUB_CACHE``, ``HF_HOME``/hub or ``~/.cache/huggingface/hub``)."""
    folder = Path(model).expanduser()
    if (folder / "tokenizer.json").is_file():
        return folder
    cache = os.environ.get("HF_HUB_CACHE")
    if not cache:
        home = os.environ.get("HF_HOME") or str(
            Path(os.environ.get("XDG_CACHE_HOME") or "~/.cache") / "huggingface"
        )
        cache = str(Path(home) / "hub")
    snapshots = Path(cache).expanduser() / ("models--" + model.replace("/", "--")) / "snapshots"
    found = sorted(snapshots.glob("*/tokenizer.json")) if snapshots.is_dir() else []
    return found[-1].parent if found else None


def make_counter(
    tokenizer: str, *, base_url: str, model: str, authorization: str | None
) -> Counter:
    """The counter ``--tokenizer`` names: ``server`` or a tokenizer.json path.

    ``server`` without a ``/tokenize`` (trtllm-serve) falls back to the served model's own
    tokenizer.json when it is on this machine (`model_tokenizer`); otherwise it raises
    `TokenizeMissing`. A path that holds no tokenizer is a `UsageError`.
    """
    if tokenizer == "server":
        try:
            return ServerCounter(base_url=base_url, model=model, authorization=authorization)
        except TokenizeMissing as exc:
            local = model_tokenizer(model)
            if local is None:
                raise TokenizeMissing(
                    f"{exc}, and no tokenizer.json of {model} on this machine"
                ) from None
            counter = LocalCounter(local)
            counter.name = f"{local} (the server has no /tokenize)"
            return counter
    path = Path(tokenizer)
    if not path.exists():
        raise UsageError(
            f"--tokenizer {tokenizer}: no such file; give a tokenizer.json, its folder, "
            "or 'server' for the engine's /tokenize."
        )
    return LocalCounter(path)


def exact_text(
    counter: Counter, *, target: int, chat: bool, words: list[str], rng: random.Random
) -> tuple[str, int]:
    """A text of vocabulary ``words`` that ``counter`` counts as ``target`` tokens.

    Returns the text and its count, which is ``target`` unless no text can be (a target
    below the template's own tokens): then the nearest count found.
    """

    def text_of(n: int) -> str:
        while len(drawn) < n:
            drawn.extend(rng.choices(words, k=max(16, n - len(drawn))))
        return " ".join(drawn[:n])

    drawn: list[str] = []
    base = counter.count("", chat)  # the BOS, or the template's own tokens
    k = max(1, target - base)
    lo: tuple[int, int] = (0, base)  # the longest text known to count <= target
    hi: int | None = None  # the shortest known to count more
    for _ in range(40):
        got = counter.count(text_of(k), chat)
        if got == target:
            return text_of(k), got
        if got < target:
            lo = max(lo, (k, got))
        else:
            hi = k if hi is None else min(hi, k)
        if hi is not None and hi - lo[0] <= 1:
            break
        # the next guess from the tokens per word seen so far, kept inside the bracket
        per_word = (got - base) / k if got > base else 1.0
        k = k + round((target - got) / max(per_word, 0.25)) or (1 if got < target else -1)
        k = max(lo[0] + 1, k if hi is None else min(hi - 1, k))
    # the last word overshoots: end on one that fills the gap exactly
    k, got = lo
    if k == 0:
        return text_of(1), counter.count(text_of(1), chat)
    head = text_of(k)
    # append the word that comes closest without passing the target, until it is met (a
    # word's tokens depend on its neighbours, so each candidate is counted in place)
    for _ in range(8):
        best_fill: tuple[int, str] = (got, head)
        for word in rng.sample(words, min(len(words), 48)):
            candidate = f"{head} {word}"
            n = counter.count(candidate, chat)
            if n == target:
                return candidate, n
            if best_fill[0] < n < target:
                best_fill = (n, candidate)
        if best_fill[1] == head:
            break
        got, head = best_fill
    return head, got


def prompt_check(
    requested: list[int], measured: list[int | None], *, tokenizer: str | None, note: str | None
) -> tuple[dict[str, Any], list[str]]:
    """Requested prompt tokens against ``usage.prompt_tokens``: the JSON block and warnings.

    ``requested`` and ``measured`` are per completed request; ``tokenizer`` is the
    counter's name (None: approximate prompts, and ``note`` says why when one was asked).
    """
    pairs = [(r, m) for r, m in zip(requested, measured, strict=True) if m is not None]
    diffs = [m - r for r, m in pairs]
    block: dict[str, Any] = {
        "exact": tokenizer is not None,
        "tokenizer": tokenizer,
        "requested_mean": sum(requested) / len(requested) if requested else None,
        "usage_mean": sum(m for _, m in pairs) / len(pairs) if pairs else None,
        "compared": len(pairs),
        "mismatched": sum(1 for d in diffs if d),
        "max_abs_diff": max((abs(d) for d in diffs), default=None),
        "mean_diff": sum(diffs) / len(diffs) if diffs else None,
    }
    warnings: list[str] = []
    if tokenizer is None:
        if note:
            warnings.append(f"prompts are approximate: {note}.")
    elif block["mismatched"]:
        warnings.append(
            f"{block['mismatched']} of {len(pairs)} requests had usage.prompt_tokens other "
            f"than requested by {tokenizer} (max difference {block['max_abs_diff']}, mean "
            f"{block['mean_diff']:+.2f} tokens); the server counts prompts differently "
            "(another tokenizer, template or BOS)."
        )
    return block, warnings
