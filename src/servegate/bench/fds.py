"""The client's open files: what a point needs, checked against ``ulimit -n`` before it.

Each stream holds a socket in its worker process, so at ``--concurrency 10000`` one
worker of two needs 5,000 descriptors, and under the usual soft limit of 1024 most of its
connects fail with EMFILE: the client's own failure, which would read as the server's.
`ensure_descriptors` runs before a point: it raises the soft limit where the hard limit
allows (workers inherit it), and otherwise refuses the point in one sentence naming
``ulimit -n`` and the number needed. An open loop without a concurrency cap has no
bound on its streams: the soft limit is raised as far as the need estimated from its
rate allows, never refused (a request that still meets EMFILE is a ``client_fd_limit``
failure, never counted against the server).
"""

from __future__ import annotations

import math
import os
import resource

from servegate.bench.settings import BenchSettings
from servegate.errors import ClientLimitError

__all__ = ["RESERVE", "ensure_descriptors", "need"]

# a process's own files beside its streams: the interpreter, the event loop, the pipes to
# the parent or the workers, the /metrics socket, a reconnect's socket closing late
RESERVE = 64


def _open_now() -> int:
    """Descriptors this process holds now (Linux); 0 where that cannot be read."""
    try:
        return len(os.listdir("/proc/self/fd"))
    except OSError:
        return 0


def need(settings: BenchSettings) -> tuple[int, bool]:
    """The descriptors the busiest process of the point needs, and whether that is a
    bound (False: an open loop without a cap, estimated from its rate and timeout)."""
    workers = settings.resolved_workers()
    if settings.concurrency is not None:
        streams, bound = settings.concurrency, True
    elif not settings.open_loop:  # a closed loop without a concurrency: every request at once
        streams, bound = settings.requests or 0, True
    else:  # at most every request in flight for its whole timeout (Little's law)
        assert settings.rate is not None
        flight = settings.rate * settings.timeout_s
        planned = settings.requests if settings.requests is not None else math.inf
        streams, bound = int(min(flight, planned, 1 << 20)), False
    per_worker = -(-streams // workers)
    base = _open_now() if workers == 1 else 0  # one worker runs in this very process
    return base + per_worker + RESERVE, bound


def ensure_descriptors(settings: BenchSettings) -> None:
    """Raise the soft ``RLIMIT_NOFILE`` to what the point needs, where the hard limit
    allows; ClientLimitError (exit 2; a BenchError, so a campaign fails the variant and
    goes on) naming ``ulimit -n`` when it does not."""
    needed, bound = need(settings)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or needed <= soft:
        return
    ceiling = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
    if ceiling > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (ceiling, hard))
    if ceiling >= needed or not bound:
        return
    workers = settings.resolved_workers()
    streams = settings.concurrency if settings.concurrency is not None else settings.requests
    spread = -(-(streams or 0) // max(1, hard - RESERVE))
    more = f", or spread the streams over --workers {spread}" if spread > workers else ""
    asked = (
        f"--concurrency {streams}"
        if settings.concurrency is not None
        else f"{streams} requests at once (no --concurrency)"
    )
    raise ClientLimitError(
        f"{asked} needs {needed} open files in each client process ({workers} "
        f"worker{'s' if workers > 1 else ''}) but ulimit -n allows {hard} (hard limit): raise "
        f"it with ulimit -n {needed} (as root, or in /etc/security/limits.conf){more}, or "
        "lower --concurrency."
    )
