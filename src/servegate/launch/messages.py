"""The keeper's messages to the launcher: one JSON object per line on the keeper's stdout.

In order: ``Started``, then any number of ``Note`` and ``Sample``, then ``Decided`` (the
verdict) and ``Telemetry`` (the series sampled until it), and ``Exited`` when the
server ends; ``Failed`` instead of any of them when the keeper cannot go on. Each has
``to_json()`` (with its ``event`` name) and ``from_json()``; ``parse`` reads a line.

The verdict and telemetry types load only when such a message is built or read: the
keeper sends ``Started`` before they load, so the server starts without waiting for them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from servegate.gate.verdict import Verdict
    from servegate.telemetry.model import Snapshot
    from servegate.telemetry.summary import TelemetrySummary

__all__ = [
    "Decided",
    "Exited",
    "Failed",
    "Message",
    "Note",
    "Sample",
    "Started",
    "Telemetry",
    "parse",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class Started:
    """The server runs: its PID, group, keeper, and when it started."""

    EVENT: ClassVar[str] = "started"
    pid: int
    pgid: int
    keeper_pid: int
    started_mono: float  # the keeper's time.monotonic() at the start
    started_wall: float  # time.time() at the start

    def to_json(self) -> dict[str, Any]:
        """The message as a JSON object."""
        return {
            "event": self.EVENT,
            "pid": self.pid,
            "pgid": self.pgid,
            "keeper_pid": self.keeper_pid,
            "started_mono": self.started_mono,
            "started_wall": self.started_wall,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Started:
        """Rebuild from ``to_json()`` output."""
        return cls(
            pid=int(data["pid"]),
            pgid=int(data["pgid"]),
            keeper_pid=int(data["keeper_pid"]),
            started_mono=float(data["started_mono"]),
            started_wall=float(data["started_wall"]),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Note:
    """A live note of the gate, redacted (a silent server found busy)."""

    EVENT: ClassVar[str] = "note"
    text: str

    def to_json(self) -> dict[str, Any]:
        """The message as a JSON object."""
        return {"event": self.EVENT, "text": self.text}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Note:
        """Rebuild from ``to_json()`` output."""
        return cls(text=str(data.get("text", "")))


@dataclass(frozen=True, slots=True, kw_only=True)
class Sample:
    """One sample of the tree while it starts, without its processes (a status line)."""

    EVENT: ClassVar[str] = "status"
    snapshot: Snapshot

    def to_json(self) -> dict[str, Any]:
        """The message as a JSON object."""
        return {"event": self.EVENT, "snapshot": self.snapshot.to_json()}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Sample:
        """Rebuild from ``to_json()`` output."""
        from servegate.telemetry.model import Snapshot

        return cls(snapshot=Snapshot.from_json(data["snapshot"]))


@dataclass(frozen=True, slots=True, kw_only=True)
class Decided:
    """The verdict (without its series: ``Telemetry`` follows) and the essential children."""

    EVENT: ClassVar[str] = "verdict"
    verdict: Verdict
    essential: tuple[int, ...] = ()  # PIDs of the essential children at the verdict

    def to_json(self) -> dict[str, Any]:
        """The message as a JSON object."""
        return {
            "event": self.EVENT,
            "verdict": self.verdict.to_json(),
            "essential": list(self.essential),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Decided:
        """Rebuild from ``to_json()`` output."""
        from servegate.gate.verdict import Verdict

        return cls(
            verdict=Verdict.from_json(data["verdict"]),
            essential=tuple(int(pid) for pid in data.get("essential", ())),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Telemetry:
    """The series sampled until the verdict, and its summary counting the last sample."""

    EVENT: ClassVar[str] = "telemetry"
    snapshots: tuple[Snapshot, ...]
    summary: TelemetrySummary | None

    def to_json(self) -> dict[str, Any]:
        """The message as a JSON object."""
        return {
            "event": self.EVENT,
            "snapshots": [snapshot.to_json() for snapshot in self.snapshots],
            "summary": None if self.summary is None else self.summary.to_json(),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Telemetry:
        """Rebuild from ``to_json()`` output."""
        from servegate.telemetry.model import Snapshot
        from servegate.telemetry.summary import TelemetrySummary

        return cls(
            snapshots=tuple(Snapshot.from_json(item) for item in data.get("snapshots", ())),
            summary=TelemetrySummary.from_json(data.get("summary")),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Exited:
    """The server's main process ended, with this exit code (None: unknown)."""

    EVENT: ClassVar[str] = "exit"
    code: int | None

    def to_json(self) -> dict[str, Any]:
        """The message as a JSON object."""
        return {"event": self.EVENT, "code": self.code}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Exited:
        """Rebuild from ``to_json()`` output."""
        code = data.get("code")
        return cls(code=None if code is None else int(code))


@dataclass(frozen=True, slots=True, kw_only=True)
class Failed:
    """The keeper could not go on (the log, the command, its own error); it says why."""

    EVENT: ClassVar[str] = "error"
    message: str

    def to_json(self) -> dict[str, Any]:
        """The message as a JSON object."""
        return {"event": self.EVENT, "message": self.message}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Failed:
        """Rebuild from ``to_json()`` output."""
        return cls(message=str(data["message"]))


Message = Started | Note | Sample | Decided | Telemetry | Exited | Failed

_TYPES: dict[str, type[Message]] = {
    kind.EVENT: kind for kind in (Started, Note, Sample, Decided, Telemetry, Exited, Failed)
}


def parse(line: bytes | str) -> Message:
    """The message on one line of the keeper's stdout; ValueError if it is none."""
    data = json.loads(line)
    kind = _TYPES.get(str(data.get("event"))) if isinstance(data, dict) else None
    if kind is None:
        raise ValueError(f"not a keeper message: {str(line)[:200]!r}")
    try:
        return kind.from_json(data)
    except (KeyError, TypeError) as exc:
        raise ValueError(f"a malformed keeper {kind.EVENT} message: {exc}") from None
