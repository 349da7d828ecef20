"""The engine's helper processes: SGLang's schedulers and detokenizer, vLLM's engine core
and workers, as real child processes.

A gate must notice when an essential child dies while the HTTP process lives on, and a
stopper must find every descendant, so the simulator has real ones. Each child is a tiny
Python process named after its role (in its command line and its process name); it
waits on a pipe from the parent and exits when the parent goes away, so none outlives it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys

__all__ = ["CHILD_CODE", "Children", "roles_for"]

# The child: take the role's name, ignore Ctrl-C (the parent handles it), wait for the
# parent's pipe to close, exit. "hang" on the pipe: a rank stuck waiting for its peers
# (the simulated hang), still ending when the pipe closes.
CHILD_CODE = """
import os, signal, sys
name = sys.argv[1]
try:
    from servegate._os import set_name
    set_name(name)
except Exception:
    pass
signal.signal(signal.SIGINT, signal.SIG_IGN)


def wait_for_nccl_peers():
    while True:
        try:
            if not os.read(0, 64):
                os._exit(0)
        except InterruptedError:
            continue
        except OSError:
            os._exit(0)


def serve_rank():
    while True:
        try:
            data = os.read(0, 64)
        except InterruptedError:
            continue
        except OSError:
            return
        if not data:
            return
        if b"hang" in data:
            wait_for_nccl_peers()


serve_rank()
os._exit(0)
"""


def roles_for(engine: str, tp: int) -> list[str]:
    """Child roles of ``engine`` with ``tp`` tensor-parallel ranks, in start order."""
    if engine == "sglang":
        return [f"scheduler_TP{rank}" for rank in range(tp)] + ["detokenizer"]
    if engine == "vllm":
        return ["EngineCore_DP0"] + [f"Worker_TP{rank}" for rank in range(tp)]
    return []


def _title(engine: str, role: str) -> str:
    """The process title the engine gives this role (``sglang::scheduler_TP0``)."""
    prefix = "sglang::" if engine == "sglang" else "VLLM::"
    return prefix + role


class Children:
    """The running children, by role."""

    def __init__(self, engine: str, roles: list[str]) -> None:
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        for role in roles:
            self.procs[role] = subprocess.Popen(
                [sys.executable, "-c", CHILD_CODE, _title(engine, role)],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                close_fds=True,
            )

    def pids(self) -> dict[str, int]:
        """Role -> PID."""
        return {role: proc.pid for role, proc in self.procs.items()}

    def kill(self, role: str) -> int | None:
        """SIGKILL one child and reap it; its exit code (-9), or None if unknown."""
        proc = self.procs.get(role)
        if proc is None:
            return None
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGKILL)
        return proc.wait()

    def hang(self) -> None:
        """Put the tensor-parallel ranks in ``wait_for_nccl_peers`` (the simulated hang)."""
        for role, proc in self.procs.items():
            if "_TP" in role and proc.stdin is not None and proc.poll() is None:
                with contextlib.suppress(OSError):
                    proc.stdin.write(b"hang\n")
                    proc.stdin.flush()

    def dead(self) -> list[str]:
        """Roles whose process has exited."""
        return [role for role, proc in self.procs.items() if proc.poll() is not None]

    def stop_all(self) -> None:
        """End every child at once and reap them."""
        for proc in self.procs.values():
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(proc.pid, signal.SIGKILL)
        for proc in self.procs.values():
            with contextlib.suppress(Exception):
                proc.wait(timeout=5)
            if proc.stdin is not None:
                with contextlib.suppress(OSError):
                    proc.stdin.close()
