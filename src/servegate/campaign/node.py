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
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from servegate.campaign.config import Campaign
from servegate.campaign.events import (
    AttemptClosed,
    AttemptOpened,
    BenchTimed,
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
from servegate.campaign.execute import StartSpec
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
