"""The load itself: one asyncio loop per worker process, closed-loop or on a schedule.

A worker gets a `WorkerPlan` (its share of the concurrency and of the prompts, or its
share of the arrival schedule), runs its warmup, waits for the common start time, then
sends. Closed loop: ``concurrency`` coroutines each send their next request as soon as
the previous one ends. Open loop: a dispatcher sends each request at its planned time
(optionally capped by a semaphore), and the lag between plan and send is recorded. All
workers read the same monotonic clock, so their samples merge into exact metrics.
While measuring, a 10 ms timer records how late the event loop runs, and the process's
CPU time is read at the start and end: the client's own headroom. Every request passes
a `Liveness` gate: when the server stops answering, requests back off and the point ends
(``gone_s`` in the result) instead of hammering a closed port.
"""

from __future__ import annotations

import asyncio
import gc
import itertools
import time
from collections.abc import Callable, Iterator, MutableSequence
from dataclasses import dataclass
from time import perf_counter

from servegate.bench.dataset import Prompt
from servegate.bench.http import Pool, ReadClock, request_bytes
from servegate.bench.liveness import Liveness
from servegate.bench.sample import RequestSample
from servegate.bench.sessions import Tree, run_sessions
from servegate.bench.slo import StopRule, StopState
from servegate.bench.stream import patterns, send_request
from servegate.bench.tokens import Counter, ServerCounter

LAG_INTERVAL_S = 0.01
PRECONNECT_MAX = 1024
OPEN_LOOP_CONNECTIONS = 64  # opened ahead under a rate without a concurrency cap
GONE_CHECK_S = 0.5  # the open loop's longest sleep between looks at the server's liveness


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkerPlan:
    """What one worker sends: its prompts (closed loop) or its arrivals (open loop)."""

    slot: int
    endpoint: str
    headers: dict[str, str]
    timeout_s: float
    keys: tuple[bytes, ...]
    concurrency: int | None  # closed-loop users, or the cap under a schedule
    prompts: list[tuple[int, Prompt]]  # (index, prompt), closed loop
    schedule: list[tuple[int, float, Prompt]] | None  # (index, offset_s, prompt), open loop
    warmup: list[Prompt]
    duration_s: float | None  # closed loop: stop sending after this long, cycling prompts
    stop: StopRule | None = None  # a capacity probe: stop sending once its SLO certainly failed
    # multiturn: this worker's sessions (each pinned here), run by ``concurrency`` users,
    # or started at ``session_starts`` (offsets) under a rate; ``think_s`` between turns
    sessions: list[Tree] | None = None
    session_starts: list[float] | None = None
    think_s: float = 0.0
    counter: Counter | None = None  # counts each grown turn's tokens (--tokenizer)


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkerResult:
    """A worker's samples and its own load: CPU seconds, wall seconds, loop lags."""

    samples: list[RequestSample]
    cpu_s: float
    wall_s: float
    lags_ms: list[float]
    send_lags_ms: list[float]
    gone_s: float | None = None  # the server stopped answering this long after the start
    stopped_early: bool = False  # the plan's stop rule ended the sending (certain SLO failure)
    read_stamps: str = "select"  # how its reads were timed: kernel, select or mixed


async def run_worker(
    plan: WorkerPlan,
    counters: MutableSequence[int],
    start: Callable[[], float],
) -> WorkerResult:
    """Warm up, call ``start()`` for the common start time, measure, and return the samples.

    ``counters[3*slot : 3*slot+3]`` are kept at (done, failed, content chunks) for live
    progress in another process or thread.
    """
    pool = Pool(plan.endpoint, ReadClock.install(asyncio.get_running_loop()))
    frame = request_bytes(pool, plan.headers)
    fast = patterns(plan.keys)
    base = plan.slot * 3
    live = Liveness()
    verdict = StopState()
    measuring: list[bool] = []  # set once the measured phase begins (warmup never stops)
    try:

        async def one(
            index: int,
            prompt: Prompt,
            t0: float,
            sched: float | None,
            text_out: list[str] | None = None,
        ) -> RequestSample | None:
            """One request through the liveness gate; None once the server is gone."""
            sample = await live.send(
                lambda: send_request(
                    pool,
                    frame,
                    prompt=prompt,
                    index=index,
                    timeout_s=plan.timeout_s,
                    keys=plan.keys,
                    fast=fast,
                    t0=t0,
                    scheduled_s=sched,
                    text_out=text_out,
                )
            )
            if sample is None:
                return None
            if sample.error is None:
                counters[base] += 1
            else:
                counters[base + 1] += 1
            counters[base + 2] += len(sample.chunks_s)
            if plan.stop is not None and measuring:
                plan.stop.observe(verdict, sample)
            return sample

        if plan.warmup:
            await _closed_loop(
                iter(enumerate(plan.warmup)), plan.concurrency or len(plan.warmup), None, one, 0.0
            )
            for i in range(3):
                counters[base + i] = 0
        # open the connections before the clock starts, so the first wave's TTFT does not
        # include TCP setup serialised in this event loop
        if plan.sessions is not None:
            streams = min(plan.concurrency or OPEN_LOOP_CONNECTIONS, len(plan.sessions))
        elif plan.schedule is None:
            streams = plan.concurrency or 1
        else:
            streams = min(plan.concurrency or OPEN_LOOP_CONNECTIONS, len(plan.schedule))
        await pool.fill(min(streams, PRECONNECT_MAX))
        # collect before the clock starts: a full collection of the prompts' heap takes
        # milliseconds, which made the first arrivals of a schedule that much late
        gc.collect()
        gc.freeze()
        t0 = start()
        measuring.append(True)
        delay = t0 - perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)

        lags: list[float] = []
        monitor = asyncio.create_task(_lag_monitor(lags))
        threshold = gc.get_threshold()
        gc.set_threshold(100_000, 50, 100)
        cpu0, wall0 = time.thread_time(), perf_counter()
        send_lags: list[float] = []
        try:
            if plan.sessions is not None:
                samples = await run_sessions(
                    plan.sessions,
                    users=plan.concurrency,
                    starts=plan.session_starts,
                    send=lambda i, p, sched, out: one(i, p, t0, sched, out),
                    t0=t0,
                    think_s=plan.think_s,
                    stop=lambda: live.gone_at is not None or verdict.stopped,
                    send_lags=send_lags,
                    counter=plan.counter,
                )
            elif plan.schedule is not None:
                samples = await _open_loop(
                    plan.schedule,
                    plan.concurrency,
                    one,
                    t0,
                    send_lags=send_lags,
                    live=live,
                    verdict=verdict,
                )
            else:
                deadline = t0 + plan.duration_s if plan.duration_s is not None else None
                source: Iterator[tuple[int, Prompt]]
                if deadline is not None:
                    source = itertools.cycle(plan.prompts)
                else:
                    source = iter(plan.prompts)
                samples = await _closed_loop(
                    source, plan.concurrency or 1, deadline, one, t0, verdict=verdict
                )
        finally:
            cpu1, wall1 = time.thread_time(), perf_counter()
            gc.set_threshold(*threshold)
            gc.unfreeze()
            monitor.cancel()
    finally:
        pool.close()
        if isinstance(plan.counter, ServerCounter):
            plan.counter.close()
    return WorkerResult(
        samples=samples,
        cpu_s=cpu1 - cpu0,
        wall_s=wall1 - wall0,
        lags_ms=lags,
        send_lags_ms=send_lags,
        gone_s=None if live.gone_at is None else live.gone_at - t0,
        stopped_early=verdict.stopped,
        read_stamps=pool.read_stamps,
    )


async def _closed_loop(
    source: Iterator[tuple[int, Prompt]],
    users: int,
    deadline: float | None,
    one: Callable[..., object],
    t0: float,
    *,
    verdict: StopState | None = None,
) -> list[RequestSample]:
    """``users`` coroutines, each sending the next prompt when its last request ends.

    A user stops at the deadline, when ``one`` returns None (the server is gone), or once
    ``verdict`` says the probe has certainly failed.
    """
    samples: list[RequestSample] = []

    async def user() -> None:
        for index, prompt in source:
            if deadline is not None and perf_counter() >= deadline:
                return
            if verdict is not None and verdict.stopped:
                return
            sample = await one(index, prompt, t0, None)  # type: ignore[misc]
            if sample is None:
                return
            samples.append(sample)

    await asyncio.gather(*(user() for _ in range(users)))
    return samples


async def _open_loop(
    schedule: list[tuple[int, float, Prompt]],
    cap: int | None,
    one: Callable[..., object],
    t0: float,
    *,
    send_lags: list[float],
    live: Liveness,
    verdict: StopState | None = None,
) -> list[RequestSample]:
    """Send each request at its planned offset from ``t0``, at most ``cap`` in flight.

    Arrivals stop once the server is gone (``live.gone_at``) or the probe has certainly
    failed (``verdict``).
    """
    samples: list[RequestSample] = []
    sem = asyncio.Semaphore(cap) if cap else None

    async def fire(index: int, offset: float, prompt: Prompt) -> None:
        try:
            sample = await one(index, prompt, t0, offset)  # type: ignore[misc]
            if sample is not None:
                samples.append(sample)
        finally:
            if sem is not None:
                sem.release()

    tasks: set[asyncio.Task[None]] = set()
    for index, offset, prompt in schedule:
        delay = t0 + offset - perf_counter()
        while delay > 0 and live.gone_at is None and not (verdict and verdict.stopped):
            await asyncio.sleep(min(delay, GONE_CHECK_S))
            delay = t0 + offset - perf_counter()
        if sem is not None:
            await sem.acquire()
        if live.gone_at is not None or (verdict is not None and verdict.stopped):
            if sem is not None:
                sem.release()
            break
        send_lags.append((perf_counter() - t0 - offset) * 1000.0)
        task = asyncio.create_task(fire(index, offset, prompt))
        tasks.add(task)
        task.add_done_callback(tasks.discard)
    while tasks:
        await asyncio.gather(*tasks)
    return samples


async def _lag_monitor(lags: list[float]) -> None:
    """Record how late a short timer fires: the event loop's scheduling delay, in ms."""
    while True:
        before = perf_counter()
        await asyncio.sleep(LAG_INTERVAL_S)
        lags.append((perf_counter() - before - LAG_INTERVAL_S) * 1000.0)
