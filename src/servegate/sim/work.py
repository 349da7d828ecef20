"""Real work during a silent startup phase (``--work PHASE=KIND``), for the gate to see.

A real engine is often quiet for minutes while it works: a FlashInfer or Triton JIT
compile burns CPU in a compiler process, a model download fills the disk. The
simulator does the same for real, in a child process named after the job, so that
telemetry (CPU of the tree, /proc/PID/io) sees what it would see on a real server:

- ``cpu``: one process (``jit-compile``) burns one core in ``compile_kernels``;
- ``disk``: one process (``download``) writes a 32 MiB scratch file, then reads it
  again and again with the page cache dropped first (``posix_fadvise DONTNEED``), so
  every read comes from the disk, in ``download_weights``; the file is removed after.

The child ends at its deadline, and with the simulator (``PR_SET_PDEATHSIG``).
"""

from __future__ import annotations

import asyncio
import contextlib
import sys

__all__ = ["WORK_CODE", "WORK_KINDS", "Work"]

WORK_KINDS = ("cpu", "disk")

WORK_CODE = """
import os, signal, sys, tempfile, time
kind, seconds = sys.argv[1], float(sys.argv[2])
name = {"cpu": "jit-compile", "disk": "download"}[kind]
try:
    from servegate._os import die_with_parent, set_name
    die_with_parent(signal.SIGKILL)  # die with the simulator
    set_name(name)
except Exception:
    pass
if os.getppid() == 1:
    sys.exit(0)
deadline = time.monotonic() + seconds


def compile_kernels():
    x = 0
    while time.monotonic() < deadline:
        for i in range(20000):
            x += i * i


def download_weights():
    fd, path = tempfile.mkstemp(prefix="servegate-sim-", suffix=".safetensors")
    try:
        os.unlink(path)  # gone with the descriptor, whatever happens
        block = os.urandom(1 << 20)
        for _ in range(32):
            if time.monotonic() >= deadline:
                break
            os.write(fd, block)
        os.fsync(fd)
        while time.monotonic() < deadline:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            os.lseek(fd, 0, os.SEEK_SET)
            while time.monotonic() < deadline and os.read(fd, 1 << 20):
                pass
    finally:
        os.close(fd)


compile_kernels() if kind == "cpu" else download_weights()
"""


class Work:
    """One work child for one phase."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc

    @classmethod
    async def start(cls, kind: str, seconds: float) -> Work:
        """Start ``kind`` work for ``seconds``."""
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            WORK_CODE,
            kind,
            f"{seconds:.3f}",
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
        )
        return cls(proc)

    async def stop(self) -> None:
        """End it now (at the phase's end it is about to end by itself) and reap it."""
        if self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()
        with contextlib.suppress(Exception):
            await self.proc.wait()

    def kill(self) -> None:
        """End it without waiting (teardown outside the loop)."""
        if self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()
