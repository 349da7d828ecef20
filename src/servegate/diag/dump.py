"""Take the stacks of a process tree: py-spy for Python processes, /proc for the rest.

``dump_tree(pid)`` lists the process and every descendant, runs ``py-spy dump --json``
on each Python one (in parallel, each for at most ``timeout_s``), reads the state and
the kernel wait channel of every one from ``/proc`` (and ``/proc/PID/stack`` where it
is readable: root), and summarises. Nothing here raises for a process that went away
or a dump that failed: the reason is kept with the process, and what stopped every
dump (py-spy missing, no ptrace permission) becomes the note.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import psutil

from servegate.diag.stacks import Frame, ProcessStack, Stacks, ThreadStack, summarise

__all__ = ["INSTALL_HINT", "PTRACE_HINT", "dump_pids", "dump_tree", "is_python", "py_spy"]

INSTALL_HINT = (
    "py-spy is not installed, so Python stacks are missing: pip install 'servegate[diag]'"
)
PTRACE_HINT = (
    "py-spy was not allowed to read the processes (ptrace): run as the server's user with "
    "/proc/sys/kernel/yama/ptrace_scope at 0, or as root, or add --cap-add SYS_PTRACE to "
    "the container"
)
_PYTHON = re.compile(r"^(python|pypy)[\d.]*$")
_DENIED = ("permission denied", "operation not permitted", "eperm", "eacces")
_PARALLEL = 8


def py_spy() -> str | None:
    """The py-spy executable: on PATH, or next to this Python (a venv not activated)."""
    found = shutil.which("py-spy")
    if found:
        return found
    beside = os.path.join(os.path.dirname(sys.executable), "py-spy")
    return beside if os.access(beside, os.X_OK) else None


def is_python(proc: psutil.Process) -> bool:
    """True when the process's executable, or its command's first word, is a Python."""
    names = []
    with contextlib.suppress(psutil.Error, OSError):
        names.append(os.path.basename(proc.exe()))
    try:
        cmd = proc.cmdline()
        if cmd:
            names.append(os.path.basename(cmd[0]))
    except (psutil.Error, OSError):
        pass
    return any(_PYTHON.match(name) for name in names)


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except OSError:
        return None


def _kernel(pid: int) -> tuple[str | None, tuple[str, ...]]:
    """The wait channel (None when running) and the kernel stack, where readable."""
    wchan = _read(f"/proc/{pid}/wchan")
    wchan = wchan.strip() if wchan and wchan.strip() not in ("", "0") else None
    stack = _read(f"/proc/{pid}/stack") or ""
    frames = []
    for line in stack.splitlines():
        # "[<0>] do_wait+0x53/0x120": keep the function
        text = line.split("]", 1)[-1].strip()
        if text:
            frames.append(text.split("+", 1)[0])
    return wchan, tuple(frames)


def _spy(exe: str, pid: int, timeout_s: float) -> tuple[tuple[ThreadStack, ...], str | None]:
    """The threads of one Python process, or why there are none."""
    try:
        done = subprocess.run(
            [exe, "dump", "--pid", str(pid), "--json"],
            capture_output=True,
            # py-spy prints the target's file and function names as they are: not UTF-8
            # for a file whose name is not (a Latin-1 path), or garbage from a torn read
            encoding="utf-8",
            errors="replace",
            timeout=timeout_s,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return (), f"py-spy took more than {timeout_s:.0f} s"
    except OSError as exc:
        return (), f"py-spy could not run: {exc.strerror or exc}"
    if done.returncode != 0:
        first = (done.stderr.strip().splitlines() or ["py-spy failed"])[0]
        return (), first.removeprefix("Error: ")[:200]
    try:
        raw = json.loads(done.stdout)
        return _threads(raw), None
    except (ValueError, TypeError, AttributeError):  # not JSON, or not py-spy's shape
        return (), "py-spy printed no stacks servegate can read"


def _threads(raw: Any) -> tuple[ThreadStack, ...]:
    """py-spy's ``dump --json`` list of threads, as ThreadStacks (TypeError: another shape)."""
    threads = []
    for item in raw:
        frames = tuple(
            Frame(
                function=str(f.get("name", "?")),
                file=str(f.get("filename") or f.get("short_filename") or "?"),
                line=int(f.get("line") or 0),
            )
            for f in item.get("frames", [])
        )
        threads.append(
            ThreadStack(
                thread_id=int(item.get("os_thread_id") or item.get("thread_id") or 0),
                name=item.get("thread_name"),
                active=bool(item.get("active")),
                frames=frames,
            )
        )
    return tuple(threads)


def _one(proc: psutil.Process, exe: str | None, timeout_s: float) -> ProcessStack | None:
    try:
        name = proc.name()
        state = _STATE.get(proc.status(), proc.status())
    except psutil.Error:
        return None  # gone
    python = is_python(proc)
    wchan, kernel = _kernel(proc.pid)
    threads: tuple[ThreadStack, ...] = ()
    error = None
    if python and exe is not None:
        threads, error = _spy(exe, proc.pid, timeout_s)
    elif python:
        error = "py-spy is not installed"
    return ProcessStack(
        pid=proc.pid,
        name=name,
        python=python,
        state=state,
        wchan=wchan,
        kernel=kernel,
        threads=threads,
        error=error,
    )


_STATE = {
    psutil.STATUS_RUNNING: "R",
    psutil.STATUS_SLEEPING: "S",
    psutil.STATUS_DISK_SLEEP: "D",
    psutil.STATUS_STOPPED: "T",
    psutil.STATUS_TRACING_STOP: "t",
    psutil.STATUS_ZOMBIE: "Z",
    psutil.STATUS_DEAD: "X",
    psutil.STATUS_IDLE: "I",
}


def dump_pids(pids: Iterable[int], *, timeout_s: float = 10.0) -> Stacks:
    """The stacks of these processes (those gone are left out), summarised."""
    procs = []
    for pid in dict.fromkeys(pids):
        try:
            procs.append(psutil.Process(pid))
        except psutil.Error:
            continue
    exe = py_spy()
    with ThreadPoolExecutor(max_workers=_PARALLEL) as pool:
        found = list(pool.map(lambda p: _one(p, exe, timeout_s), procs))
    stacks = [s for s in found if s is not None]
    note = None
    python = [s for s in stacks if s.python]
    if python and exe is None:
        note = INSTALL_HINT
    elif python and all(s.error and _denied(s.error) for s in python):
        note = PTRACE_HINT
    return summarise(stacks, note)


def _denied(error: str) -> bool:
    lowered = error.lower()
    return any(word in lowered for word in _DENIED)


def dump_tree(pid: int, *, extra: Iterable[int] = (), timeout_s: float = 10.0) -> Stacks:
    """The stacks of ``pid`` and all its descendants (and ``extra`` processes)."""
    pids = [pid]
    with contextlib.suppress(psutil.Error):
        pids += [child.pid for child in psutil.Process(pid).children(recursive=True)]
    return dump_pids([*pids, *extra], timeout_s=timeout_s)
