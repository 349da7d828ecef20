"""The node protocol: a start executed in another process, its events sent as frames.

A start that runs elsewhere (a Ray task's child on a cluster node, or the job the
remote agent runs on an SSH host) is given its ``NodeJob`` as one frame on stdin and
executed by the same ``StartExecutor`` as a local start; its sink (``NodeSink``) writes
each event (campaign/events.py) as one frame, a line of JSON in the one codec
(``servegate.remote.codec``). The driver decodes each line against ``FRAMES`` and hands
it to the runner's ``Recorder`` with the attempt ids translated, so that the driver
stays the only writer of the store.

    sink = NodeSink(pipe.write)          # on the node
    frame = decode(line, FRAMES)         # on the driver: Opened, End or an event

The node's process is this module: ``python -m servegate.campaign.node FD [PARENT]``
(``main``), started by a Ray task (campaign/cluster.py) and by the remote agent.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import tempfile
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

from servegate._os import die_with_parent
from servegate.campaign.config import Campaign
from servegate.campaign.events import (
    AttemptClosed,
    AttemptOpened,
    BenchTimed,
    CapacityFound,
    Event,
    GroupDead,
    Placement,
    PointMeasured,
    Said,
    ServerStopped,
    StartTimed,
    Tone,
    VariantBroken,
    VariantsFailed,
    VerdictReached,
)
from servegate.campaign.execute import StartExecutor, StartSpec
from servegate.campaign.gpu import GpuMonitor
from servegate.campaign.interrupt import Interrupted, Interrupts
from servegate.remote.codec import FrameError, decode, encode, kinds

__all__ = [
    "FRAMES",
    "JOB",
    "End",
    "FrameError",
    "NodeJob",
    "NodeSink",
    "Opened",
    "decode",
    "encode",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeJob:
    """What a node is given to execute: one start of a campaign."""

    campaign: Campaign
    spec: StartSpec
    log_dir: str  # the driver's log folder (the node falls back to its own)
    placement: Placement


@dataclass(frozen=True, slots=True, kw_only=True)
class Opened:
    """An attempt opened on the node, under the node's own id ``local`` (1, 2, ...)."""

    local: int
    details: AttemptOpened  # not 'event': the codec's key for the frame's name


@dataclass(frozen=True, slots=True, kw_only=True)
class End:
    """The start's process on the node ended with exit status ``code``."""

    code: int


FRAMES = kinds(
    Opened,
    End,
    VerdictReached,
    PointMeasured,
    CapacityFound,
    ServerStopped,
    AttemptClosed,
    VariantsFailed,
    GroupDead,
    VariantBroken,
    StartTimed,
    BenchTimed,
    Said,
)
JOB = kinds(NodeJob)


class NodeSink:
    """A node's sink: every event one frame, written with ``write`` (a pipe's)."""

    def __init__(self, write: Callable[[bytes], object]) -> None:
        self._write = write
        self._next = 0

    def open_attempt(self, event: AttemptOpened) -> int:
        """The node's own id for the attempt; the driver maps it to the store's."""
        self._next += 1
        self._write(encode(Opened(local=self._next, details=event)))
        return self._next

    def emit(self, event: Event) -> None:
        """Send ``event``; request counts stay on the node (the driver shows the phase)."""
        match event:
            case Said(tone=Tone.COUNTS):
                pass
            case _:
                self._write(encode(event))


def main(fd: int, parent: int | None = None) -> int:
    """``python -m servegate.campaign.node FD [PARENT]``: the child process of a Ray task
    (``PARENT``: the task's worker) or of a remote agent; execute the start given as a
    ``NodeJob`` on stdin, each event a frame written to the pipe ``FD``."""
    # a Ray worker blocks (and ignores) SIGINT, and its children inherit that: undo it,
    # for this process (Ctrl-C on the driver arrives as SIGINT) and for the server
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})
    signal.signal(signal.SIGINT, signal.default_int_handler)
    die_with_parent(signal.SIGTERM)
    # the worker died before the line above (re-parented: to init, or to a subreaper)
    if os.getppid() == 1 or (parent is not None and os.getppid() != parent):
        return 1
    job: NodeJob = decode(sys.stdin.buffer.read(), JOB)
    campaign, spec = job.campaign, job.spec
    frames = os.fdopen(fd, "wb", buffering=0)
    sink = NodeSink(frames.write)
    logs = _log_dir(Path(job.log_dir), sink, spec)
    gpu = GpuMonitor.open()
    try:
        with Interrupts() as interrupts:
            executor = StartExecutor(
                campaign,
                sink,
                interrupts,
                log_dir=logs,
                gpu=gpu,
                gpu_idle=gpu.idle_memory() if gpu is not None else (),
                placement=job.placement,
            )
            # stopped by Ctrl-C on the driver: the server is stopped and the attempt closed
            with suppress(Interrupted):
                executor.run(spec)
    finally:
        if gpu is not None:
            gpu.close()
    return 0


def _log_dir(wanted: Path, sink: NodeSink, spec: StartSpec) -> Path:
    """The driver's log folder when this node can write it (a shared or same-named
    path), else one in the node's temporary folder, said in a warning."""
    try:
        wanted.mkdir(parents=True, exist_ok=True)
        if os.access(wanted, os.W_OK):
            return wanted
    except OSError:
        pass
    fallback = Path(tempfile.gettempdir()) / "servegate-logs"
    fallback.mkdir(parents=True, exist_ok=True)
    sink.emit(
        Said(
            tone=Tone.WARNING,
            text=f"{spec.tag} {spec.names}: {wanted} cannot be written on "
            f"{socket.gethostname()}; the server's log is kept there in {fallback}",
        )
    )
    return fallback


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else None))
