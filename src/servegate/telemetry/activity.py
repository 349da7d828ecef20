"""Busy or idle: what a window of telemetry says a quiet server was doing.

The gate asks this when the log has been silent for ``--stall`` seconds. A signal is
busy when its mean over the window is at or above its floor (:data:`FLOORS`); means, not
peaks, so that one sample's blip (a garbage collection, a heartbeat) does not make a hung
server look busy:

- CPU of the whole process tree: 10 % of one core;
- GPU utilization (NVML), the busiest GPU: 5 %;
- disk reads plus writes of the tree (``/proc/PID/io``): 1 MB/s;
- network receive of the host (a download): 1 MB/s.

A server busy on any signal is *slow*; one idle on every signal is *stuck*. The busiest
signal, relative to its floor, is the one the phase was bound by.

    act = activity(sampler.snapshots(), window_s=300.0)
    act.busy, act.bound, act.evidence   # True, "cpu", "1 process at 100 % CPU"
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from servegate.telemetry.model import Activity, Bound, Snapshot

__all__ = ["FLOORS", "Floors", "activity", "between", "phase_activity", "rate_text", "window"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Floors:
    """The level at or above which each signal counts as busy (means over the window)."""

    cpu_pct: float = 10.0  # the tree's CPU, 100 = one core
    gpu_pct: float = 5.0  # the busiest GPU's utilization
    disk_bps: float = 1e6  # the tree's disk reads + writes, bytes per second
    net_bps: float = 1e6  # the host's network receive, bytes per second


FLOORS = Floors()

_PROC_SHOWN_PCT = 5.0  # a process under this share of a core is not counted as working


def rate_text(bps: float) -> str:
    """Bytes per second in words: ``210 MB/s``, ``3.2 MB/s``, ``12 kB/s``, ``0 B/s``."""
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if bps >= size:
            value = bps / size
            return f"{value:.1f} {unit}/s" if value < 10 else f"{value:.0f} {unit}/s"
    return f"{bps:.0f} B/s"


def window(snapshots: Sequence[Snapshot], window_s: float) -> list[Snapshot]:
    """The snapshots of the last ``window_s`` seconds (the newest one's clock)."""
    if not snapshots:
        return []
    end = snapshots[-1].t_s
    return [snap for snap in snapshots if snap.t_s > end - window_s]


def activity(snapshots: Sequence[Snapshot], window_s: float, floors: Floors = FLOORS) -> Activity:
    """What the tree did over the last ``window_s`` seconds of ``snapshots`` (oldest first).

    With no snapshot in the window, the result is idle with the evidence "no telemetry":
    callers that must tell "idle" from "unknown" check for snapshots first.
    """
    recent = window(snapshots, window_s)
    if not recent:
        return Activity(busy=False, bound="idle", evidence="no telemetry", window_s=0.0)
    count = len(recent)
    span = recent[-1].t_s - recent[0].t_s
    cpu = sum(snap.cpu_pct for snap in recent) / count
    disk_read = sum(snap.read_bps for snap in recent) / count
    disk_write = sum(snap.write_bps for snap in recent) / count
    net = sum(snap.net_rx_bps for snap in recent) / count
    gpu_index, gpu = _busiest_gpu(recent)

    ratios: dict[Bound, float] = {
        "cpu": cpu / floors.cpu_pct,
        "disk": (disk_read + disk_write) / floors.disk_bps,
        "network": net / floors.net_bps,
    }
    if gpu_index is not None:
        ratios["gpu"] = gpu / floors.gpu_pct
    busy = {name: ratio for name, ratio in ratios.items() if ratio >= 1.0}
    words: dict[Bound, str] = {
        "cpu": _cpu_words(recent, cpu),
        "disk": (
            f"reading {rate_text(disk_read)} from disk"
            if disk_read >= disk_write
            else f"writing {rate_text(disk_write)} to disk"
        ),
        "network": f"receiving {rate_text(net)} from the network",
    }
    if gpu_index is not None:
        words["gpu"] = _gpu_words(recent, gpu_index, gpu, floors)
    if busy:
        order = sorted(busy, key=lambda name: busy[name], reverse=True)
        return Activity(
            busy=True,
            bound=order[0],
            evidence=", ".join(words[name] for name in order),
            window_s=round(span, 3),
        )
    idle = [
        f"CPU {cpu:.1f} %",
        f"disk {rate_text(disk_read + disk_write)}",
        f"network {rate_text(net)}",
    ]
    if gpu_index is not None:
        idle.append(f"GPU {gpu:.0f} %")
    return Activity(
        busy=False, bound="idle", evidence="idle: " + ", ".join(idle), window_s=round(span, 3)
    )


def _busiest_gpu(recent: Sequence[Snapshot]) -> tuple[int | None, float]:
    """The GPU with the highest mean utilization over the window, and that mean."""
    totals: dict[int, float] = {}
    for snap in recent:
        for gpu in snap.gpus:
            totals[gpu.index] = totals.get(gpu.index, 0.0) + gpu.util_pct
    if not totals:
        return None, 0.0
    index = max(totals, key=lambda i: totals[i])
    return index, totals[index] / len(recent)


def _cpu_words(recent: Sequence[Snapshot], cpu: float) -> str:
    """``1 process at 100 % CPU`` or ``3 processes at 250 % CPU`` (the tree's total)."""
    per_pid: dict[int, float] = {}
    for snap in recent:
        for proc in snap.procs:
            per_pid[proc.pid] = per_pid.get(proc.pid, 0.0) + proc.cpu_pct
    working = [total / len(recent) for total in per_pid.values()]
    working = [pct for pct in working if pct >= _PROC_SHOWN_PCT]
    if len(working) == 1:
        return f"1 process at {working[0]:.0f} % CPU"
    if working:
        return f"{len(working)} processes at {cpu:.0f} % CPU"
    return f"the process tree at {cpu:.0f} % CPU"


def _gpu_words(recent: Sequence[Snapshot], index: int, util: float, floors: Floors) -> str:
    """``GPU 0 at 97 %``, or ``8 GPUs at 95 %`` (their mean) when several are busy."""
    totals: dict[int, float] = {}
    for snap in recent:
        for gpu in snap.gpus:
            totals[gpu.index] = totals.get(gpu.index, 0.0) + gpu.util_pct
    busy = [total / len(recent) for total in totals.values()]
    busy = [pct for pct in busy if pct >= floors.gpu_pct]
    if len(busy) > 1:
        return f"{len(busy)} GPUs at {sum(busy) / len(busy):.0f} %"
    return f"GPU {index} at {util:.0f} %"


def between(snapshots: Sequence[Snapshot], start_s: float, end_s: float) -> list[Snapshot]:
    """The snapshots whose rates cover part of ``start_s``..``end_s``.

    A snapshot's rates cover the interval since the one before it, so the first snapshot
    after ``end_s`` is included too (a phase shorter than one period still gets one).
    """
    inside = [snap for snap in snapshots if start_s < snap.t_s <= end_s]
    after = [snap for snap in snapshots if snap.t_s > end_s]
    if after and (not inside or inside[-1].t_s < end_s):
        inside.append(after[0])
    return inside


def phase_activity(
    snapshots: Sequence[Snapshot], start_s: float, end_s: float, floors: Floors = FLOORS
) -> Activity | None:
    """What the tree did during one phase (``start_s``..``end_s``); None with no sample."""
    covered = between(snapshots, start_s, end_s)
    if not covered:
        return None
    return activity(covered, covered[-1].t_s - covered[0].t_s + 1e-9, floors)
