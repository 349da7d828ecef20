"""Whether the server still answers: connection failures, back-off, and the end of a point.

A server that goes away mid-run turns every request into a connection failure within
microseconds, so a closed loop would hammer the closed port thousands of times a second
and then report numbers that look normal. `Liveness` sits in front of every request of
a worker. While requests are answered it costs one attribute read. After a connection
failure (refused, unreachable, no connection within the timeout, or closed before any
response byte) requests go out one at a time, each after a back-off that doubles from
`BACKOFF_FIRST_S` to `BACKOFF_MAX_S`, and the others wait; any answer, even an HTTP
error, ends the back-off. After `GONE_AFTER_FAILURES` consecutive connection failures
spanning at least `GONE_AFTER_S` with no answer in between, the server is declared gone:
waiting requests are not sent, and the point ends. So a dead server costs about
``concurrency + 10`` connection attempts per worker, not thousands a second.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from time import perf_counter

from servegate.bench.sample import RequestSample
from servegate.bench.stream import CLIENT_FD_LIMIT, connection_failed

BACKOFF_FIRST_S = 0.05
BACKOFF_MAX_S = 1.0
GONE_AFTER_FAILURES = 5
GONE_AFTER_S = 5.0


class Liveness:
    """One worker's view of whether the server answers; gates its requests while it does not."""

    def __init__(self) -> None:
        self.failures = 0  # consecutive connection failures since the last answer
        self.first_failure_at: float | None = None  # perf_counter() of the first of them
        self.gone_at: float | None = None  # set once: when the server stopped answering
        self._retry_at = 0.0
        self._lock = asyncio.Lock()  # held by the one request sent while failing

    async def send(self, request: Callable[[], Awaitable[RequestSample]]) -> RequestSample | None:
        """Send one request through the gate; None when the server is gone (nothing sent)."""
        if not self.failures:
            return self._record(await request())
        async with self._lock:
            if self.gone_at is not None:
                return None
            if self.failures:
                delay = self._retry_at - perf_counter()
                if delay > 0:
                    await asyncio.sleep(delay)
                return self._record(await request())
        return self._record(await request())  # an answer ended the back-off while we waited

    def _record(self, sample: RequestSample) -> RequestSample:
        """Count a connection failure, or clear the count on any answer."""
        if not connection_failed(sample):
            # a reset mid-response or a timeout on a connection is no answer either way, and
            # the client out of open files never reached the server
            if sample.error not in ("connection_reset", "timeout", CLIENT_FD_LIMIT):
                self.failures = 0
                self.first_failure_at = None
            return sample
        now = perf_counter()
        self.failures += 1
        if self.first_failure_at is None:
            self.first_failure_at = now
        backoff = min(BACKOFF_MAX_S, BACKOFF_FIRST_S * 2 ** min(self.failures - 1, 16))
        self._retry_at = now + backoff
        if (
            self.gone_at is None
            and self.failures >= GONE_AFTER_FAILURES
            and now - self.first_failure_at >= GONE_AFTER_S
        ):
            self.gone_at = self.first_failure_at
        return sample
