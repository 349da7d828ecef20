"""What executing a start reports, as typed events: one ``emit(event)`` for all of them.

``StartExecutor`` (campaign/execute.py) tells a ``Sink`` everything that happens to a
start as one frozen event each: an attempt opened, the verdict, a point measured, the
stop, an attempt closed, variants failed, a line for the progress. Each consumer is a
``match`` over the events it cares about: the runner's ``Recorder`` (the store, the
run's bookkeeping, the progress), and the forwarders of a Ray node or an SSH host, which
send each event to the driver as it is and hand it to the same ``Recorder`` there.

Opening an attempt is the one question among them: the executor needs the attempt's id
(its log file is named after it) before anything else of that attempt is said, so
``Sink.open_attempt`` answers it; everything else goes through ``Sink.emit`` and
answers nothing. A forwarder answers with an id of its own, which the driver translates
(``attempt`` in every event that names one).

    sink.emit(Said(tone=Tone.GOOD, text="[1/4] baseline: READY in 3.2s"))
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from servegate.bench import PointResult
from servegate.launch import StopReport
from servegate.store import AttemptStatus
from servegate.telemetry.model import Snapshot

__all__ = [
    "AttemptClosed",
    "AttemptOpened",
    "BenchTimed",
    "CapacityFound",
    "Event",
    "GroupDead",
    "Placement",
    "PointMeasured",
    "Said",
    "ServerStopped",
    "Sink",
    "StartTimed",
    "Tone",
    "VariantBroken",
    "VariantsFailed",
    "VerdictReached",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class Placement:
    """Where a start runs: a cluster node and its GPU model (None: here, not known)."""

    node: str | None = None
    gpu_model: str | None = None

    def where(self) -> str:
        """`` on 10.0.0.7/3fa2c1d0 (H200)``; empty for a local start."""
        if self.node is None:
            return ""
        return f" on {self.node}" + (f" ({self.gpu_model})" if self.gpu_model else "")


# --- the store's events -----------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class AttemptOpened:
    """An attempt of ``variant`` on a start's server (asked with ``Sink.open_attempt``)."""

    variant: str
    server_key: str
    command: list[str]
    env: dict[str, str]
    versions: dict[str, Any]  # recorded as is
    commit: str | None  # the git commit of the server's working folder
    start: int  # which start of its server group: 1, 2, ...
    placement: Placement


@dataclass(frozen=True, slots=True, kw_only=True)
class VerdictReached:
    """The gate's verdict (redacted JSON) and the start's telemetry series."""

    attempt: int
    data: dict[str, Any]
    snapshots: Sequence[Snapshot] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class PointMeasured:
    """One load point measured on an attempt's server; ``label`` names it in progress."""

    attempt: int
    variant: str
    load: str
    repeat: int
    result: PointResult
    label: str


@dataclass(frozen=True, slots=True, kw_only=True)
class CapacityFound:
    """The capacity one start's search found (``find_max``); ``data``: its JSON, with the
    crash that bounded it; ``attempt``: the attempt whose server ran the last probe."""

    attempt: int
    variant: str
    start: int
    data: dict[str, Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerStopped:
    """How an attempt's server was stopped."""

    attempt: int
    stop: StopReport


@dataclass(frozen=True, slots=True, kw_only=True)
class AttemptClosed:
    """An attempt ended with ``status``; ``failed_variants``: those of its server that failed."""

    attempt: int
    status: AttemptStatus
    reason: str | None
    failed_variants: tuple[str, ...] = ()


# --- the run's bookkeeping ---------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class VariantsFailed:
    """These variants failed (the first reason of each is kept)."""

    names: tuple[str, ...]
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupDead:
    """A server configuration is not started again in this run."""

    group_key: str
    why: str


@dataclass(frozen=True, slots=True, kw_only=True)
class VariantBroken:
    """A variant whose benchmark cannot run: skipped in later starts."""

    name: str


@dataclass(frozen=True, slots=True, kw_only=True)
class StartTimed:
    """A start reached its verdict after ``seconds`` (for the time left)."""

    seconds: float


@dataclass(frozen=True, slots=True, kw_only=True)
class BenchTimed:
    """A start measured ``tasks`` points in ``seconds`` (for the time left)."""

    seconds: float
    tasks: int


# --- where the run stands (said by the runner) -------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class RoundBegan:
    """A round of starts began on the cluster: ``starts`` at once, ``measurements`` in all."""

    round: int
    starts: int
    measurements: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Standing:
    """Where the campaign stands before a start; ``left_s``: the time left (None: unknown)."""

    starts_done: int
    starts_total: int
    variants_done: int
    variants_total: int
    left_s: float | None


# --- what the user is told ----------------------------------------------------------------


class Tone(enum.StrEnum):
    """How a progress line is said."""

    # INFO: a plain step (a start queued, a point skipped, a server stopped).
    INFO = "info"
    # GOOD: something that went right (READY, a point measured).
    GOOD = "good"
    # WARNING: worth a look; the campaign goes on. Said even when quiet.
    WARNING = "warning"
    # FAILURE: a variant failed; ``tail`` holds its log's last lines. Said even when quiet.
    FAILURE = "failure"
    # ACTIVITY: what is happening now (the live status line on a terminal).
    ACTIVITY = "activity"
    # COUNTS: request counts while a point runs (live only, never logged).
    COUNTS = "counts"


@dataclass(frozen=True, slots=True, kw_only=True)
class Said:
    """A line for the progress."""

    tone: Tone
    text: str
    tail: tuple[str, ...] = ()


Event = (
    VerdictReached
    | PointMeasured
    | CapacityFound
    | ServerStopped
    | AttemptClosed
    | VariantsFailed
    | GroupDead
    | VariantBroken
    | StartTimed
    | BenchTimed
    | RoundBegan
    | Standing
    | Said
)


class Sink(Protocol):
    """Where executing a start reports: one question (an attempt's id) and one stream."""

    def open_attempt(self, event: AttemptOpened) -> int:
        """Open an attempt; its id, which the later events of that attempt carry."""
        ...

    def emit(self, event: Event) -> None:
        """Take one event (a consumer ignores those it has no use for)."""
        ...
