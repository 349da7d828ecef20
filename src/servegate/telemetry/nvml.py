"""NVML (NVIDIA's management library, through ``pynvml``): the one module that loads it.

    nvml = Nvml.open()              # None: no library, no driver, or no GPU
    if nvml is not None:
        with nvml:
            used, total = nvml.memory(0)

Each reading raises ``NvmlError`` (pynvml's own error) where the driver refuses it; the
caller decides what that means (the sampler reads 0, the campaign's preflight skips its
GPU check). The flight recorder's sampler, the campaign's GPU memory checks and the
start history's GPU model and a point's energy counters (telemetry/energy.py) all read
the GPUs here.
"""

from __future__ import annotations

import contextlib
from types import TracebackType

import pynvml

__all__ = ["Nvml", "NvmlError", "unavailable_reason"]

NvmlError = pynvml.NVMLError


def _init() -> str:
    """Initialise NVML: "" when it answers, else why it cannot be used."""
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as exc:
        return f"NVML is not available ({exc})"
    except OSError as exc:
        return f"NVML could not be loaded ({exc})"
    return ""


def _shutdown() -> None:
    with contextlib.suppress(Exception):
        pynvml.nvmlShutdown()


def unavailable_reason() -> str:
    """Why NVML cannot be used here ("" when it initialises: there may still be no GPU)."""
    reason = _init()
    if not reason:
        _shutdown()
    return reason


class Nvml:
    """An open NVML session over this machine's GPUs, by index."""

    def __init__(self, handles: list[object]) -> None:
        self._handles = handles

    @classmethod
    def open(cls) -> Nvml | None:
        """A session, or None where there is no library, no driver or no GPU."""
        if _init():
            return None
        try:
            count = int(pynvml.nvmlDeviceGetCount())
            handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
        except pynvml.NVMLError:
            handles = []
        if not handles:
            _shutdown()
            return None
        return cls(handles)

    def __enter__(self) -> Nvml:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """End the session."""
        _shutdown()

    @property
    def count(self) -> int:
        """How many GPUs the session sees (at least one)."""
        return len(self._handles)

    def name(self, index: int) -> str:
        """The GPU's model name (``NVIDIA H200``)."""
        name = pynvml.nvmlDeviceGetName(self._handles[index])
        return name.decode() if isinstance(name, bytes) else str(name)

    def memory(self, index: int) -> tuple[int, int]:
        """The GPU's used and total memory, in bytes."""
        info = pynvml.nvmlDeviceGetMemoryInfo(self._handles[index])
        return int(info.used), int(info.total)

    def utilization_pct(self, index: int) -> float:
        """The GPU's utilization over the driver's last sample period, in percent."""
        return float(pynvml.nvmlDeviceGetUtilizationRates(self._handles[index]).gpu)

    def power_w(self, index: int) -> float:
        """The GPU's power draw, in watts."""
        return float(pynvml.nvmlDeviceGetPowerUsage(self._handles[index])) / 1000.0

    def energy_mj(self, index: int) -> int:
        """The GPU's energy counter: millijoules since the driver was loaded (Volta on)."""
        return int(pynvml.nvmlDeviceGetTotalEnergyConsumption(self._handles[index]))

    def mig(self, index: int) -> bool:
        """Whether the GPU is in MIG mode (split into instances); False where unsupported."""
        try:
            current, _pending = pynvml.nvmlDeviceGetMigMode(self._handles[index])
        except pynvml.NVMLError:
            return False
        return bool(current == pynvml.NVML_DEVICE_MIG_ENABLE)

    def uuid(self, index: int) -> str:
        """The GPU's UUID (``GPU-8c1b...``), as ``CUDA_VISIBLE_DEVICES`` may name it."""
        value = pynvml.nvmlDeviceGetUUID(self._handles[index])
        return value.decode() if isinstance(value, bytes) else str(value)

    def processes(self, index: int) -> list[tuple[int, int | None]]:
        """``(PID, GPU memory in bytes or None)`` of the compute then the graphics
        processes on the GPU; a list the driver refuses is left out."""
        handle = self._handles[index]
        found: list[tuple[int, int | None]] = []
        for query in (
            pynvml.nvmlDeviceGetComputeRunningProcesses,
            pynvml.nvmlDeviceGetGraphicsRunningProcesses,
        ):
            try:
                procs = query(handle)
            except pynvml.NVMLError:
                continue
            for proc in procs:
                memory = proc.usedGpuMemory
                found.append((int(proc.pid), memory if isinstance(memory, int) else None))
        return found
