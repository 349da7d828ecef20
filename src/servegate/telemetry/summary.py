"""The verdict's ``telemetry``: a start's resources in a few numbers (the series is stored)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from servegate.telemetry.model import Snapshot

__all__ = ["TelemetrySummary", "summarize"]


@dataclass(frozen=True, slots=True, kw_only=True)
class TelemetrySummary:
    """Peaks and totals of a start's telemetry, over every sample taken."""

    samples: int
    period_s: float
    # the tree's CPU time (user + system), each process from its start to its last sample
    cpu_s: float
    peak_rss_bytes: int  # the tree's summed RSS at its highest sample
    peak_processes: int
    peak_gpu_mem_bytes: int  # every GPU's used memory, summed, at its highest sample
    peak_gpu_tree_bytes: int  # the same, counting only the tree's processes

    def to_json(self) -> dict[str, Any]:
        """The summary as a JSON object."""
        return {
            "samples": self.samples,
            "period_s": self.period_s,
            "cpu_s": self.cpu_s,
            "peak_rss_bytes": self.peak_rss_bytes,
            "peak_processes": self.peak_processes,
            "peak_gpu_mem_bytes": self.peak_gpu_mem_bytes,
            "peak_gpu_tree_bytes": self.peak_gpu_tree_bytes,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> TelemetrySummary | None:
        """Rebuild from ``to_json()`` output; None stays None."""
        if data is None:
            return None
        return cls(
            samples=int(data["samples"]),
            period_s=float(data["period_s"]),
            cpu_s=float(data["cpu_s"]),
            peak_rss_bytes=int(data["peak_rss_bytes"]),
            peak_processes=int(data.get("peak_processes", 0)),
            peak_gpu_mem_bytes=int(data["peak_gpu_mem_bytes"]),
            peak_gpu_tree_bytes=int(data["peak_gpu_tree_bytes"]),
        )


def summarize(snapshots: Sequence[Snapshot], period_s: float = 0.0) -> TelemetrySummary:
    """A summary from a stored series (CPU seconds integrated between snapshots)."""
    cpu_s = 0.0
    for before, after in itertools.pairwise(snapshots):
        cpu_s += after.cpu_pct / 100.0 * (after.t_s - before.t_s)
    return TelemetrySummary(
        samples=len(snapshots),
        period_s=period_s,
        cpu_s=round(cpu_s, 3),
        peak_rss_bytes=max((s.rss_bytes for s in snapshots), default=0),
        peak_processes=max((s.processes for s in snapshots), default=0),
        peak_gpu_mem_bytes=max(
            (sum(g.mem_used_bytes for g in s.gpus) for s in snapshots), default=0
        ),
        peak_gpu_tree_bytes=max(
            (sum(g.mem_tree_bytes for g in s.gpus) for s in snapshots), default=0
        ),
    )
