"""The warnings of a point: what a reader of its numbers must know, in the order given.

Repeated prompts, output lengths and usage (`servegate.bench.metrics.token_warnings`),
the client's own headroom, a server that stopped answering, and failed requests.
"""

from __future__ import annotations

from collections.abc import Sequence

from servegate.bench import metrics
from servegate.bench.liveness import GONE_AFTER_S
from servegate.bench.result import ClientStats
from servegate.bench.sample import RequestSample
from servegate.bench.settings import BenchSettings
from servegate.bench.stream import CLIENT_FD_LIMIT

CPU_WARN = 0.9
# a point shorter than this is too short for its CPU share to say anything
CPU_WARN_MIN_WALL_S = 1.0
FAILED_WARN = 0.01  # a warning when more than this share of a point's requests failed
LAG_WARN_MS = 10.0


def point_warnings(
    settings: BenchSettings,
    samples: Sequence[RequestSample],
    *,
    pool: int,
    client: ClientStats,
    failures: dict[str, int],
    server_gone_s: float | None,
) -> list[str]:
    """Every warning of a measured point (``pool``: the prompts it was built from)."""
    warnings = _pool_warnings(settings, len(samples), pool)
    warnings += metrics.token_warnings(
        samples, ignore_eos=settings.ignore_eos and settings.output_len is not None
    )
    warnings += headroom_warnings(client)
    if server_gone_s is not None:
        warnings.append(gone_sentence(server_gone_s, len(samples), settings.requests))
    own = failures.get(CLIENT_FD_LIMIT, 0)
    if own:
        warnings.append(
            f"{own} of {len(samples)} requests were never sent: the client ran out of open "
            "files (EMFILE), its own limit, not the server's; the point measured the client: "
            "raise ulimit -n or lower the load."
        )
    completed = sum(1 for s in samples if s.ok)
    if not completed:
        warnings.append("no request completed; every metric of this point is empty.")
    elif samples and (len(samples) - completed) / len(samples) > FAILED_WARN:
        kinds = ", ".join(f"{k} {v}" for k, v in failures.items())
        warnings.append(
            f"{len(samples) - completed} of {len(samples)} requests failed "
            f"({(len(samples) - completed) / len(samples):.1%}: {kinds}); "
            "the failure_details in --json say why."
        )
    return warnings


def _pool_warnings(settings: BenchSettings, used: int, pool: int) -> list[str]:
    """A time-bound point that cycled its random prompts may have hit the prefix cache."""
    if settings.duration_s is None or settings.requests is not None or settings.open_loop:
        return []
    if used > pool and settings.dataset == "random":
        return [
            f"the run sent {used} requests from a pool of {pool} prompts; "
            "repeated prompts may hit the server's prefix cache."
        ]
    return []


def gone_sentence(gone_s: float, sent: int, planned: int | None) -> str:
    """The sentence that reports a server that stopped answering during a point."""
    unsent = f"; {planned - sent} of {planned} requests were not sent" if planned else ""
    return (
        f"the server stopped answering at t={gone_s:.1f}s (connection failures with no "
        f"answer for {GONE_AFTER_S:g} s); the point ended there{unsent}."
    )


def headroom_warnings(client: ClientStats) -> list[str]:
    """Warn when the client, not the server, may have set the pace."""
    out: list[str] = []
    if client.cpu_fraction >= CPU_WARN and client.wall_s >= CPU_WARN_MIN_WALL_S:
        out.append(
            f"the client used {client.cpu_fraction:.0%} of a CPU core in its busiest worker; "
            "it may be the bottleneck: raise --workers or give the client a free core."
        )
    if client.loop_lag_ms_p99 >= LAG_WARN_MS:
        late = (
            "responses are timed by the kernel's receive stamps, but requests may leave "
            "late by as much"
            if client.read_stamps == "kernel"
            else "timestamps may be late by as much"
        )
        out.append(
            f"the client's event loop ran up to {client.loop_lag_ms_p99:.1f} ms late (p99); "
            f"{late}: raise --workers or lower the load."
        )
    if client.send_lag_ms_p99 is not None and client.send_lag_ms_p99 >= LAG_WARN_MS:
        out.append(
            f"requests left up to {client.send_lag_ms_p99:.1f} ms after their planned time "
            "(p99); the rate schedule was not kept: lower --rate, raise the concurrency cap "
            "or --workers."
        )
    return out
