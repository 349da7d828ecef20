"""What the user sees while a server starts: the phase, its progress, elapsed, ETA.

A thread follows the server's log file with the engine's rules (the same phases and
progress the gate sees) and writes to stderr: on a terminal one status line redrawn in
place (``load_weights 2/4 shards | 12.3s | ETA 41s | CPU 98% | RSS 1.2G | GPU 3.4G``,
the resources from the sampler's newest snapshot, GPU memory where there is a GPU);
off a terminal one line per phase change (``phase load_weights at 3.2s; ETA 41s``).
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from typing import TextIO

from servegate.engines import get_profile
from servegate.gate.verdict import PhaseProgress
from servegate.gate.watch import LogWatcher, Rules
from servegate.startup.eta import Eta
from servegate.telemetry.model import Snapshot

__all__ = ["StatusLine", "describe_progress", "describe_resources"]

_PERIOD_S = 0.5
_READ = 1 << 20


def describe_progress(progress: PhaseProgress | None) -> str:
    """``2/4 shards``, ``1.2G/4.9G bytes``, ``3 JIT ops``; empty without progress."""
    if progress is None:
        return ""

    def show(value: float) -> str:
        if progress.unit == "bytes":
            for scale, suffix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
                if value >= scale:
                    return f"{value / scale:.1f}{suffix}"
        return f"{value:.0f}"

    if progress.total is None:
        return f"{show(progress.done)} {progress.unit}"
    return f"{show(progress.done)}/{show(progress.total)} {progress.unit}"


def _bytes(value: float) -> str:
    for scale, suffix in ((2**40, "T"), (2**30, "G"), (2**20, "M"), (2**10, "k")):
        if value >= scale:
            return f"{value / scale:.1f}{suffix}"
    return f"{value:.0f}"


def describe_resources(snapshot: Snapshot | None) -> list[str]:
    """``['CPU 98%', 'RSS 1.2G', 'GPU 3.4G']``: the tree's CPU and RSS, and the GPUs'
    memory in use where there are GPUs; empty without a snapshot."""
    if snapshot is None:
        return []
    parts = [f"CPU {snapshot.cpu_pct:.0f}%", f"RSS {_bytes(snapshot.rss_bytes)}"]
    if snapshot.gpus:
        parts.append(f"GPU {_bytes(sum(g.mem_used_bytes for g in snapshot.gpus))}")
    return parts


class StatusLine:
    """Follow a start's log and show where it is, until ``stop()``."""

    def __init__(
        self,
        *,
        engine: str,
        eta: Eta | None,
        stream: TextIO | None = None,
        live: bool | None = None,
    ) -> None:
        self.stream = stream or sys.stderr
        self.live = self.stream.isatty() if live is None else live
        self.eta = eta
        self._watcher = LogWatcher(Rules(get_profile(engine)), tail_lines=1)
        self._log: str | None = None
        self._started_wall = time.time()
        self._offset = 0
        self._stop = threading.Event()
        self._lock = threading.Lock()  # a write and stop() never interleave
        self._thread: threading.Thread | None = None
        self._shown_count = 0  # phases already announced (off a terminal)
        self._drawn = False
        self._resources: Snapshot | None = None
        self.lines: list[str] = []  # every line written (off a terminal)

    def follow(self, log_path: str | None, started_wall: float) -> None:
        """Start following ``log_path`` (None: elapsed and ETA only) from ``started_wall``."""
        self._log = log_path
        self._started_wall = started_wall
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="servegate-status", daemon=True)
            self._thread.start()

    def resources(self, snapshot: Snapshot) -> None:
        """The sampler's newest snapshot: its CPU, RSS and GPU memory join the line."""
        self._resources = snapshot

    def stop(self) -> None:
        """Stop following and clear the status line: nothing is written once this returns.

        The thread is not waited for (a verdict printed next must not wait for a read of
        the log, nor for a busy machine to schedule that thread); it ends at its next look
        at the stop event, and writes nothing more.
        """
        with self._lock:
            self._stop.set()
            self._thread = None
            if self._drawn:
                with contextlib.suppress(OSError, ValueError):
                    self.stream.write("\r\x1b[K")
                    self.stream.flush()
                self._drawn = False

    def _run(self) -> None:
        while not self._stop.is_set():
            self._read()
            self._show()
            self._stop.wait(_PERIOD_S)

    def _read(self) -> None:
        if self._log is None:
            return
        try:
            with open(self._log, "rb") as log:
                size = os.fstat(log.fileno()).st_size
                if size < self._offset:  # truncated: a fresh log
                    self._offset = 0
                    self._watcher.reset()
                log.seek(self._offset)
                while True:
                    data = log.read(_READ)
                    if not data:
                        break
                    self._offset += len(data)
                    self._watcher.feed(data, self._elapsed())
        except OSError:
            return
        self._watcher.peek(self._elapsed())

    def _elapsed(self) -> float:
        return max(0.0, time.time() - self._started_wall)

    def _show(self) -> None:
        elapsed = self._elapsed()
        phases = self._watcher.phases
        current = phases.current()
        name = current.name if current is not None else None
        in_phase = elapsed - current.start_s if current is not None else 0.0
        eta = ""
        if self.eta is not None:
            left = self.eta.remaining(elapsed, name, in_phase)
            eta = f"ETA {left:.0f}s" if left > 0 else "ETA overdue"
        if self.live:
            parts = [name or "starting"]
            progress = describe_progress(current.progress if current is not None else None)
            if progress:
                parts.append(progress)
            parts.append(f"{elapsed:.1f}s")
            if eta:
                parts.append(eta)
            parts.extend(describe_resources(self._resources))
            if self._write("\r\x1b[K" + " | ".join(parts)):
                self._drawn = True
        else:
            spans = phases.spans()
            for span in spans[self._shown_count :]:
                text = f"phase {span.name} at {span.start_s:.1f}s"
                if eta:
                    text += f"; {eta}"
                if not self._write(text + "\n"):
                    return  # stopped: no phase line after the verdict
                self.lines.append(text)
            self._shown_count = len(spans)

    def _write(self, text: str) -> bool:
        """Write ``text`` unless stopped; whether it was written."""
        with self._lock, contextlib.suppress(OSError, ValueError):
            if self._stop.is_set():
                return False
            self.stream.write(text)
            self.stream.flush()
            return True
        return False
