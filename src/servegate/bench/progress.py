"""Live progress of a point: counts summed over the workers, twice a second.

Each worker keeps (done, failed, content chunks) in its slot of a counters list; the
point's `ProgressFeed` turns the sum into a `Progress` for the caller's callback. It runs
on a timer, never on the per-request or per-chunk path.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from time import perf_counter

PROGRESS_EVERY_S = 0.5


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


@dataclass(frozen=True, slots=True, kw_only=True)
class ProgressFeed:
    """Where a point's progress goes: the caller's callback, with the point's request
    total (None when bound by time) and its length (None when bound by requests)."""

    callback: Callable[[Progress], None]
    total: int | None
    duration_s: float | None

    def report(self, counters: Sequence[int], t0: float) -> None:
        """Sum the per-worker (done, failed, chunks) counters and hand them on."""
        self.callback(
            Progress(
                done=sum(counters[0::3]),
                failed=sum(counters[1::3]),
                chunks=sum(counters[2::3]),
                elapsed_s=perf_counter() - t0,
                total=self.total,
                duration_s=self.duration_s,
            )
        )


async def tick(counters: Sequence[int], begun: list[float], feed: ProgressFeed) -> None:
    """Report progress twice a second once the measurement has begun (``begun[0]``)."""
    while True:
        await asyncio.sleep(PROGRESS_EVERY_S)
        if begun:
            feed.report(counters, begun[0])
