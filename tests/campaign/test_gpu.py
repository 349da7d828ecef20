"""GPU memory via NVML: no crash without a GPU, the release wait, a real GPU when present."""

from __future__ import annotations

import ctypes.util
import subprocess
import sys
import textwrap

import pytest

from servegate.campaign.gpu import (
    MIB,
    GpuMemory,
    GpuMonitor,
    nvml_unavailable_reason,
    over_idle,
    wait_released,
)
from servegate.campaign.preflight import run_preflight

HAS_GPU = GpuMonitor.open() is not None
GIB = 1024 * MIB


def gpu(used_mib: int, total_mib: int = 80 * 1024, index: int = 0) -> GpuMemory:
    return GpuMemory(
        index=index, name="GPU", used_bytes=used_mib * MIB, total_bytes=total_mib * MIB
    )


class FakeClock:
    """A clock that advances only when slept on."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


@pytest.mark.skipif(HAS_GPU, reason="this machine has an NVIDIA GPU")
def test_no_gpu_means_none_and_a_reason_never_an_exception() -> None:
    """Without a driver, open() returns None and the reason names NVML."""
    assert GpuMonitor.open() is None
    reason = nvml_unavailable_reason()
    assert reason is not None
    assert "NVML" in reason or "GPU" in reason


def test_over_idle_ignores_memory_within_the_tolerance() -> None:
    """Up to 512 MiB (or 1 % of the GPU) above idle counts as released; more does not."""
    idle = (gpu(1000), gpu(1000, index=1))
    assert over_idle(idle, (gpu(1400), gpu(1000, index=1))) == ()
    assert over_idle(idle, (gpu(1000), gpu(3000, index=1))) == ((1, 2000 * MIB),)


def test_wait_released_returns_when_memory_drops() -> None:
    """The wait ends at the first reading back at the idle level."""
    clock = FakeClock()
    readings = iter([(gpu(40000),), (gpu(20000),), (gpu(1200),)])
    result = wait_released(
        (gpu(1000),), lambda: next(readings), timeout_s=10, clock=clock, sleep=clock.sleep
    )
    assert result.released
    assert result.waited_s == pytest.approx(0.5)
    assert "back to its idle level" in result.describe()


def test_wait_released_gives_up_with_the_excess_and_holders() -> None:
    """Past the timeout the result says which GPU holds how much, and which PIDs."""
    clock = FakeClock()
    result = wait_released(
        (gpu(1000),),
        lambda: (gpu(9000),),
        timeout_s=2,
        holders=lambda: (4242,),
        clock=clock,
        sleep=clock.sleep,
    )
    assert not result.released
    assert result.over == ((0, 8000 * MIB),)
    assert result.waited_s == pytest.approx(2.0)
    assert "GPU 0: +8000 MiB (held by PIDs 4242)" in result.describe()


ALLOCATE = textwrap.dedent(
    """
    import ctypes, sys, time
    cuda = ctypes.CDLL(sys.argv[1])
    assert cuda.cuInit(0) == 0
    dev = ctypes.c_int(); assert cuda.cuDeviceGet(ctypes.byref(dev), 0) == 0
    ctx = ctypes.c_void_p()
    assert cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) == 0
    assert cuda.cuCtxSetCurrent(ctx) == 0
    ptr = ctypes.c_uint64()
    assert cuda.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(int(sys.argv[2]))) == 0
    print("allocated", flush=True)
    time.sleep(60)
    """
)


@pytest.mark.skipif(not HAS_GPU, reason="needs an NVIDIA GPU and driver")
def test_real_gpu_memory_rises_with_an_allocation_and_is_released_after_kill() -> None:
    """On a real GPU: 4 GiB held fails preflight; once its process dies, memory is released."""
    libcuda = ctypes.util.find_library("cuda") or "libcuda.so.1"
    monitor = GpuMonitor.open()
    assert monitor is not None
    with monitor:
        idle = monitor.memory()
        assert idle[0].total_bytes > 1 * GIB
        proc = subprocess.Popen(
            [sys.executable, "-c", ALLOCATE, libcuda, str(4 * GIB)],
            stdout=subprocess.PIPE,
            text=True,
        )
        with proc:
            try:
                assert proc.stdout is not None and proc.stdout.readline().strip() == "allocated"
                over = over_idle(idle, monitor.memory())
                assert over and over[0][1] >= 4 * GIB
                held = wait_released(idle, monitor.memory, timeout_s=0.5, holders=monitor.holders)
                assert not held.released
                report = run_preflight(port=None, gpu=monitor, gpu_idle=idle, timeout_s=0.5)
                assert not report.ok
                assert "GPU memory still above its idle level" in report.reason()
            finally:
                proc.kill()
        released = wait_released(idle, monitor.memory, timeout_s=30, holders=monitor.holders)
        assert released.released, released.describe()
        assert run_preflight(port=None, gpu=monitor, gpu_idle=idle, timeout_s=5).ok
