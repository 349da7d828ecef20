"""GPU memory through NVML: the idle level, and waiting until a stopped server released it.

An orphaned worker that still holds 80 GB makes the next variant fail its KV-cache check
or run out of memory, which the campaign would then blame on the variant. So the runner
records each GPU's memory before the first start and, after every stop, waits until the
memory is back to that level. On a machine without an NVIDIA driver every function here
answers "no GPU" (``GpuMonitor.open()`` returns None) and never raises.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType

from servegate.telemetry.nvml import Nvml, NvmlError, unavailable_reason

__all__ = [
    "GpuMemory",
    "GpuMonitor",
    "ReleaseResult",
    "nvml_unavailable_reason",
    "over_idle",
    "tolerance_bytes",
    "wait_released",
]

MIB = 1024 * 1024
# memory above the idle level that still counts as released: allocator slack, the
# driver's own bookkeeping, another user's small process
DEFAULT_TOLERANCE_BYTES = 512 * MIB
DEFAULT_TOLERANCE_FRACTION = 0.01


@dataclass(frozen=True, slots=True, kw_only=True)
class GpuMemory:
    """The memory of one GPU at one moment."""

    index: int
    name: str
    used_bytes: int
    total_bytes: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ReleaseResult:
    """Whether every GPU came back to its idle level, and what still held memory if not."""

    released: bool
    waited_s: float
    over: tuple[tuple[int, int], ...]  # (GPU index, bytes above its idle level)
    holders: tuple[int, ...]  # PIDs NVML lists as using a GPU

    def describe(self) -> str:
        """One sentence for the progress log and the store."""
        if self.released:
            return f"GPU memory back to its idle level after {self.waited_s:.1f}s"
        parts = ", ".join(f"GPU {i}: +{b / MIB:.0f} MiB" for i, b in self.over)
        who = f" (held by PIDs {', '.join(map(str, self.holders))})" if self.holders else ""
        return (
            f"GPU memory still above its idle level after {self.waited_s:.1f}s: {parts}{who}; "
            "stop the process that holds it before the next start"
        )


def nvml_unavailable_reason() -> str | None:
    """None when NVML answers on this machine, else why not (for a preflight note)."""
    monitor = GpuMonitor.open()
    if monitor is None:
        return unavailable_reason() or "no NVIDIA GPU found"
    monitor.close()
    return None


class GpuMonitor:
    """An open NVML session: read each GPU's memory and the processes using them."""

    def __init__(self, nvml: Nvml) -> None:
        self._nvml = nvml

    @classmethod
    def open(cls) -> GpuMonitor | None:
        """A monitor, or None where there is no driver, no library or no GPU."""
        nvml = Nvml.open()
        return None if nvml is None else cls(nvml)

    def __enter__(self) -> GpuMonitor:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """End the NVML session."""
        self._nvml.close()

    def memory(self) -> tuple[GpuMemory, ...]:
        """Every GPU's used and total memory now (``NvmlError`` where NVML fails)."""
        nvml = self._nvml
        out = []
        for index in range(nvml.count):
            used, total = nvml.memory(index)
            name = nvml.name(index)
            out.append(GpuMemory(index=index, name=name, used_bytes=used, total_bytes=total))
        return tuple(out)

    def idle_memory(self) -> tuple[GpuMemory, ...]:
        """``memory()``, or () when NVML fails (the GPU checks are then skipped)."""
        try:
            return self.memory()
        except NvmlError:
            return ()

    def holders(self) -> tuple[int, ...]:
        """PIDs that NVML lists as running compute or graphics work on any GPU."""
        pids = {pid for index in range(self._nvml.count) for pid, _ in self._nvml.processes(index)}
        return tuple(sorted(pids))


def tolerance_bytes(gpu: GpuMemory) -> int:
    """How far above its idle level a GPU's used memory may be and still count as free."""
    return max(DEFAULT_TOLERANCE_BYTES, int(gpu.total_bytes * DEFAULT_TOLERANCE_FRACTION))


def over_idle(
    idle: tuple[GpuMemory, ...], now: tuple[GpuMemory, ...]
) -> tuple[tuple[int, int], ...]:
    """(index, bytes above idle) for each GPU whose memory is above its idle level."""
    base = {gpu.index: gpu for gpu in idle}
    out = []
    for gpu in now:
        ref = base.get(gpu.index)
        if ref is None:
            continue
        extra = gpu.used_bytes - ref.used_bytes
        if extra > tolerance_bytes(ref):
            out.append((gpu.index, extra))
    return tuple(out)


def wait_released(
    idle: tuple[GpuMemory, ...],
    read: Callable[[], tuple[GpuMemory, ...]],
    *,
    timeout_s: float,
    holders: Callable[[], tuple[int, ...]] = tuple,
    poll_s: float = 0.25,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> ReleaseResult:
    """Poll ``read`` until every GPU is back to its ``idle`` level or ``timeout_s`` passes.

    Memory is freed by the driver a moment after the last process that held it exits,
    so a single reading right after a stop is not enough.
    """
    start = clock()
    while True:
        over = over_idle(idle, read())
        waited = clock() - start
        if not over:
            return ReleaseResult(released=True, waited_s=waited, over=(), holders=())
        if waited >= timeout_s:
            return ReleaseResult(released=False, waited_s=waited, over=over, holders=holders())
        sleep(min(poll_s, max(0.0, timeout_s - waited)))
