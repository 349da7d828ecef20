"""Prompts for a load point, built before the run and encoded as request bodies.

No tokenizer runs anywhere on the send path. The random dataset draws words from a fixed
vocabulary of short, common English words that the usual BPE tokenizers (Llama, Qwen,
GPT) encode as one token each when preceded by a space, so a prompt of N words is about
N tokens; the server's ``usage.prompt_tokens`` gives the exact count afterwards. Each
prompt starts with its own random words, so no two prompts share a cacheable prefix.
Request bodies are serialised once, here, so the send loop only writes bytes.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from servegate.bench.lengths import parse_lengths
from servegate.bench.prefix import prefix_words
from servegate.bench.prompts import salt_prefix, salted_seed
from servegate.bench.spec import DatasetSpec, parse_dataset
from servegate.bench.tokens import ContentCounter, Counter, exact_text
from servegate.bench.trace import read_trace, trace_words
from servegate.errors import UsageError

# Common words that are single tokens (with their leading space) in Llama-2/3, Qwen2 and
# GPT-4 tokenizers.
VOCABULARY = [
    "the",
    "of",
    "and",
    "to",
    "in",
    "is",
    "was",
    "for",
    "on",
    "that",
    "with",
    "as",
    "by",
    "at",
    "from",
    "his",
    "her",
    "they",
    "this",
    "be",
    "are",
    "have",
    "had",
    "not",
    "but",
    "what",
    "all",
    "were",
    "when",
    "we",
    "there",
    "can",
    "an",
    "your",
    "which",
    "their",
    "said",
    "if",
    "do",
    "will",
    "each",
    "about",
    "how",
    "up",
    "out",
    "them",
    "then",
    "she",
    "many",
    "some",
    "so",
    "these",
    "would",
    "other",
    "into",
    "has",
    "more",
    "two",
    "like",
    "him",
    "see",
    "time",
    "could",
    "no",
    "make",
    "than",
    "first",
    "been",
    "its",
    "who",
    "now",
    "people",
    "my",
    "made",
    "over",
    "did",
    "down",
    "only",
    "way",
    "find",
    "use",
    "may",
    "water",
    "long",
    "little",
    "very",
    "after",
    "words",
    "called",
    "just",
    "where",
    "most",
    "know",
    "get",
    "through",
    "back",
    "much",
    "before",
    "go",
    "good",
    "new",
    "write",
    "our",
    "used",
    "me",
    "man",
    "too",
    "any",
    "day",
    "same",
    "right",
    "look",
    "think",
    "also",
    "around",
    "another",
    "came",
    "come",
    "work",
    "three",
    "word",
    "must",
    "because",
    "does",
    "part",
    "even",
    "place",
    "well",
    "such",
    "here",
    "take",
    "why",
    "things",
    "help",
    "put",
    "years",
    "different",
    "away",
    "again",
    "off",
    "went",
    "old",
    "number",
    "great",
    "tell",
    "men",
    "say",
    "small",
    "every",
    "found",
    "still",
    "between",
    "name",
    "should",
    "home",
    "big",
    "give",
    "air",
    "line",
    "set",
    "own",
    "under",
    "read",
    "last",
    "never",
    "us",
    "left",
    "end",
    "along",
    "while",
    "might",
    "next",
    "sound",
    "below",
    "saw",
    "something",
    "thought",
    "both",
    "few",
    "those",
    "always",
    "looked",
    "show",
    "large",
    "often",
    "together",
    "asked",
    "house",
    "world",
    "going",
    "want",
    "school",
    "important",
    "until",
    "form",
    "food",
    "keep",
    "children",
    "feet",
    "land",
    "side",
    "without",
    "boy",
    "once",
    "animals",
    "life",
    "enough",
    "took",
    "sometimes",
    "four",
    "head",
    "above",
    "kind",
    "began",
    "almost",
    "live",
    "page",
    "got",
    "earth",
    "need",
    "far",
    "hand",
    "high",
    "year",
    "mother",
    "light",
    "parts",
    "country",
    "father",
    "let",
    "night",
    "following",
    "picture",
    "being",
    "study",
    "second",
    "eyes",
    "soon",
    "times",
    "story",
    "boys",
    "since",
    "white",
    "days",
    "ever",
    "paper",
    "hard",
    "near",
    "sentence",
    "better",
    "best",
    "across",
    "during",
    "today",
    "others",
    "however",
    "sure",
    "means",
    "knew",
    "its",
    "try",
    "told",
    "young",
    "miles",
    "sun",
    "ways",
    "thing",
    "whole",
    "hear",
    "example",
    "heard",
    "several",
    "change",
    "answer",
    "room",
    "sea",
    "against",
    "top",
    "turned",
    "learn",
    "point",
    "city",
    "play",
    "toward",
    "five",
    "using",
    "himself",
    "usually",
    "money",
    "seen",
    "car",
    "morning",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class Prompt:
    """One request to send: the encoded body and the lengths it asks for."""

    body: bytes
    input_len: int  # prompt tokens: exact with a tokenizer, else words or 4 chars/token
    output_len: int | None  # max_tokens sent, or None when the server decides
    at_s: float | None = None  # a trace's send time, seconds after its first request
    # multiturn: the session and the turn (from 0) this is the new user message of; the
    # body holds that message alone, and the conversation so far goes before it at send
    session: int | None = None
    turn: int = 0
    # agentic: the session that forked this sub-agent session, and after which of its turns
    parent: int | None = None
    fork: int = 0


def build_prompts(
    *,
    dataset: str,
    count: int,
    input_len: int,
    output_len: int | None,
    api: str,
    model: str,
    seed: int,
    ignore_eos: bool,
    counter: Counter | None = None,
    salt: tuple[int, ...] = (),
) -> list[Prompt]:
    """`count` prompts from `dataset`, cycled when the dataset is shorter.

    With a `counter` the prompts are token-exact: the random dataset's are built to
    `input_len` tokens as the counter counts them (chat: the template's tokens included),
    a file's are counted. With a `salt` (the point's coordinates, ``--cache isolate``)
    the random draws are seeded by it and a file's prompts start with its tag.
    """
    chat = api == "chat"
    spec = parse_dataset(dataset)
    if spec.kind == "trace":
        trace = read_trace(spec)[:count]
        words = trace_words(trace, spec.get("block"), salted_seed(seed, *salt), VOCABULARY)
        speed = spec.get("speed")
        prompts = []
        for row, w in zip(trace, words, strict=True):
            text = " ".join(w)
            out = output_len or row.output_len
            prompts.append(
                Prompt(
                    body=encode_body(
                        api=api, model=model, text=text, max_tokens=out, ignore_eos=ignore_eos
                    ),
                    input_len=counter.count(text, chat) if counter is not None else len(w),
                    output_len=out,
                    at_s=row.at_s / speed,
                )
            )
        return prompts
    if spec.kind == "multiturn":
        rng = random.Random(salted_seed(seed, *salt))
        turns, prompts = spec.get("turns"), []
        for i in range(count):
            n = spec.get("first") if i % turns == 0 else spec.get("user")
            text, n = _turn_text(n, first=i % turns == 0, chat=chat, counter=counter, rng=rng)
            body = encode_body(
                api=api, model=model, text=text, max_tokens=output_len, ignore_eos=ignore_eos
            )
            prompts.append(
                Prompt(
                    body=body,
                    input_len=n,
                    output_len=output_len,
                    session=i // turns,
                    turn=i % turns,
                )
            )
        return prompts
    if spec.kind == "agentic":
        shape = {"api": api, "model": model, "max_tokens": output_len, "ignore_eos": ignore_eos}
        return _agentic(spec, count, salted_seed(seed, *salt), shape, counter)
    if spec.kind == "prefix":
        words = prefix_words(spec, count, salted_seed(seed, *salt), VOCABULARY)
        texts = [" ".join(w) for w in words]
        items = [
            (text, counter.count(text, chat) if counter is not None else len(w), output_len)
            for text, w in zip(texts, words, strict=True)
        ]
    elif spec.kind == "random" and (spec.get("input") or spec.get("output")):
        items = _drawn(
            spec,
            count,
            (input_len, output_len),
            rng=random.Random(salted_seed(seed, *salt)),
            chat=chat,
            counter=counter,
        )
    elif spec.kind == "random":
        if counter is None:
            texts = _random_texts(count, input_len, salted_seed(seed, *salt))
            items = [(text, input_len, output_len) for text in texts]
        else:
            rng = random.Random(salted_seed(seed, *salt))
            items = []
            for _ in range(count):
                text, got = exact_text(
                    counter, target=input_len, chat=chat, words=VOCABULARY, rng=rng
                )
                items.append((text, got, output_len))
    else:
        assert spec.file is not None
        read = _sharegpt if spec.kind == "sharegpt" else _jsonl
        rows = read(Path(spec.file))
        rng = random.Random(seed)
        rng.shuffle(rows)
        tag = salt_prefix(seed, *salt)
        items = []
        for i in range(count):
            text, wanted = rows[i % len(rows)]
            text = tag + text
            n_in = counter.count(text, chat) if counter is not None else max(1, len(text) // 4)
            items.append((text, n_in, output_len or wanted))
    return [
        Prompt(
            body=encode_body(
                api=api, model=model, text=text, max_tokens=out, ignore_eos=ignore_eos
            ),
            input_len=n_in,
            output_len=out,
        )
        for text, n_in, out in items
    ]


def _drawn(
    spec: DatasetSpec,
    count: int,
    lengths: tuple[int, int | None],
    *,
    rng: random.Random,
    chat: bool,
    counter: Counter | None,
) -> list[tuple[str, int, int | None]]:
    """Random prompts whose input and output lengths are drawn from their distributions
    (`servegate.bench.lengths`; a missing one is ``lengths``: --input-len, --output-len)."""
    input_len, output_len = lengths
    draw_in = parse_lengths(spec.get("input") or str(input_len), "input")
    out_spec = spec.get("output")
    draw_out = parse_lengths(out_spec, "output") if out_spec else None
    items: list[tuple[str, int, int | None]] = []
    for _ in range(count):
        n_in = draw_in(rng)
        n_out = draw_out(rng) if draw_out is not None else output_len
        if counter is None:
            items.append((" ".join(rng.choices(VOCABULARY, k=n_in)), n_in, n_out))
        else:
            text, got = exact_text(counter, target=n_in, chat=chat, words=VOCABULARY, rng=rng)
            items.append((text, got, n_out))
    return items


def _turn_text(
    n: int, *, first: bool, chat: bool, counter: Counter | None, rng: random.Random
) -> tuple[str, int]:
    """A session turn's new user message and its length: ``n`` words without a counter;
    with one, a first turn is a whole request of exactly ``n`` tokens (the BOS and, for
    chat, the template's tokens counted, as a single prompt), a later turn's message
    exactly ``n`` tokens of its own (`ContentCounter`): the conversation before it holds
    the rest, and the whole turn is counted when it is sent."""
    if counter is None:
        return " ".join(rng.choices(VOCABULARY, k=n)), n
    if first:
        return exact_text(counter, target=n, chat=chat, words=VOCABULARY, rng=rng)
    return exact_text(ContentCounter(counter), target=n, chat=False, words=VOCABULARY, rng=rng)


def _agentic(
    spec: DatasetSpec, count: int, seed: int, body: dict[str, Any], counter: Counter | None
) -> list[Prompt]:
    """Session trees: a main session of ``turns`` turns forks ``fanout`` sub-agent sessions
    of ``sub_turns`` turns after each turn but its last; as many whole trees as ``count``
    requests hold (at least one). ``body``: `encode_body`'s other arguments; ``counter``:
    token-exact messages (`_turn_text`)."""
    rng = random.Random(seed)
    chat = body["api"] == "chat"
    turns, fanout, sub_turns = spec.get("turns"), spec.get("fanout"), spec.get("sub_turns")
    size = turns + (turns - 1) * fanout * sub_turns
    prompts: list[Prompt] = []
    session = 0

    def add(words: int, **where: Any) -> None:
        text, n = _turn_text(words, first=where["turn"] == 0, chat=chat, counter=counter, rng=rng)
        prompts.append(
            Prompt(
                body=encode_body(text=text, **body),
                input_len=n,
                output_len=body["max_tokens"],
                **where,
            )
        )

    for _ in range(max(1, count // size)):
        main = session
        session += 1
        for turn in range(turns):
            add(spec.get("first") if turn == 0 else spec.get("user"), session=main, turn=turn)
            if turn == turns - 1:
                break
            for _ in range(fanout):
                for sub in range(sub_turns):
                    first = spec.get("sub_first") if sub == 0 else spec.get("user")
                    add(first, session=session, turn=sub, parent=main, fork=turn)
                session += 1
    return prompts


def encode_body(
    *, api: str, model: str, text: str, max_tokens: int | None, ignore_eos: bool
) -> bytes:
    """The JSON body of one streaming request, with usage asked for in the last chunk."""
    body: dict[str, Any] = {
        "model": model,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if api == "chat":
        body["messages"] = [{"role": "user", "content": text}]
    else:
        body["prompt"] = text
    if max_tokens is not None:
        body["max_tokens"] = max_tokens
        if api == "chat":
            body["max_completion_tokens"] = max_tokens
        if ignore_eos:
            body["ignore_eos"] = True
    return json.dumps(body, separators=(",", ":")).encode()


def _random_texts(count: int, input_len: int, seed: int) -> list[str]:
    """`count` texts of `input_len` vocabulary words each, reproducible from `seed`."""
    rng = random.Random(seed)
    words = VOCABULARY
    return [" ".join(rng.choices(words, k=input_len)) for _ in range(count)]


def _jsonl(path: Path) -> list[tuple[str, int | None]]:
    """Rows of a JSONL file: ``prompt`` (text) and an optional ``output_len``/``max_tokens``."""
    lines = _read(path, "--dataset").splitlines()
    rows: list[tuple[str, int | None]] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise UsageError(
                f"--dataset {path}: line {number} is not JSON ({exc.msg}); "
                'write one object per line like {"prompt": "...", "output_len": 128}.'
            ) from None
        prompt = row.get("prompt") if isinstance(row, dict) else None
        if not isinstance(prompt, str) or not prompt:
            raise UsageError(
                f'--dataset {path}: line {number} has no "prompt" string; '
                'write one object per line like {"prompt": "...", "output_len": 128}.'
            )
        wanted = row.get("output_len", row.get("max_tokens"))
        if wanted is not None and (not isinstance(wanted, int) or wanted < 1):
            raise UsageError(
                f'--dataset {path}: line {number} has an "output_len" that is not a '
                "positive integer; fix or remove it."
            )
        rows.append((prompt, wanted))
    if not rows:
        raise UsageError(f"--dataset {path} holds no prompts; give a file with at least one.")
    return rows


def _sharegpt(path: Path) -> list[tuple[str, int | None]]:
    """First human turn of each ShareGPT conversation, and its answer's length / 4 as tokens."""
    try:
        data = json.loads(_read(path, "--dataset sharegpt:"))
    except json.JSONDecodeError as exc:
        raise UsageError(
            f"--dataset sharegpt:{path} is not a JSON file ({exc.msg}); give a ShareGPT JSON list."
        ) from None
    rows: list[tuple[str, int | None]] = []
    for entry in data if isinstance(data, list) else []:
        turns = entry.get("conversations") if isinstance(entry, dict) else None
        if not isinstance(turns, list) or len(turns) < 2:
            continue
        first, answer = turns[0], turns[1]
        if not (isinstance(first, dict) and isinstance(answer, dict)):
            continue
        question, reply = first.get("value"), answer.get("value")
        if isinstance(question, str) and question and isinstance(reply, str):
            rows.append((question, max(1, len(reply) // 4)))
    if not rows:
        raise UsageError(
            f"--dataset sharegpt:{path} has no conversation with two turns; "
            'give a JSON list of {"conversations": [{"from": "human", "value": ...}, ...]}.'
        )
    return rows


def _read(path: Path, flag: str) -> str:
    """The text of a dataset file, or a UsageError naming the flag."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(f"{flag} file {path} does not exist; check the path.") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{flag} file {path} cannot be read ({exc}); check the path.") from None
