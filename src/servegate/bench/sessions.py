"""Multi-turn sessions: each turn's prompt is the conversation so far and a new message.

A session is a list of prompts, one per turn, each holding only its new user message.
The conversation grows at send time with the server's own answers: chat requests get
the earlier user messages and the assistant's streamed replies as ``messages`` before
the new one; completion requests get the earlier prompt, the reply and the new message
as one text (separated by spaces). So the assistant turns are what the server itself
generated, as in a real conversation, and a turn's prompt holds its predecessor's
prompt as a prefix (a prefix cache reuses it).

With a token counter (``--tokenizer``) each grown turn is counted whole as the server
will count it (chat: the template over every message, the server's replies included;
completions: the joined text), once, just before it is sent, so its requested length is
exact; without one it is the conversation's word count.

A session runs on one worker, one turn at a time, and waits ``think_s`` after each
reply before its next message. Closed loop: each of the worker's users runs its next
session when the last one ends (``--concurrency`` counts sessions). Under a rate,
sessions start at the schedule's times, at most the cap of them at once.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from statistics import quantiles
from time import perf_counter
from typing import Any

from servegate.bench.dataset import Prompt
from servegate.bench.sample import RequestSample
from servegate.bench.tokens import Counter, ServerCounter, TokenizeMissing

__all__ = ["Tree", "design_rate", "group_sessions", "per_turn", "run_sessions"]

Session = list[tuple[int, Prompt]]  # (index in the point's prompts, prompt), turn order
Send = Callable[[int, Prompt, float | None, list[str]], Awaitable[RequestSample | None]]


@dataclass(frozen=True, slots=True, kw_only=True)
class Tree:
    """A main session and the sub-agent sessions it forks after some of its turns (none
    for a multiturn session)."""

    main: Session
    forks: dict[int, list[Session]] = field(default_factory=dict)  # turn -> sub-agents


def group_sessions(measured: Sequence[Prompt]) -> list[Tree]:
    """The point's prompts as session trees, in order of their first prompt."""
    sessions: dict[int, Session] = {}
    for index, prompt in enumerate(measured):
        sessions.setdefault(prompt.session or 0, []).append((index, prompt))
    trees: dict[int, Tree] = {}
    for key, session in sessions.items():
        first = session[0][1]
        if first.parent is None:
            trees[key] = Tree(main=session)
        elif first.parent in trees:
            trees[first.parent].forks.setdefault(first.fork, []).append(session)
    return list(trees.values())


class _Conversation:
    """One session's history, in the shape of its API."""

    def __init__(self, counter: Counter | None = None) -> None:
        self.messages: list[dict[str, str]] = []  # chat
        self.text = ""  # completions: the last prompt and its reply
        self.counter = counter

    async def body(self, prompt: Prompt) -> Prompt:
        """The turn's prompt with the conversation so far before its new message, its
        length the counter's count of the whole request (else its words)."""
        if not self.messages and not self.text:
            return prompt  # a first turn: built to its length already
        data: dict[str, Any] = json.loads(prompt.body)
        chat = "messages" in data
        if chat:
            data["messages"] = self.messages + data["messages"]
            length = sum(len(m["content"].split()) for m in data["messages"])
        else:
            data["prompt"] = self.text + " " + data["prompt"]
            length = len(data["prompt"].split())
        if self.counter is not None:
            length = await _count(self.counter, data["messages"] if chat else data["prompt"])
        body = json.dumps(data, separators=(",", ":")).encode()
        return replace(prompt, body=body, input_len=length)

    def answer(self, sent: Prompt, reply: str) -> None:
        """Add the turn just sent and the server's reply to the history."""
        data = json.loads(sent.body)
        if "messages" in data:
            self.messages = [*data["messages"], {"role": "assistant", "content": reply}]
        else:
            self.text = data["prompt"] + " " + reply.strip()


async def _count(counter: Counter, request: list[dict[str, str]] | str) -> int:
    """The counter's count of a chat request's messages or a completion prompt. A server's
    ``/tokenize`` is asked from a thread, so the worker's other streams go on meanwhile; a
    count that fails is -1, which the point's requested-vs-usage check reports."""

    def count() -> int:
        if isinstance(request, str):
            return counter.count(request, chat=False)
        return counter.count_messages(request)

    try:
        if isinstance(counter, ServerCounter):
            return await asyncio.to_thread(count)
        return count()
    except (TokenizeMissing, KeyError, TypeError, ValueError):
        return -1


async def _session(
    tree: Tree,
    send: Send,
    think_s: float,
    stop: Callable[[], bool],
    *,
    start_s: float | None = None,
    counter: Counter | None = None,
) -> tuple[list[RequestSample], str]:
    """The turns of a main session in order: send, read the reply, run the sub-agents it
    forks there in parallel and wait for them all, think, go on with their last replies
    before its next message. Returns the samples and the last reply (a sub-agent's
    result). The first turn's sample keeps the session's planned start, ``start_s``;
    ``counter`` counts each grown turn (`_Conversation.body`)."""
    talk = _Conversation(counter)
    samples: list[RequestSample] = []
    results: list[str] = []  # the sub-agents' last replies, for the next turn
    last = ""
    for turn, (index, prompt) in enumerate(tree.main):
        if stop():
            break
        if turn and think_s > 0:
            await asyncio.sleep(think_s)
        grown = await talk.body(_with_results(prompt, results))
        reply: list[str] = []
        sample = await send(index, grown, start_s if turn == 0 else None, reply)
        if sample is None:
            break
        samples.append(sample)
        if sample.error is not None or not reply:
            break  # no reply to build the next turn on
        talk.answer(grown, reply[0])
        last = reply[0]
        subs = tree.forks.get(prompt.turn, [])
        done = await asyncio.gather(
            *(_session(Tree(main=s), send, think_s, stop, counter=counter) for s in subs)
        )
        samples += [x for sub_samples, _ in done for x in sub_samples]
        results = [sub_reply for _, sub_reply in done if sub_reply]
    return samples, last


def _with_results(prompt: Prompt, results: list[str]) -> Prompt:
    """The prompt with the sub-agents' replies before its new message (the join)."""
    if not results:
        return prompt
    data: dict[str, Any] = json.loads(prompt.body)
    joined = " ".join(r.strip() for r in results)
    if "messages" in data:
        data["messages"][-1]["content"] = joined + " " + data["messages"][-1]["content"]
    else:
        data["prompt"] = joined + " " + data["prompt"]
    return replace(prompt, body=json.dumps(data, separators=(",", ":")).encode())


async def run_sessions(
    sessions: list[Tree],
    *,
    users: int | None,
    starts: list[float] | None,
    send: Send,
    t0: float,
    think_s: float,
    stop: Callable[[], bool],
    send_lags: list[float],
    counter: Counter | None = None,
) -> list[RequestSample]:
    """Run ``sessions``: ``users`` at a time (closed loop), or each at its start offset
    from ``t0`` with at most ``users`` at once (None: no cap). ``counter`` counts each
    grown turn's tokens (None: its words)."""
    samples: list[RequestSample] = []
    if starts is None:
        source: Iterator[Tree] = iter(sessions)

        async def user() -> None:
            for session in source:
                if stop():
                    return
                samples.extend((await _session(session, send, think_s, stop, counter=counter))[0])

        await asyncio.gather(*(user() for _ in range(users or 1)))
        return samples
    sem = asyncio.Semaphore(users) if users else None
    tasks: list[asyncio.Task[None]] = []

    async def start(session: Tree, offset: float) -> None:
        try:
            done = await _session(session, send, think_s, stop, start_s=offset, counter=counter)
            samples.extend(done[0])
        finally:
            if sem is not None:
                sem.release()

    for offset, session in zip(starts, sessions, strict=True):
        delay = t0 + offset - perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        if sem is not None:
            await sem.acquire()
        if stop():
            if sem is not None:
                sem.release()
            break
        send_lags.append((perf_counter() - t0 - offset) * 1000.0)
        tasks.append(asyncio.create_task(start(session, offset)))
    await asyncio.gather(*tasks)
    return samples


def per_turn(samples: Sequence[RequestSample], measured: Sequence[Prompt]) -> list[dict[str, Any]]:
    """Metrics by turn index (1 = a session's first turn): requests, prompt tokens as the
    server counted them, TTFT and end-to-end latency percentiles."""
    by_turn: dict[tuple[bool, int], list[RequestSample]] = {}
    for s in samples:
        if s.ok and s.index < len(measured):
            prompt = measured[s.index]
            by_turn.setdefault((prompt.parent is not None, prompt.turn), []).append(s)
    agents = any(sub for sub, _ in by_turn)
    out = []
    for sub, turn in sorted(by_turn):
        done = by_turn[sub, turn]
        tokens = [s.usage_input_tokens for s in done if s.usage_input_tokens is not None]
        ttft = [s.ttft_s * 1000 for s in done if s.ttft_s is not None]
        e2el = [s.e2el_s * 1000 for s in done if s.e2el_s is not None]
        row: dict[str, Any] = {"agent": "sub" if sub else "main"} if agents else {}
        out.append(
            row
            | {
                "turn": turn + 1,
                "requests": len(done),
                "prompt_tokens_mean": sum(tokens) / len(tokens) if tokens else None,
                "ttft_ms_p50": _pct(ttft, 50),
                "ttft_ms_p99": _pct(ttft, 99),
                "e2el_ms_p50": _pct(e2el, 50),
            }
        )
    return out


def design_rate(
    samples: Sequence[RequestSample], measured: Sequence[Prompt], block: int = 16
) -> float | None:
    """The prefix-cache hit rate sessions imply: a turn reuses its predecessor's prompt and
    reply (in the server's own token counts) in whole blocks, at most its length - 1, as
    vLLM and SGLang cache a finished request's generated tokens too; a first turn, nothing."""
    before: dict[int, int] = {}  # session -> prompt + reply tokens of its last turn
    hits = total = 0
    for s in sorted(samples, key=lambda s: s.index):
        if not s.ok or s.usage_input_tokens is None or s.index >= len(measured):
            continue
        prompt = measured[s.index]
        n = s.usage_input_tokens
        total += n
        session = prompt.session or 0
        if prompt.turn and session in before:
            hits += min(before[session], n - 1) // block * block
        before[session] = n + (s.usage_output_tokens or 0)
    return hits / total if total else None


def _pct(values: list[float], p: int) -> float | None:
    """The p-th percentile (linear), None without values."""
    if not values:
        return None
    if len(values) == 1:
        return values[0]
    return quantiles(values, n=100, method="inclusive")[p - 1]
