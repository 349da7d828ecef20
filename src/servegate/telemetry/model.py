"""What the flight recorder samples: the values, not how they are read.

A :class:`Snapshot` is one sample of a server's process tree, its host and its GPUs,
taken every ``--sample`` seconds while it starts (and less often while it runs). The
sampler (``servegate.telemetry.sampler``) makes them; the gate asks an
:class:`Activity` of the recent ones when the log goes quiet (busy is *slow*, idle on
every signal is *stuck*); the store and the history keep them with the start.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["Activity", "Bound", "GpuSample", "ProcSample", "Snapshot"]

# what a phase (or a quiet spell) was bound by, from the telemetry
Bound = Literal["cpu", "disk", "network", "gpu", "idle"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ProcSample:
    """One process of the tree at one sample."""

    pid: int
    name: str
    cpu_pct: float  # since the previous sample; 100.0 = one full core
    rss_bytes: int
    threads: int
    state: str  # /proc/PID/stat state letter: R, S, D, Z, ...

    def to_json(self) -> dict[str, Any]:
        """The process as a JSON object."""
        return {
            "pid": self.pid,
            "name": self.name,
            "cpu_pct": self.cpu_pct,
            "rss_bytes": self.rss_bytes,
            "threads": self.threads,
            "state": self.state,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ProcSample:
        """Rebuild from ``to_json()`` output."""
        return cls(
            pid=int(data["pid"]),
            name=str(data["name"]),
            cpu_pct=float(data["cpu_pct"]),
            rss_bytes=int(data["rss_bytes"]),
            threads=int(data["threads"]),
            state=str(data["state"]),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class GpuSample:
    """One GPU at one sample (NVML)."""

    index: int
    name: str
    mem_used_bytes: int  # by every process on the GPU
    mem_tree_bytes: int  # by the processes of this tree
    mem_total_bytes: int
    util_pct: float  # NVML's utilization.gpu
    power_w: float | None

    def to_json(self) -> dict[str, Any]:
        """The GPU as a JSON object."""
        return {
            "index": self.index,
            "name": self.name,
            "mem_used_bytes": self.mem_used_bytes,
            "mem_tree_bytes": self.mem_tree_bytes,
            "mem_total_bytes": self.mem_total_bytes,
            "util_pct": self.util_pct,
            "power_w": self.power_w,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> GpuSample:
        """Rebuild from ``to_json()`` output."""
        power = data.get("power_w")
        return cls(
            index=int(data["index"]),
            name=str(data["name"]),
            mem_used_bytes=int(data["mem_used_bytes"]),
            mem_tree_bytes=int(data["mem_tree_bytes"]),
            mem_total_bytes=int(data["mem_total_bytes"]),
            util_pct=float(data["util_pct"]),
            power_w=None if power is None else float(power),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Snapshot:
    """The tree, the host and the GPUs at one moment.

    ``t_s`` is seconds since the gate started (the verdict's clock). Rates
    (``cpu_pct``, ``*_bps``) cover the interval since the previous snapshot; the first
    snapshot of a series has rates of 0.
    """

    t_s: float
    cpu_pct: float  # the whole tree; 100.0 = one full core
    rss_bytes: int
    threads: int
    processes: int
    read_bps: float  # the tree's disk reads (/proc/PID/io read_bytes), bytes per second
    write_bps: float
    net_rx_bps: float  # the host's received bytes per second (downloads)
    procs: tuple[ProcSample, ...] = ()
    gpus: tuple[GpuSample, ...] = field(default=())

    def to_json(self) -> dict[str, Any]:
        """The snapshot as a JSON object."""
        return {
            "t_s": self.t_s,
            "cpu_pct": self.cpu_pct,
            "rss_bytes": self.rss_bytes,
            "threads": self.threads,
            "processes": self.processes,
            "read_bps": self.read_bps,
            "write_bps": self.write_bps,
            "net_rx_bps": self.net_rx_bps,
            "procs": [p.to_json() for p in self.procs],
            "gpus": [g.to_json() for g in self.gpus],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Snapshot:
        """Rebuild from ``to_json()`` output (e.g. sent by the keeper process)."""
        return cls(
            t_s=float(data["t_s"]),
            cpu_pct=float(data["cpu_pct"]),
            rss_bytes=int(data["rss_bytes"]),
            threads=int(data["threads"]),
            processes=int(data["processes"]),
            read_bps=float(data["read_bps"]),
            write_bps=float(data["write_bps"]),
            net_rx_bps=float(data["net_rx_bps"]),
            procs=tuple(ProcSample.from_json(p) for p in data.get("procs", ())),
            gpus=tuple(GpuSample.from_json(g) for g in data.get("gpus", ())),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Activity:
    """What the tree was doing over a window of snapshots.

    ``busy`` is True when any signal was above its floor; ``bound`` names the busiest
    one ("idle" when none was); ``evidence`` says it in words for the live line and the
    verdict, e.g. "1 process at 100 % CPU" or "reading 210 MB/s from disk".
    """

    busy: bool
    bound: Bound
    evidence: str
    window_s: float

    def to_json(self) -> dict[str, Any]:
        """The activity as a JSON object."""
        return {
            "busy": self.busy,
            "bound": self.bound,
            "evidence": self.evidence,
            "window_s": self.window_s,
        }
