"""Running a point's worker plans: in this process for one worker, else in child processes
that start together on the shared monotonic clock.

Workers are plain child processes fed through pipes (no multiprocessing helpers), so
nothing outlives the point: each dies with its parent, however the parent ended.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import pickle
import queue
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import replace
from time import perf_counter
from typing import Any

from servegate._os import die_with_parent
from servegate.bench.loadgen import WorkerPlan, WorkerResult, run_worker
from servegate.bench.progress import PROGRESS_EVERY_S, ProgressFeed, tick
from servegate.errors import BenchError

WORKER_EXIT_S = 5.0  # a worker told to stop is killed when it has not ended by then
START_AHEAD_S = 0.02  # the common start time, this far after the last worker was ready

Inbox = queue.Queue[tuple[int, tuple[Any, ...]]]


def execute(
    plans: list[WorkerPlan], before_measure: Callable[[], None], feed: ProgressFeed | None
) -> list[WorkerResult]:
    """Run the plans; ``before_measure`` runs once every worker has warmed up, just before
    the common start."""
    if len(plans) == 1:
        return [_in_process(plans[0], before_measure, feed)]
    return _in_processes(plans, before_measure, feed)


def _in_process(
    plan: WorkerPlan, before_measure: Callable[[], None], feed: ProgressFeed | None
) -> WorkerResult:
    """One worker on an event loop of this thread, with progress from inside the loop."""
    counters = [0, 0, 0]
    begun: list[float] = []

    def start() -> float:
        before_measure()
        begun.append(perf_counter())
        return begun[0]

    box: list[WorkerResult] = []

    async def main() -> None:
        ticker = None
        if feed is not None:
            ticker = asyncio.create_task(tick(counters, begun, feed))
        try:
            box.append(await run_worker(plan, counters, start))
        finally:
            if ticker is not None:
                ticker.cancel()

    # the result leaves through ``box``, not as the task's result: on Python 3.11,
    # asyncio.run's closing signal.getsignal(SIGINT) formats the repr of its SIGINT
    # handler, which holds the main task and so its result (every sample: 0.9 s for
    # 4,096 x 256 tokens, and more with every request)
    asyncio.run(main())
    return box[0]


def worker_main() -> None:
    """A worker process: read its plan from stdin, report on stdout (pickles), exit.

    Messages out: ``("ready",)`` after warmup, ``("progress", done, failed, chunks)``
    twice a second, then ``("result", WorkerResult)`` or ``("error", text)``. In: the
    plan (a pickle), then after ready the common start time (a line holding a float on
    the shared monotonic clock). The
    worker ends at once when its parent does, however the parent ended (see
    `_die_with_parent`), and leaves Ctrl-C to the parent.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and ends us
    _die_with_parent(int(sys.argv[1]) if len(sys.argv) > 1 else None)
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    # counters are per process here: this worker's own slot is 0
    plan: WorkerPlan = replace(pickle.load(stdin), slot=0)  # noqa: S301 (our parent)
    counters = [0, 0, 0]
    starts: queue.Queue[float] = queue.Queue()
    threading.Thread(target=_watch_parent, args=(stdin.fileno(), starts), daemon=True).start()

    def send(message: tuple[Any, ...]) -> None:
        pickle.dump(message, stdout)
        stdout.flush()

    def start() -> float:
        send(("ready",))
        return starts.get()

    async def main() -> WorkerResult:
        async def report() -> None:
            while True:
                await asyncio.sleep(PROGRESS_EVERY_S)
                send(("progress", *counters))

        reporter = asyncio.create_task(report())
        try:
            return await run_worker(plan, counters, start)
        finally:
            reporter.cancel()

    try:
        result = asyncio.run(main())
    except Exception as exc:  # reported by the parent, which raises BenchError
        send(("error", f"{type(exc).__name__}: {exc}"))
        return
    send(("result", result))


def _die_with_parent(parent: int | None) -> None:
    """Have the kernel SIGKILL this process when its parent ends, even by SIGKILL.

    Linux's ``PR_SET_PDEATHSIG``; set after ``exec``, so a parent that died before this
    line is caught by comparing the parent's PID. Elsewhere, `_watch_parent` alone ends
    the worker when its stdin closes.
    """
    die_with_parent(signal.SIGKILL)
    if parent is not None and os.getppid() != parent:
        os._exit(1)  # the parent is already gone


def _watch_parent(fd: int, starts: queue.Queue[float]) -> None:
    """Pass on the start time, then end the process when stdin closes (the parent ended).

    Reads the raw descriptor: a thread blocked inside a buffered reader would hold its
    lock and make the interpreter's shutdown abort.
    """
    data = b""
    try:
        while b"\n" not in data:
            more = os.read(fd, 64)
            if not more:
                break
            data += more
        else:
            starts.put(float(data.split(b"\n", 1)[0]))
            while os.read(fd, 4096):
                pass
    except (OSError, ValueError):
        pass
    os._exit(0)  # the parent ended or is done with us: stop sending at once


def _in_processes(
    plans: list[WorkerPlan], before_measure: Callable[[], None], feed: ProgressFeed | None
) -> list[WorkerResult]:
    """Start a process per plan, start them together, and collect their results."""
    procs: list[subprocess.Popen[bytes]] = []
    threads: list[threading.Thread] = []
    inbox: Inbox = queue.Queue()
    try:
        _spawn(plans, procs, threads, inbox)
        out, errors = _collect(procs, inbox, before_measure, feed)
    finally:
        _stop_workers(procs, threads)
    if errors:
        raise BenchError(f"a load-generator worker failed ({errors[0]}); retry with --workers 1.")
    return [out[k] for k in sorted(out)]


def _spawn(
    plans: list[WorkerPlan],
    procs: list[subprocess.Popen[bytes]],
    threads: list[threading.Thread],
    inbox: Inbox,
) -> None:
    """Start a worker per plan (into ``procs``), send each its plan, and start a reader
    thread per worker (into ``threads``) that passes its messages to ``inbox``."""
    code = "from servegate.bench.execute import worker_main; worker_main()"
    parent = str(os.getpid())

    def reader(slot: int, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stdout is not None
        while True:
            try:
                message = pickle.load(proc.stdout)  # noqa: S301 (our own child)
            except (EOFError, pickle.UnpicklingError, OSError, ValueError):
                inbox.put((slot, ("gone",)))
                return
            inbox.put((slot, message))

    procs.extend(
        subprocess.Popen(
            [sys.executable, "-c", code, parent], stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )
        for _ in plans
    )
    for proc, plan in zip(procs, plans, strict=True):
        assert proc.stdin is not None
        pickle.dump(plan, proc.stdin)
        proc.stdin.flush()
    threads.extend(
        threading.Thread(target=reader, args=(i, p), daemon=True) for i, p in enumerate(procs)
    )
    for thread in threads:
        thread.start()


def _collect(
    procs: list[subprocess.Popen[bytes]],
    inbox: Inbox,
    before_measure: Callable[[], None],
    feed: ProgressFeed | None,
) -> tuple[dict[int, WorkerResult], list[str]]:
    """Start the workers together once all are ready, pass on their progress, and gather
    their results (by slot) and errors."""
    counters = [0] * (3 * len(procs))
    out: dict[int, WorkerResult] = {}
    errors: list[str] = []
    ready = 0
    t0 = shown = 0.0
    finished: set[int] = set()
    while len(finished) < len(procs):
        try:
            slot, message = inbox.get(timeout=PROGRESS_EVERY_S)
        except queue.Empty:
            if t0 and feed is not None:
                feed.report(counters, t0)
            continue
        kind = message[0]
        if kind == "ready":
            ready += 1
            if ready == len(procs):
                before_measure()
                t0 = perf_counter() + START_AHEAD_S
                for proc in procs:
                    assert proc.stdin is not None
                    proc.stdin.write(f"{t0!r}\n".encode())
                    proc.stdin.flush()
        elif kind == "progress":
            counters[3 * slot : 3 * slot + 3] = message[1:4]
            if t0 and feed is not None and perf_counter() - shown >= PROGRESS_EVERY_S:
                shown = perf_counter()
                feed.report(counters, t0)
        elif kind == "result":
            out[slot] = message[1]
            finished.add(slot)
        elif slot not in finished:
            errors.append(message[1] if kind == "error" else "a worker exited early")
            finished.add(slot)
            if ready < len(procs):
                break
    return out, errors


def _stop_workers(procs: list[subprocess.Popen[bytes]], threads: list[threading.Thread]) -> None:
    """Close the workers' stdin (each ends at once when it sees that), reap them, join readers."""
    for proc in procs:
        if proc.stdin is not None:
            with contextlib.suppress(OSError):
                proc.stdin.close()
    for proc in procs:
        try:
            proc.wait(timeout=WORKER_EXIT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    for thread in threads:
        thread.join(timeout=WORKER_EXIT_S)  # each reader ends at its worker's end of output
    for proc in procs:
        if proc.stdout is not None:
            proc.stdout.close()
