"""`run_point`: one load point from settings to a `PointResult`.

Before the run: ask ``/v1/models`` for the model, send one short probe request (which
turns an unreachable or non-OpenAI server into one clear sentence instead of a run of
failures), build every prompt, and plan the arrivals. Then the workers warm up, the
engine's counters are read, the workers start together, and the counters are read again
at the end. Metrics are computed from the merged raw samples.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import datetime as dt
import json
import os
import pickle
import queue
import signal
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, MutableSequence
from dataclasses import dataclass, replace
from time import perf_counter
from typing import Any

import numpy as np

from servegate.bench import metrics
from servegate.bench.dataset import Prompt, build_prompts, encode_body
from servegate.bench.liveness import GONE_AFTER_S
from servegate.bench.loadgen import WorkerPlan, WorkerResult, run_worker
from servegate.bench.result import ClientStats, PointResult
from servegate.bench.server_metrics import metric_names, scrape, server_deltas
from servegate.bench.settings import BenchSettings
from servegate.bench.stream import CHAT_KEYS, COMPLETION_KEYS
from servegate.errors import BenchError

DURATION_POOL = 2048  # prompts built for a duration-bounded run (cycled beyond that)
CPU_WARN = 0.9
# a point shorter than this is too short for its CPU share to say anything
CPU_WARN_MIN_WALL_S = 1.0
FAILED_WARN = 0.01  # a warning when more than this share of a point's requests failed
LAG_WARN_MS = 10.0
PREFLIGHT_TIMEOUT_S = 30.0
PR_SET_PDEATHSIG = 1  # prctl option, <linux/prctl.h>
WORKER_EXIT_S = 5.0  # a worker told to stop is killed when it has not ended by then


@dataclass(frozen=True, slots=True, kw_only=True)
class Progress:
    """Live counts during a point, for a progress line."""

    done: int
    failed: int
    chunks: int
    elapsed_s: float
    total: int | None
    duration_s: float | None = None  # a point bound by time: its length

    @property
    def eta_s(self) -> float | None:
        """Seconds left in the point: at the request rate so far toward ``total``, or the
        rest of ``duration_s``; None before a request has ended (or with neither)."""
        if self.total:
            ended = self.done + self.failed
            if ended <= 0 or self.elapsed_s <= 0:
                return None
            return max(0, self.total - ended) * self.elapsed_s / ended
        if self.duration_s is not None:
            return max(0.0, self.duration_s - self.elapsed_s)
        return None


def run_point(
    settings: BenchSettings, *, progress: Callable[[Progress], None] | None = None
) -> PointResult:
    """Run one load point and return everything it measured.

    Raises BenchError when the server cannot be reached or does not speak the OpenAI
    API; failures during the run are counted by kind, never raised.
    """
    started_at = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    headers = {"Content-Type": "application/json"}
    if settings.authorization:
        headers["Authorization"] = settings.authorization
    model = settings.model or discover_model(settings.base_url, headers)
    warnings: list[str] = []
    ignore_eos = _probe(settings, model, headers, warnings)

    count = settings.requests if settings.requests is not None else DURATION_POOL
    prompts = build_prompts(
        dataset=settings.dataset,
        count=settings.warmup + count,
        input_len=settings.input_len,
        output_len=settings.output_len,
        api=settings.api,
        model=model,
        seed=settings.seed,
        ignore_eos=ignore_eos,
    )
    warmup, measured = prompts[: settings.warmup], prompts[settings.warmup :]
    plans = _plans(settings, headers, warmup, measured)

    metrics_url = (
        settings.metrics_url if settings.metrics_url is not None else settings.base_url + "/metrics"
    )
    scrapes: dict[str, Any] = {}

    def before_measure() -> None:
        scrapes["before"] = scrape(metrics_url) if metrics_url else None

    total = settings.requests
    if progress is not None and settings.duration_s is not None:
        told, length = progress, settings.duration_s

        def progress(p: Progress) -> None:
            told(replace(p, duration_s=length))

    results = _execute(plans, before_measure, progress, total)
    after = scrape(metrics_url) if metrics_url else None

    samples = sorted((s for r in results for s in r.samples), key=lambda s: s.send_s)
    if settings.duration_s is not None and settings.requests is None and not settings.open_loop:
        used = len(samples)
        if used > len(measured) and settings.dataset == "random":
            warnings.append(
                f"the run sent {used} requests from a pool of {len(measured)} prompts; "
                "repeated prompts may hit the server's prefix cache."
            )
    before = scrapes.get("before")
    names = metric_names(settings.engine, after)
    server = server_deltas(before, after, names, metrics_url or None)
    client = _client_stats(results)
    failures = metrics.failures_by_kind(samples)
    details: dict[str, str] = {}
    for s in samples:
        if s.error is not None and s.error not in details:
            details[s.error] = s.detail or ""
    warnings += metrics.token_warnings(samples)
    warnings += _headroom_warnings(client)
    completed = sum(1 for s in samples if s.ok)
    gone = [r.gone_s for r in results if r.gone_s is not None]
    server_gone_s = min(gone) if gone else None
    if server_gone_s is not None:
        warnings.append(gone_sentence(server_gone_s, len(samples), settings.requests))
    if not completed:
        warnings.append("no request completed; every metric of this point is empty.")
    elif samples and (len(samples) - completed) / len(samples) > FAILED_WARN:
        kinds = ", ".join(f"{k} {v}" for k, v in failures.items())
        warnings.append(
            f"{len(samples) - completed} of {len(samples)} requests failed "
            f"({(len(samples) - completed) / len(samples):.1%}: {kinds}); "
            "the failure_details in --json say why."
        )
    return PointResult(
        settings=settings,
        model=model,
        summary=metrics.summarize(samples),
        completed=completed,
        failed=len(samples) - completed,
        failures=failures,
        failure_details=details,
        reconnects=sum(1 for s in samples if s.reconnected),
        server_gone_s=server_gone_s,
        samples=samples,
        server_metrics=server,
        warnings=warnings,
        client=client,
        started_at=started_at,
    )


def gone_sentence(gone_s: float, sent: int, planned: int | None) -> str:
    """The sentence that reports a server that stopped answering during a point."""
    unsent = f"; {planned - sent} of {planned} requests were not sent" if planned else ""
    return (
        f"the server stopped answering at t={gone_s:.1f}s (connection failures with no "
        f"answer for {GONE_AFTER_S:g} s); the point ended there{unsent}."
    )


def discover_model(base_url: str, headers: dict[str, str]) -> str:
    """The first model id from ``GET /v1/models``; BenchError when the server has none."""
    url = base_url + "/v1/models"
    request = urllib.request.Request(url, headers=headers)  # noqa: S310 (http(s) checked)
    try:
        with urllib.request.urlopen(request, timeout=PREFLIGHT_TIMEOUT_S) as resp:  # noqa: S310
            body = resp.read()
    except urllib.error.HTTPError as exc:
        raise BenchError(
            f"GET {url} returned HTTP {exc.code}; the server does not look OpenAI-compatible "
            "at this URL: check --url or give --model."
        ) from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise BenchError(
            f"cannot reach {base_url} ({reason}); check --url and that the server is running."
        ) from None
    try:
        data = json.loads(body)
        return str(data["data"][0]["id"])
    except (ValueError, KeyError, IndexError, TypeError):
        raise BenchError(
            f"GET {url} did not return an OpenAI model list; check --url or give --model."
        ) from None


def _probe(
    settings: BenchSettings, model: str, headers: dict[str, str], warnings: list[str]
) -> bool:
    """Send one 2-token streaming request; return whether ``ignore_eos`` is accepted."""
    ignore_eos = settings.ignore_eos and settings.output_len is not None
    for attempt in (ignore_eos, False) if ignore_eos else (False,):
        body = encode_body(
            api=settings.api, model=model, text="Hello", max_tokens=2, ignore_eos=attempt
        )
        request = urllib.request.Request(  # noqa: S310 (http(s) checked)
            settings.endpoint,
            data=body,
            headers={**headers, "Accept-Encoding": "identity"},
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=settings.timeout_s) as resp:  # noqa: S310
                first = resp.read(65536)
                coding = (resp.headers.get("Content-Encoding") or "identity").strip().lower()
        except urllib.error.HTTPError as exc:
            if exc.code == 400 and attempt:
                continue  # retry without ignore_eos
            raise BenchError(
                f"POST {settings.endpoint} returned HTTP {exc.code}; the server does not serve "
                f"the OpenAI {settings.api} API there: check --url and --api."
            ) from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise BenchError(
                f"cannot reach {settings.endpoint} ({reason}); check --url and that the "
                "server is running."
            ) from None
        if coding != "identity":
            raise BenchError(
                f"POST {settings.endpoint} answered compressed (Content-Encoding: {coding}) "
                "although asked for identity; turn compression off for text/event-stream on "
                "the server or its proxy."
            )
        if b"data:" not in first:
            raise BenchError(
                f"POST {settings.endpoint} did not answer with a server-sent event stream; "
                "the server is not OpenAI-compatible: check --url and --api."
            )
        if ignore_eos and not attempt:
            warnings.append(
                "the server rejected ignore_eos; requests are sent without it, so outputs "
                "may be shorter than --output-len."
            )
        return attempt
    return False


def _plans(
    s: BenchSettings, headers: dict[str, str], warmup: list[Prompt], measured: list[Prompt]
) -> list[WorkerPlan]:
    """Split the point over its worker processes: concurrency, prompts or arrivals."""
    n = s.resolved_workers()
    keys = CHAT_KEYS if s.api == "chat" else COMPLETION_KEYS
    common: dict[str, Any] = {
        "endpoint": s.endpoint,
        "headers": headers,
        "timeout_s": s.timeout_s,
        "keys": keys,
        "duration_s": s.duration_s,
    }
    plans: list[WorkerPlan] = []
    if s.open_loop:
        assert s.rate is not None
        offsets = arrival_offsets(s.rate, s.requests, s.duration_s, s.seed)
        arrivals = [(i, off, measured[i % len(measured)]) for i, off in enumerate(offsets)]
        for w in range(n):
            cap = _share(s.concurrency, n, w) if s.concurrency is not None else None
            plans.append(
                WorkerPlan(
                    slot=w,
                    concurrency=cap,
                    prompts=[],
                    schedule=arrivals[w::n],
                    warmup=warmup[w::n],
                    **common,
                )
            )
        return plans
    users = s.concurrency if s.concurrency is not None else len(measured)
    indexed = list(enumerate(measured))
    start = 0
    for w in range(n):
        mine = _share(users, n, w)
        if s.requests is not None:
            take = round(len(indexed) * (start + mine) / users) - round(
                len(indexed) * start / users
            )
            first = round(len(indexed) * start / users)
            share = indexed[first : first + take]
        else:
            share = indexed[w::n]
        start += mine
        plans.append(
            WorkerPlan(
                slot=w,
                concurrency=mine,
                prompts=share,
                schedule=None,
                warmup=warmup[w::n],
                **common,
            )
        )
    return plans


def _share(total: int, parts: int, i: int) -> int:
    """Part ``i`` of ``total`` split as evenly as possible into ``parts``."""
    return total // parts + (1 if i < total % parts else 0)


def arrival_offsets(
    rate: float, requests: int | None, duration_s: float | None, seed: int
) -> list[float]:
    """Poisson arrival times (seconds from the start): exponential gaps of mean 1/rate."""
    rng = np.random.default_rng(seed)
    if requests is not None:
        return [float(x) for x in np.cumsum(rng.exponential(1.0 / rate, requests))]
    assert duration_s is not None
    out: list[float] = []
    t = 0.0
    while True:
        t += float(rng.exponential(1.0 / rate))
        if t > duration_s:
            return out
        out.append(t)


def _execute(
    plans: list[WorkerPlan],
    before_measure: Callable[[], None],
    progress: Callable[[Progress], None] | None,
    total: int | None,
) -> list[WorkerResult]:
    """Run the plans: in this process for one worker, else in spawned processes."""
    if len(plans) == 1:
        return [_in_process(plans[0], before_measure, progress, total)]
    return _in_processes(plans, before_measure, progress, total)


def _in_process(
    plan: WorkerPlan,
    before_measure: Callable[[], None],
    progress: Callable[[Progress], None] | None,
    total: int | None,
) -> WorkerResult:
    """One worker on an event loop of this thread, with progress from inside the loop."""
    counters = [0, 0, 0]
    begun: list[float] = []

    def start() -> float:
        before_measure()
        begun.append(perf_counter())
        return begun[0]

    async def main() -> WorkerResult:
        ticker = None
        if progress is not None:
            ticker = asyncio.create_task(_tick(counters, begun, progress, total))
        try:
            return await run_worker(plan, counters, start)
        finally:
            if ticker is not None:
                ticker.cancel()

    return asyncio.run(main())


async def _tick(
    counters: MutableSequence[int],
    begun: list[float],
    progress: Callable[[Progress], None],
    total: int | None,
) -> None:
    """Report progress twice a second once the measurement has begun."""
    while True:
        await asyncio.sleep(0.5)
        if begun:
            progress(_progress(counters, begun[0], total))


def _progress(counters: MutableSequence[int], t0: float, total: int | None) -> Progress:
    """Sum the per-worker counters."""
    return Progress(
        done=sum(counters[0::3]),
        failed=sum(counters[1::3]),
        chunks=sum(counters[2::3]),
        elapsed_s=perf_counter() - t0,
        total=total,
    )


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
                await asyncio.sleep(0.5)
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
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):
            pass
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
    plans: list[WorkerPlan],
    before_measure: Callable[[], None],
    progress: Callable[[Progress], None] | None,
    total: int | None,
) -> list[WorkerResult]:
    """Start a process per plan, start them together, and collect their results.

    Workers are plain child processes fed through pipes (no multiprocessing helpers),
    so nothing outlives the point.
    """
    code = "from servegate.bench.runner import worker_main; worker_main()"
    parent = str(os.getpid())
    procs: list[subprocess.Popen[bytes]] = []
    threads: list[threading.Thread] = []
    inbox: queue.Queue[tuple[int, tuple[Any, ...]]] = queue.Queue()

    def reader(slot: int, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stdout is not None
        while True:
            try:
                message = pickle.load(proc.stdout)  # noqa: S301 (our own child)
            except (EOFError, pickle.UnpicklingError, OSError, ValueError):
                inbox.put((slot, ("gone",)))
                return
            inbox.put((slot, message))

    counters = [0] * (3 * len(plans))
    out: dict[int, WorkerResult] = {}
    errors: list[str] = []
    try:
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
        ready = 0
        t0 = shown = 0.0
        finished: set[int] = set()
        while len(finished) < len(plans):
            try:
                slot, message = inbox.get(timeout=0.5)
            except queue.Empty:
                if t0 and progress is not None:
                    progress(_progress(counters, t0, total))
                continue
            kind = message[0]
            if kind == "ready":
                ready += 1
                if ready == len(plans):
                    before_measure()
                    t0 = perf_counter() + 0.02
                    for proc in procs:
                        assert proc.stdin is not None
                        proc.stdin.write(f"{t0!r}\n".encode())
                        proc.stdin.flush()
            elif kind == "progress":
                counters[3 * slot : 3 * slot + 3] = message[1:4]
                if t0 and progress is not None and perf_counter() - shown >= 0.5:
                    shown = perf_counter()
                    progress(_progress(counters, t0, total))
            elif kind == "result":
                out[slot] = message[1]
                finished.add(slot)
            elif slot not in finished:
                errors.append(message[1] if kind == "error" else "a worker exited early")
                finished.add(slot)
                if ready < len(plans):
                    break
    finally:
        _stop_workers(procs, threads)
    if errors:
        raise BenchError(f"a load-generator worker failed ({errors[0]}); retry with --workers 1.")
    return [out[k] for k in sorted(out)]


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


def _client_stats(results: list[WorkerResult]) -> ClientStats:
    """The client's headroom: busiest worker's CPU share, loop lag and send lag."""
    fractions = [r.cpu_s / r.wall_s for r in results if r.wall_s > 0] or [0.0]
    lags = np.array([x for r in results for x in r.lags_ms] or [0.0])
    send = [x for r in results for x in r.send_lags_ms]
    send_arr = np.array(send) if send else None
    return ClientStats(
        workers=len(results),
        wall_s=float(max((r.wall_s for r in results), default=0.0)),
        cpu_fraction=float(max(fractions)),
        cpu_fraction_mean=float(sum(fractions) / len(fractions)),
        loop_lag_ms_p50=float(np.percentile(lags, 50)),
        loop_lag_ms_p99=float(np.percentile(lags, 99)),
        loop_lag_ms_max=float(lags.max()),
        send_lag_ms_p50=None if send_arr is None else float(np.percentile(send_arr, 50)),
        send_lag_ms_p99=None if send_arr is None else float(np.percentile(send_arr, 99)),
        send_lag_ms_max=None if send_arr is None else float(send_arr.max()),
    )


def _headroom_warnings(client: ClientStats) -> list[str]:
    """Warn when the client, not the server, may have set the pace."""
    out: list[str] = []
    if client.cpu_fraction >= CPU_WARN and client.wall_s >= CPU_WARN_MIN_WALL_S:
        out.append(
            f"the client used {client.cpu_fraction:.0%} of a CPU core in its busiest worker; "
            "it may be the bottleneck: raise --workers or give the client a free core."
        )
    if client.loop_lag_ms_p99 >= LAG_WARN_MS:
        out.append(
            f"the client's event loop ran up to {client.loop_lag_ms_p99:.1f} ms late (p99); "
            "timestamps may be late by as much: raise --workers or lower the load."
        )
    if client.send_lag_ms_p99 is not None and client.send_lag_ms_p99 >= LAG_WARN_MS:
        out.append(
            f"requests left up to {client.send_lag_ms_p99:.1f} ms after their planned time "
            "(p99); the rate schedule was not kept: lower --rate, raise the concurrency cap "
            "or --workers."
        )
    return out


__all__ = ["Progress", "arrival_offsets", "discover_model", "run_point", "worker_main"]
