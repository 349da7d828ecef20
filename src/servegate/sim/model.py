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
from typing import Protocol

from servegate.sim.config import SimConfig

__all__ = ["InstanceSpeed", "Job", "PerfModel", "Scheduler", "Step", "draw_speed", "next_start"]


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
    """Admission: at most ``max_running`` run, the rest wait in arrival order."""

    def __init__(self, model: PerfModel, clock: Callable[[], float]) -> None:
        self.model = model
        self.clock = clock
        self.max_running = model.config.max_running
        self.running = 0
        self.waiting: deque[Job] = deque()
        self.prefill_free_at = 0.0

    def submit(self, job: Job) -> None:
        """Admit ``job`` now, or queue it while the batch is full."""
        if self.running < self.max_running:
            self._admit(job)
        else:
            self.waiting.append(job)

    def waiting_count(self) -> int:
        """Requests queued and not cancelled."""
        return sum(1 for job in self.waiting if not job.cancelled)

    def _admit(self, job: Job) -> None:
        self.running += 1
        now = self.clock()
        begin = max(now, self.prefill_free_at)
        done = begin + self.model.prefill_s(job.prompt_tokens)
        self.prefill_free_at = done
        job.start(now, done + self.model.first_token_delay())

    def finish(self) -> None:
        """A running request ended: admit the next waiting ones."""
        self.running -= 1
        while self.waiting and self.running < self.max_running:
            job = self.waiting.popleft()
            if not job.cancelled:
                self._admit(job)
