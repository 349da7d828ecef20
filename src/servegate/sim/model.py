"""The performance model: when each request starts, gets its first token, and each next.

A request waits while ``max_running`` requests run; once admitted its prompt is
prefilled (requests share one prefill lane at ``prefill_tok_s``), then the first token
comes ``ttft_ms`` later. Each decode step takes ``itl_ms``, stretched by
``batch_slowdown`` per other running request, so throughput rises with concurrency and
flattens; with speculative decoding a step emits ``spec_accept_length`` tokens on
average. Every value is a deadline on the caller's clock, so emission never drifts.

A real server instance can settle into one of several performance regimes for its whole
life (vLLM #39903). With ``--regimes`` or ``--instance-sd`` each process start draws one
speed factor that divides every duration (prefill, first token, decode steps), so
restarts of one configuration differ the way restarts of a real server do, while the
expected difference between two configurations stays exactly what their flags say.
"""

from __future__ import annotations

import fcntl
import math
import os
import random
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

from servegate.sim.cache import KvCache, Lookup
from servegate.sim.config import SimConfig

__all__ = [
    "InstanceSpeed",
    "Job",
    "KvJob",
    "PerfModel",
    "Scheduler",
    "Step",
    "draw_speed",
    "next_start",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class Step:
    """One decode step of one request: tokens emitted, drafts proposed and accepted."""

    tokens: int
    drafted: int
    accepted: int


@dataclass(frozen=True, slots=True, kw_only=True)
class InstanceSpeed:
    """The speed factor one process start drew, and where it came from."""

    factor: float  # every duration is divided by it: 0.85 is 15 % slower
    start: int | None  # the start's number from the counter file; None: drawn from os.urandom
    regime: int | None  # index of the ``--regimes`` entry drawn, when there are regimes


def next_start(path: Path) -> int:
    """The next start number from the counter file at ``path`` (0 first), counted up once.

    The file is locked while it is read and rewritten, so simultaneous starts of several
    simulators sharing one counter get distinct numbers.
    """
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        text = os.read(fd, 64).decode("ascii", "replace").strip()
        count = int(text) if text.isdigit() else 0
        os.lseek(fd, 0, os.SEEK_SET)
        os.ftruncate(fd, 0)
        os.write(fd, f"{count + 1}\n".encode())
        return count
    finally:
        os.close(fd)


def draw_speed(config: SimConfig) -> InstanceSpeed:
    """This start's speed factor: a regime, times a lognormal factor with mean 1.

    With ``start_counter`` the draw is seeded by ``(seed, start number)``: reproducible,
    and different for every start. Without it, each start draws from ``os.urandom``.
    """
    if not config.per_start_speed:
        return InstanceSpeed(factor=1.0, start=None, regime=None)
    start = next_start(config.start_counter) if config.start_counter is not None else None
    rng = random.Random(f"instance:{config.seed}:{start}" if start is not None else os.urandom(16))
    factor, regime = 1.0, None
    if config.regimes:
        pick = rng.random()
        regime = len(config.regimes) - 1
        for index, (_, chance) in enumerate(config.regimes):
            if pick < chance:
                regime = index
                break
            pick -= chance
        factor = config.regimes[regime][0]
    if config.instance_sd > 0:
        sd = config.instance_sd
        factor *= math.exp(sd * rng.gauss(0.0, 1.0) - sd * sd / 2.0)
    return InstanceSpeed(factor=factor, start=start, regime=regime)


class PerfModel:
    """Durations and lengths drawn from the configured model, seeded."""

    def __init__(self, config: SimConfig, speed: InstanceSpeed | None = None) -> None:
        self.config = config
        self.speed = speed if speed is not None else draw_speed(config)
        # numbered starts also differ in their request-level noise, as real restarts do
        start = self.speed.start
        self.rng = random.Random(config.seed if start is None else f"{config.seed}:{start}")
        # a run-level drift, so two seeds differ the way two real runs do
        self.run_factor = self._noise(config.jitter / 4) if config.jitter else 1.0
        self.ttft_s = config.ttft_ms / 1000.0 / self.speed.factor
        self.itl_s = config.itl_ms / 1000.0 / self.speed.factor
        accept = config.spec_accept_length - 1.0
        self.accept_floor = math.floor(accept + 1e-9)
        self.accept_frac = accept - self.accept_floor
        self.accept_credit = 0.0

    def _noise(self, scale: float) -> float:
        return max(0.2, 1.0 + scale * self.rng.gauss(0.0, 1.0))

    def first_token_delay(self) -> float:
        """Seconds from the end of prefill to the first token."""
        if self.config.jitter:
            return self.ttft_s * self.run_factor * self._noise(self.config.jitter)
        return self.ttft_s

    def prefill_s(self, prompt_tokens: int) -> float:
        """Seconds the prefill lane is busy with a prompt of ``prompt_tokens``."""
        if self.config.prefill_tok_s <= 0:
            return 0.0
        return prompt_tokens / (self.config.prefill_tok_s * self.speed.factor)

    def step_s(self, running: int) -> float:
        """Seconds of one decode step while ``running`` requests share the batch."""
        seconds = self.itl_s * (1.0 + self.config.batch_slowdown * max(0, running - 1))
        if running <= self.config.graph_max_bs:
            seconds *= self.config.graph_speedup  # a captured CUDA graph replayed
        if self.config.jitter:
            return seconds * self.run_factor * self._noise(self.config.jitter)
        return seconds

    def step(self, remaining: int) -> Step:
        """The tokens of a decode step, at most ``remaining``."""
        if not self.config.spec_enabled:
            return Step(tokens=1, drafted=0, accepted=0)
        accepted = self.accept_floor
        if self.accept_frac:
            if self.config.jitter:
                accepted += self.rng.random() < self.accept_frac
            else:
                # error diffusion: the running mean is exact at every step
                self.accept_credit += self.accept_frac
                if self.accept_credit >= 1.0 - 1e-9:
                    self.accept_credit -= 1.0
                    accepted += 1
        accepted = min(accepted, self.config.spec_draft_tokens, remaining - 1)
        return Step(tokens=accepted + 1, drafted=self.config.spec_draft_tokens, accepted=accepted)

    def output_len(self, max_tokens: int, ignore_eos: bool) -> int:
        """Tokens a request generates: all of ``max_tokens`` with ``ignore_eos``."""
        if ignore_eos or max_tokens <= 1:
            return max_tokens
        # an end-of-sequence token comes early in about half of the requests
        if self.rng.random() < 0.5:
            return max_tokens
        return self.rng.randint(max(1, max_tokens // 4), max_tokens)

    def fails(self) -> bool:
        """Whether this request gets a simulated HTTP 500 (``--error-rate``)."""
        return bool(self.config.error_rate) and self.rng.random() < self.config.error_rate


class Job(Protocol):
    """What the scheduler needs of a request."""

    prompt_tokens: int
    cancelled: bool

    def start(self, admitted_at: float, first_token_at: float) -> None:
        """Admitted at ``admitted_at``; the first token is due at ``first_token_at``."""


class Scheduler:
    """Admission: at most ``max_running`` run, the rest wait in arrival order.

    With a KV cache (`servegate.sim.cache.KvCache`) a request is admitted only when its
    blocks fit, its prefix-cache hit skips that much prefill, and `preempt` sends a
    running request back to the head of the queue (vLLM's recompute preemption).
    """

    def __init__(
        self, model: PerfModel, clock: Callable[[], float], kv: KvCache | None = None
    ) -> None:
        self.model = model
        self.clock = clock
        self.kv = kv
        self.max_running = model.config.max_running
        self.running = 0
        self.running_jobs: dict[int, Job] = {}  # admission order (dicts keep it)
        self.waiting: deque[Job] = deque()
        self.prefill_free_at = 0.0

    def submit(self, job: Job) -> None:
        """Admit ``job`` now, or queue it while the batch (or the KV cache) is full."""
        if not self.waiting and self._fits(job):
            self._admit(job)
        else:
            self.waiting.append(job)

    def waiting_count(self) -> int:
        """Requests queued and not cancelled."""
        return sum(1 for job in self.waiting if not job.cancelled)

    def _fits(self, job: Job) -> bool:
        if self.running >= self.max_running:
            return False
        if self.kv is None or self.running == 0:
            return True  # one request always runs, however large
        return self.kv.fits(self.kv.blocks_for(_held_tokens(job)))

    def _admit(self, job: Job) -> None:
        self.running += 1
        self.running_jobs[id(job)] = job
        now = self.clock()
        computed = job.prompt_tokens
        kv_job = job if isinstance(job, KvJob) else None
        if self.kv is not None and kv_job is not None:
            lookup = self.kv.lookup(kv_job.ids)
            kv_job.lookup = lookup
            kv_job.cached_tokens = lookup.cached_tokens
            kv_job.blocks = self.kv.admit(lookup, job.prompt_tokens)
            extra = self.kv.blocks_for(_held_tokens(job)) - kv_job.blocks
            if extra > 0:
                self.kv.grow(extra)
                kv_job.blocks += extra
            # a preempted request recomputes what it generated too
            computed = _held_tokens(job) - lookup.cached_tokens
        begin = max(now, self.prefill_free_at)
        done = begin + self.model.prefill_s(computed)
        self.prefill_free_at = done
        job.start(now, done + self.model.first_token_delay())

    def grow(self, job: KvJob, tokens: int) -> None:
        """``job`` now holds ``tokens`` tokens: take the blocks, preempting the newest others."""
        kv = self.kv
        if kv is None:
            return
        extra = kv.blocks_for(tokens) - job.blocks
        if extra <= 0:
            return
        while not kv.fits(extra):
            victims = [j for j in self.running_jobs.values() if j is not job]
            if not victims:
                break  # alone, it runs past the capacity rather than stall
            self.preempt(victims[-1])
        kv.grow(extra)
        job.blocks += extra

    def preempt(self, job: Job) -> None:
        """Stop ``job``, free its blocks and put it first in the queue, to be recomputed."""
        self._release(job)
        if isinstance(job, KvJob):
            job.suspend()
        if self.kv is not None:
            self.kv.preemptions += 1
        self.waiting.appendleft(job)

    def _release(self, job: Job) -> None:
        self.running -= 1
        self.running_jobs.pop(id(job), None)
        if self.kv is not None and isinstance(job, KvJob) and job.lookup is not None:
            self.kv.release(job.lookup, job.blocks)
            job.lookup = None
            job.blocks = 0

    def finish(self, job: Job) -> None:
        """A running request ended: free its blocks, admit the next waiting ones."""
        self._release(job)
        while self.waiting:
            head = self.waiting[0]
            if head.cancelled:
                self.waiting.popleft()
                continue
            if not self._fits(head):
                break
            self.waiting.popleft()
            self._admit(head)


@runtime_checkable
class KvJob(Job, Protocol):
    """A request whose token ids the KV cache sees."""

    ids: list[int]
    emitted: int
    lookup: Lookup | None
    cached_tokens: int
    blocks: int

    def suspend(self) -> None:
        """Preempted: stop emitting until admitted again."""


def _held_tokens(job: Job) -> int:
    """Tokens a request holds in the KV cache: its prompt and what it generated."""
    return job.prompt_tokens + (job.emitted if isinstance(job, KvJob) else 0)
