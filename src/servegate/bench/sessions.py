"""Multi-turn sessions: each turn's prompt is the conversation so far and a new message.

A session is a list of prompts, one per turn, each holding only its new user message.
The conversation grows at send time with the server's own answers: chat requests get
the earlier user messages and the assistant's streamed replies as ``messages`` before
the new one; completion requests get the earlier prompt, the reply and the new message
as one text (separated by spaces). So the assistant turns are what the server itself
generated, as in a real conversation, and a turn's prompt holds its predecessor's
prompt as a prefix (a prefix cache reuses it).

A session runs on one worker, one turn at a time, and waits ``think_s`` after each
reply before its next message. Closed loop: each of the worker's users runs its next
session when the last one ends (``--concurrency`` counts sessions). Under a rate,
sessions start at the schedule's times, at most the cap of them at once.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import replace
from statistics import quantiles
from time import perf_counter
from typing import Any

from servegate.bench.dataset import Prompt
from servegate.bench.sample import RequestSample

__all__ = ["design_rate", "group_sessions", "per_turn", "run_sessions"]

Session = list[tuple[int, Prompt]]  # (index in the point's prompts, prompt), turn order
Send = Callable[[int, Prompt, float | None, list[str]], Awaitable[RequestSample | None]]


def group_sessions(measured: Sequence[Prompt]) -> list[Session]:
    """The point's prompts as sessions, in order of their first prompt."""
    sessions: dict[int, Session] = {}
    for index, prompt in enumerate(measured):
        sessions.setdefault(prompt.session or 0, []).append((index, prompt))
    return list(sessions.values())


class _Conversation:
    """One session's history, in the shape of its API."""

    def __init__(self) -> None:
        self.messages: list[dict[str, str]] = []  # chat
        self.text = ""  # completions: the last prompt and its reply

    def body(self, prompt: Prompt) -> Prompt:
        """The turn's prompt with the conversation so far before its new message."""
        if not self.messages and not self.text:
            return prompt
        data: dict[str, Any] = json.loads(prompt.body)
        if "messages" in data:
            data["messages"] = self.messages + data["messages"]
            words = sum(len(m["content"].split()) for m in data["messages"])
        else:
            data["prompt"] = self.text + " " + data["prompt"]
            words = len(data["prompt"].split())
        body = json.dumps(data, separators=(",", ":")).encode()
        return replace(prompt, body=body, input_len=words)

    def answer(self, sent: Prompt, reply: str) -> None:
        """Add the turn just sent and the server's reply to the history."""
        data = json.loads(sent.body)
        if "messages" in data:
            self.messages = [*data["messages"], {"role": "assistant", "content": reply}]
        else:
            self.text = data["prompt"] + " " + reply.strip()


async def _session(
    session: Session,
    send: Send,
    think_s: float,
    stop: Callable[[], bool],
    start_s: float | None = None,
) -> list[RequestSample]:
    """The turns of one session in order: send, read the reply, think, go on (the first
    turn's sample keeps the session's planned start, ``start_s``, under a rate)."""
    talk = _Conversation()
    samples: list[RequestSample] = []
    for turn, (index, prompt) in enumerate(session):
        if stop():
            break
        if turn and think_s > 0:
            await asyncio.sleep(think_s)
        grown = talk.body(prompt)
        reply: list[str] = []
        sample = await send(index, grown, start_s if turn == 0 else None, reply)
        if sample is None:
            break
        samples.append(sample)
        if sample.error is not None or not reply:
            break  # no reply to build the next turn on
        talk.answer(grown, reply[0])
    return samples


async def run_sessions(
    sessions: list[Session],
    *,
    users: int | None,
    starts: list[float] | None,
    send: Send,
    t0: float,
    think_s: float,
    stop: Callable[[], bool],
    send_lags: list[float],
) -> list[RequestSample]:
    """Run ``sessions``: ``users`` at a time (closed loop), or each at its start offset
    from ``t0`` with at most ``users`` at once (None: no cap)."""
    samples: list[RequestSample] = []
    if starts is None:
        source: Iterator[Session] = iter(sessions)

        async def user() -> None:
            for session in source:
                if stop():
                    return
                samples.extend(await _session(session, send, think_s, stop))

        await asyncio.gather(*(user() for _ in range(users or 1)))
        return samples
    sem = asyncio.Semaphore(users) if users else None
    tasks: list[asyncio.Task[None]] = []

    async def start(session: Session, offset: float) -> None:
        try:
            samples.extend(await _session(session, send, think_s, stop, offset))
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
    by_turn: dict[int, list[RequestSample]] = {}
    for s in samples:
        if s.ok and s.index < len(measured):
            by_turn.setdefault(measured[s.index].turn, []).append(s)
    out = []
    for turn in sorted(by_turn):
        done = by_turn[turn]
        tokens = [s.usage_input_tokens for s in done if s.usage_input_tokens is not None]
        ttft = [s.ttft_s * 1000 for s in done if s.ttft_s is not None]
        e2el = [s.e2el_s * 1000 for s in done if s.e2el_s is not None]
        out.append(
            {
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
