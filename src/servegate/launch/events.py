"""What a launch tells its observer while it gates a server, as typed events.

``launch(command, options=..., observer=...)`` hands each event to ``observer.emit`` in
this order: ``StartBegan`` once the process runs, then any ``GateNote`` and
``TelemetrySampled`` while the gate waits, ``VerdictDecided`` the moment the gate
decides, ``VerdictCompleted`` once its telemetry series arrived (still before a failed
tree is stopped or a READY one detached). An observer is a ``match`` over the events it
wants; the library has none by default and says nothing.

    class Lines:
        def emit(self, event: LaunchEvent) -> None:
            match event:
                case VerdictDecided(verdict=verdict):
                    print(verdict.line())
                case _:
                    pass
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from servegate.gate.verdict import Verdict
    from servegate.launch.state import Tracked
    from servegate.telemetry.model import Snapshot

__all__ = [
    "GateNote",
    "Hooks",
    "LaunchEvent",
    "Observer",
    "StartBegan",
    "TelemetrySampled",
    "VerdictCompleted",
    "VerdictDecided",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class StartBegan:
    """The command runs (it passed every check): its record, with its log and start time."""

    tracked: Tracked


@dataclass(frozen=True, slots=True, kw_only=True)
class GateNote:
    """A live note of the gate while it waits ("no output for 240 s during jit_compile")."""

    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class TelemetrySampled:
    """One sample of the tree while it starts (CPU, RSS, GPU memory; no per-process detail)."""

    snapshot: Snapshot


@dataclass(frozen=True, slots=True, kw_only=True)
class VerdictDecided:
    """The verdict the moment it arrives: no ``snapshots`` yet, ``telemetry`` lacks the
    last sample."""

    verdict: Verdict


@dataclass(frozen=True, slots=True, kw_only=True)
class VerdictCompleted:
    """The verdict with its telemetry series (what ``Server.verdict`` and a raised error
    carry), before a failed tree is stopped or a READY one detached."""

    verdict: Verdict


LaunchEvent = StartBegan | GateNote | TelemetrySampled | VerdictDecided | VerdictCompleted


class Observer(Protocol):
    """Whatever follows a launch: one method, over every event."""

    def emit(self, event: LaunchEvent) -> None: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class Hooks:
    """The keyword form's ``on_*`` callbacks as an observer (each one optional)."""

    on_started: Callable[[Tracked], None] | None = None
    on_note: Callable[[str], None] | None = None
    on_status: Callable[[Snapshot], None] | None = None
    on_verdict: Callable[[Verdict], None] | None = None
    on_telemetry: Callable[[Verdict], None] | None = None

    def emit(self, event: LaunchEvent) -> None:
        match event:
            case StartBegan(tracked=tracked) if self.on_started is not None:
                self.on_started(tracked)
            case GateNote(text=text) if self.on_note is not None:
                self.on_note(text)
            case TelemetrySampled(snapshot=snapshot) if self.on_status is not None:
                self.on_status(snapshot)
            case VerdictDecided(verdict=verdict) if self.on_verdict is not None:
                self.on_verdict(verdict)
            case VerdictCompleted(verdict=verdict) if self.on_telemetry is not None:
                self.on_telemetry(verdict)
            case _:
                pass
