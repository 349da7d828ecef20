"""The result of one load point, and the client's own headroom while it ran.

`PointResult` carries the summary (vLLM-named metrics), the failures by kind, every raw
sample, the engine's counter deltas, warnings, and how busy the client itself was, so a
reader can tell whether the numbers describe the server or the load generator.
"""

from __future__ import annotations

import math
import platform
import sys
from dataclasses import dataclass, field
from typing import Any

from servegate._version import __version__
from servegate.bench.sample import RequestSample
from servegate.bench.settings import BenchSettings
from servegate.bench.slo import SloResult
from servegate.telemetry.energy import Energy

SCHEMA = "servegate.bench/1"


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientStats:
    """How much of its machine the client used during the measured phase.

    ``cpu_fraction`` is the busiest worker's event-loop thread CPU time over wall time
    (1.0 = one full core); ``wall_s`` is the longest worker's measured phase;
    ``loop_lag_ms_*`` is how late a 10 ms timer fired in the busiest event loop;
    ``send_lag_ms_*`` is actual minus scheduled send time under a rate schedule;
    ``read_stamps`` says how the responses' bytes were timed: ``kernel`` (every
    connection read the kernel's receive stamps, so a late event loop does not move
    them), ``select`` (when the loop learned the socket was readable: late by as much as
    the loop), or ``mixed``.
    """

    workers: int
    cpu_fraction: float
    cpu_fraction_mean: float
    loop_lag_ms_p50: float
    loop_lag_ms_p99: float
    loop_lag_ms_max: float
    send_lag_ms_p50: float | None = None
    send_lag_ms_p99: float | None = None
    send_lag_ms_max: float | None = None
    wall_s: float = 0.0
    read_stamps: str = "select"

    def to_json(self) -> dict[str, Any]:
        """All fields as a JSON object."""
        return {name: getattr(self, name) for name in self.__slots__}


@dataclass(frozen=True, slots=True, kw_only=True)
class PointResult:
    """Everything measured at one load point."""

    settings: BenchSettings
    model: str
    summary: dict[str, float]
    completed: int
    failed: int
    failures: dict[str, int]
    samples: list[RequestSample]
    server_metrics: dict[str, Any]
    warnings: list[str]
    client: ClientStats
    started_at: str  # ISO-8601, UTC
    failure_details: dict[str, str] = field(default_factory=dict)  # kind -> first detail
    reconnects: int = 0  # requests sent again on a fresh connection (see RequestSample)
    server_gone_s: float | None = None  # the server stopped answering then; the point ended
    slo: SloResult | None = None  # the point against --slo, when targets were given
    stopped_early: bool = False  # a capacity probe ended at a certain SLO failure
    # requested vs usage.prompt_tokens, and whether the prompts were exact (--tokenizer)
    prompt_tokens: dict[str, Any] = field(default_factory=dict)
    # the prefix-cache hit rate the design implies and the measured one (cache_state)
    cache: dict[str, Any] = field(default_factory=dict)
    # multiturn: metrics by turn index (`servegate.bench.sessions.per_turn`)
    turns: list[dict[str, Any]] = field(default_factory=list)
    # the server's GPUs' energy over the measured phase (None: not read, as in old files)
    energy: Energy | None = None

    @property
    def label(self) -> str:
        """The load point as people write it: ``c=16`` or ``rate=8/s`` (with a cap)."""
        s = self.settings
        if s.open_loop:
            cap = f", c<={s.concurrency}" if s.concurrency is not None else ""
            return f"rate={s.rate:g}/s{cap}"
        return f"c={s.concurrency if s.concurrency is not None else s.requests}"

    def to_json(self, *, samples: bool = True) -> dict[str, Any]:
        """The point as a JSON object (NaN written as null); raw samples unless told not to."""
        out: dict[str, Any] = {
            "label": self.label,
            "model": self.model,
            "started_at": self.started_at,
            "settings": self.settings.to_json(),
            "completed": self.completed,
            "failed": self.failed,
            "failures": self.failures,
            "failure_details": self.failure_details,
            "reconnects": self.reconnects,
            "server_gone_s": self.server_gone_s,
            "summary": {k: _finite(v) for k, v in self.summary.items()},
            "server_metrics": self.server_metrics,
            "client": self.client.to_json(),
            "warnings": self.warnings,
            "prompt_tokens": self.prompt_tokens,
            "cache": self.cache,
            "energy": (self.energy or Energy(reason="not measured")).to_json(),
        }
        if self.turns:
            out["turns"] = self.turns
        if self.slo is not None:
            out["slo"] = self.slo.to_json()
        if samples:
            out["samples"] = [s.to_json() for s in self.samples]
        return out


def envelope(points: list[dict[str, Any]]) -> dict[str, Any]:
    """The top-level JSON document: schema, tool and Python versions, platform, points."""
    return {
        "schema": SCHEMA,
        "tool": "servegate",
        "version": __version__,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "points": points,
    }


def _finite(value: float) -> float | None:
    """JSON has no NaN: a metric without values is null."""
    return value if math.isfinite(value) else None
