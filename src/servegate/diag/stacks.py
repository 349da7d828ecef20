"""Stack dumps as values: each process's threads and frames, and what most of them do.

A :class:`Stacks` is what ``servegate dump`` prints and what a TIMEOUT verdict keeps in
``diagnosis.stacks``. Frames are innermost first. No local variables and no command
lines are kept (they may hold secrets): a process is named by its process name.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["Frame", "ProcessStack", "Stacks", "ThreadStack", "is_stdlib", "summarise"]

# the interpreter's own library: /usr/lib/python3.11/threading.py, <frozen runpy>; not
# site-packages, where the engines live
_STDLIB = re.compile(r"(/lib/python\d[\d.]*/(?!.*(site|dist)-packages/))|^<frozen ")


def is_stdlib(path: str) -> bool:
    """True for a frame of Python's standard library (``threading.py``, ``selectors.py``)."""
    return bool(_STDLIB.search(path))


@dataclass(frozen=True, slots=True, kw_only=True)
class Frame:
    """One Python frame."""

    function: str
    file: str
    line: int

    def text(self) -> str:
        """``wait_for_nccl_peers (servegate/sim/lifecycle.py:52)``."""
        return f"{self.function} ({self.file}:{self.line})"

    def to_json(self) -> dict[str, Any]:
        """The frame as a JSON object."""
        return {"function": self.function, "file": self.file, "line": self.line}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Frame:
        """Rebuild from ``to_json()``."""
        return cls(function=data["function"], file=data["file"], line=int(data["line"]))


@dataclass(frozen=True, slots=True, kw_only=True)
class ThreadStack:
    """One thread of a Python process: its frames, innermost first."""

    thread_id: int
    name: str | None
    active: bool  # on a CPU when the dump was taken
    frames: tuple[Frame, ...]

    def project_frame(self) -> Frame | None:
        """The innermost frame outside the standard library (else the innermost)."""
        for frame in self.frames:
            if not is_stdlib(frame.file):
                return frame
        return self.frames[0] if self.frames else None

    def to_json(self) -> dict[str, Any]:
        """The thread as a JSON object."""
        return {
            "thread_id": self.thread_id,
            "name": self.name,
            "active": self.active,
            "frames": [frame.to_json() for frame in self.frames],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ThreadStack:
        """Rebuild from ``to_json()``."""
        return cls(
            thread_id=int(data["thread_id"]),
            name=data["name"],
            active=bool(data["active"]),
            frames=tuple(Frame.from_json(f) for f in data["frames"]),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class ProcessStack:
    """One process of the tree: Python threads (py-spy), or its kernel state (/proc)."""

    pid: int
    name: str
    python: bool
    state: str  # R running, S sleeping, D disk wait, Z zombie, ...
    wchan: str | None  # the kernel function it sleeps in
    kernel: tuple[str, ...] = ()  # /proc/PID/stack, where readable
    threads: tuple[ThreadStack, ...] = ()
    error: str | None = None  # why the Python stacks are missing

    def main_thread(self) -> ThreadStack | None:
        """The thread that says what the process does: an active one, else MainThread."""
        with_frames = [t for t in self.threads if t.frames]
        for thread in with_frames:
            if thread.active:
                return thread
        for thread in with_frames:
            if thread.name == "MainThread":
                return thread
        return with_frames[0] if with_frames else None

    def where(self) -> str:
        """What it is in: a Python function, else its kernel wait channel or state."""
        thread = self.main_thread()
        frame = thread.project_frame() if thread is not None else None
        if frame is not None:
            return frame.function
        if self.wchan:
            return self.wchan
        return f"state {self.state}"

    def to_json(self) -> dict[str, Any]:
        """The process as a JSON object."""
        return {
            "pid": self.pid,
            "name": self.name,
            "python": self.python,
            "state": self.state,
            "wchan": self.wchan,
            "kernel": list(self.kernel),
            "threads": [thread.to_json() for thread in self.threads],
            "error": self.error,
            "where": self.where(),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ProcessStack:
        """Rebuild from ``to_json()``."""
        return cls(
            pid=int(data["pid"]),
            name=data["name"],
            python=bool(data["python"]),
            state=data["state"],
            wchan=data["wchan"],
            kernel=tuple(data["kernel"]),
            threads=tuple(ThreadStack.from_json(t) for t in data["threads"]),
            error=data["error"],
        )

    def lines(self) -> list[str]:
        """The process as text: a header, then each thread's frames, or its kernel stack."""
        kind = "python" if self.python else "native"
        head = f"process {self.pid} {self.name} ({kind}, state {self.state}"
        head += f", in {self.wchan})" if self.wchan else ")"
        out = [head]
        if self.error:
            out.append(f"    ({self.error})")
        for thread in self.threads:
            label = "active" if thread.active else "idle"
            out.append(f"  thread {thread.thread_id} ({label}): {thread.name or ''}".rstrip())
            out.extend(f"    {frame.text()}" for frame in thread.frames)
        if not self.threads and self.kernel:
            out.append("  kernel stack:")
            out.extend(f"    {line}" for line in self.kernel)
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class Stacks:
    """The stacks of a whole process tree and their summary."""

    processes: tuple[ProcessStack, ...]
    summary: str  # "12 of 16 processes in ncclCommInitRank"
    top: str | None  # the most common place, e.g. "ncclCommInitRank"
    top_frame: str | None  # its first frame in full, e.g. "ncclCommInitRank (x.py:12)"
    note: str | None = None  # what kept the dump short: py-spy missing, no permission

    def to_json(self) -> dict[str, Any]:
        """The stacks as a JSON object."""
        return {
            "summary": self.summary,
            "top": self.top,
            "top_frame": self.top_frame,
            "note": self.note,
            "processes": [proc.to_json() for proc in self.processes],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> Stacks | None:
        """Rebuild from ``to_json()``; None stays None."""
        if data is None:
            return None
        return cls(
            processes=tuple(ProcessStack.from_json(p) for p in data["processes"]),
            summary=data["summary"],
            top=data["top"],
            top_frame=data["top_frame"],
            note=data["note"],
        )

    def lines(self) -> list[str]:
        """The summary, the note, then every process."""
        out = [self.summary]
        if self.note:
            out.append(self.note)
        for proc in self.processes:
            out.extend(proc.lines())
        return out


def summarise(processes: Sequence[ProcessStack], note: str | None = None) -> Stacks:
    """Stacks with their summary: the most common place the processes are in.

    Python processes count where their chosen thread's innermost project frame is;
    others their kernel wait channel. Ties go to the place seen first.
    """
    if not processes:
        return Stacks(processes=(), summary="no process to dump", top=None, top_frame=None)
    places = Counter(proc.where() for proc in processes)
    top, count = places.most_common(1)[0]
    total = len(processes)
    noun = "process" if total == 1 else "processes"
    top_frame = None
    for proc in processes:
        thread = proc.main_thread()
        frame = thread.project_frame() if thread is not None else None
        if frame is not None and frame.function == top:
            top_frame = frame.text()
            break
    return Stacks(
        processes=tuple(processes),
        summary=f"{count} of {total} {noun} in {top}",
        top=top,
        top_frame=top_frame,
        note=note,
    )
