"""The verdict: READY, CRASH or TIMEOUT, with why, when and the log around it.

One frozen value that every layer shares: the command line prints ``line()`` and the
tail, ``--json`` prints ``to_json()`` (schema ``servegate.verdict/1``), the store keeps
it, and ``GateError`` carries it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from servegate._text import printable
from servegate.diag.diagnosis import Diagnosis
from servegate.engines.families import family_of
from servegate.errors import ServerCrashed, ServerTimeout
from servegate.telemetry.model import Snapshot
from servegate.telemetry.summary import TelemetrySummary

__all__ = [
    "SCHEMA",
    "DetectedBy",
    "Kind",
    "PhaseProgress",
    "PhaseSpan",
    "Status",
    "Verdict",
    "iso",
    "raise_for_verdict",
]

SCHEMA = "servegate.verdict/1"


class Status(StrEnum):
    """What the gate decided (the JSON's ``status``)."""

    READY = "ready"  # the server serves: its ready line and/or its probe said so
    CRASH = "crash"  # it failed: an exit, a fatal line, or a dead essential child
    TIMEOUT = "timeout"  # not ready within --timeout, or silent and stuck past --stall


class DetectedBy(StrEnum):
    """The event that decided the verdict (the JSON's ``detected_by``)."""

    LOG = "log"  # a ready line, confirmed by the probe when the engine has one
    PROBE = "probe"  # the readiness probe answered before any ready line
    EXIT = "exit"  # the main process exited
    CHILD_EXIT = "child-exit"  # an essential child died while the main process ran
    SIGNATURE = "signature"  # a fatal line of the profile or of --crash
    STALL = "stall"  # no progress for --stall seconds (stuck, or no telemetry to tell)
    DEADLINE = "deadline"  # --timeout seconds in all


class Kind(StrEnum):
    """The CRASH and TIMEOUT kinds the gate decides itself (the JSON's ``kind``).

    A fatal line brings its signature's own kind instead (``oom``, ``nccl``, ...: the
    engine profiles in ``servegate.engines``), so ``Verdict.kind`` is a plain string.
    """

    EXIT = "exit"  # the main process exited with a code, or a signal from outside ended it
    SEGFAULT = "segfault"  # died by SIGSEGV: a native extension crashed
    KILLED = "killed"  # died by SIGKILL: often the OOM killer
    ABORT = "abort"  # died by SIGABRT: it aborted itself (assertion, C++ terminate)
    CHILD_EXIT = "child-exit"  # an essential child died while the main process ran
    STUCK = "stuck"  # silent past --stall and idle on every telemetry signal
    STALL = "stall"  # silent past --stall, without telemetry to tell stuck from slow
    DEADLINE = "deadline"  # --timeout reached


def iso(epoch_s: float) -> str:
    """An epoch time as ISO-8601 in UTC, to the microsecond."""
    return datetime.fromtimestamp(epoch_s, tz=UTC).isoformat(timespec="microseconds")


@dataclass(frozen=True, slots=True, kw_only=True)
class PhaseProgress:
    """The last progress an engine printed inside a phase: ``done`` of ``total`` ``unit``."""

    done: float
    total: float | None  # None: a count without a known end (JIT compiles so far)
    unit: str  # shards, batch sizes, bytes, files, graphs, compiles

    def to_json(self) -> dict[str, Any]:
        """The progress as a JSON object."""
        return {"done": self.done, "total": self.total, "unit": self.unit}

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> PhaseProgress | None:
        """Rebuild from ``to_json()`` output; None stays None."""
        if data is None:
            return None
        total = data.get("total")
        return cls(
            done=float(data["done"]),
            total=None if total is None else float(total),
            unit=str(data["unit"]),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class PhaseSpan:
    """A startup phase seen in the log, in seconds since the gate started."""

    name: str
    start_s: float
    end_s: float | None  # None: still open when the verdict was decided
    progress: PhaseProgress | None = None  # the last i/N the engine printed in it
    # what the phase was bound by, from the telemetry sampled in it: cpu, disk, network,
    # gpu or idle (None without telemetry), and that in words
    bound: str | None = None
    bound_evidence: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The phase as a JSON object."""
        return {
            "name": self.name,
            "start_s": self.start_s,
            "end_s": self.end_s,
            "progress": None if self.progress is None else self.progress.to_json(),
            "bound": self.bound,
            "bound_evidence": self.bound_evidence,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class Verdict:
    """What the gate decided about a server, and the evidence."""

    status: Status
    elapsed_s: float
    started_at: str  # ISO-8601
    decided_at: str  # ISO-8601
    detected_by: DetectedBy
    reason: str  # one sentence
    kind: str | None  # a Kind, or a fatal signature's kind (oom, nccl, port-in-use, ...)
    hint: str | None
    matched_line: str | None
    exit_code: int | None
    pid: int | None
    engine: str
    url: str | None
    log_path: str | None
    phases: tuple[PhaseSpan, ...] = ()
    tail: tuple[str, ...] = ()
    diagnosis: Diagnosis | None = None  # stuck or slow, the evidence and the stacks
    telemetry: TelemetrySummary | None = None  # peaks and CPU seconds while it started
    # READY at once: the server was up before the gate began (a wait), so elapsed_s is
    # no startup duration (the start history's ETA leaves it out)
    already_up: bool = False
    # the sampled series (not in to_json: it goes to the store); the keeper sends it apart
    snapshots: tuple[Snapshot, ...] = field(default=(), repr=False, compare=False)

    @property
    def ok(self) -> bool:
        """True when the server is ready."""
        return self.status == Status.READY

    def line(self) -> str:
        """The one-line verdict, e.g. ``CRASH after 12.4s: CUDA out of memory (oom) - ...``.

        CRASH names its kind; CRASH and TIMEOUT end with the hint, when there is one.
        """
        if self.status == Status.READY:
            up = " (it was already up)" if self.already_up else ""
            return f"SERVER READY after {self.elapsed_s:.1f}s{up}"
        # the reason may quote a log line: its control characters are shown, never run
        reason = printable(self.reason, keep_tab=True)
        if self.status == Status.TIMEOUT:
            text = f"TIMEOUT after {self.elapsed_s:.1f}s: {reason}"
        else:
            text = f"CRASH after {self.elapsed_s:.1f}s: {reason}"
            if self.kind:
                text += f" ({self.kind})"
        if self.hint:
            text += f" - {printable(self.hint, keep_tab=True)}"
        return text

    def to_json(self) -> dict[str, Any]:
        """The ``servegate.verdict/1`` JSON object (fields may be added, never renamed)."""
        return {
            "schema": SCHEMA,
            "status": str(self.status),  # plain strings: the JSON is plain data
            "elapsed_s": round(self.elapsed_s, 4),
            "started_at": self.started_at,
            "decided_at": self.decided_at,
            "detected_by": str(self.detected_by),
            "reason": self.reason,
            "kind": None if self.kind is None else str(self.kind),
            # the kind's coarse class: memory, cuda, install, ... (engines/families.py)
            "family": family_of(None if self.kind is None else str(self.kind)),
            "hint": self.hint,
            "matched_line": self.matched_line,
            "exit_code": self.exit_code,
            "pid": self.pid,
            "engine": self.engine,
            "url": self.url,
            "log_path": self.log_path,
            "phases": [phase.to_json() for phase in self.phases],
            "tail": list(self.tail),
            "diagnosis": None if self.diagnosis is None else self.diagnosis.to_json(),
            "telemetry": None if self.telemetry is None else self.telemetry.to_json(),
            "already_up": self.already_up,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Verdict:
        """Rebuild a verdict from ``to_json()`` output (e.g. sent by the keeper process)."""
        if data.get("schema") != SCHEMA:
            raise ValueError(f"not a {SCHEMA} object: schema={data.get('schema')!r}")
        return cls(
            status=Status(data["status"]),
            elapsed_s=float(data["elapsed_s"]),
            started_at=data["started_at"],
            decided_at=data["decided_at"],
            detected_by=DetectedBy(data["detected_by"]),
            reason=data["reason"],
            kind=data["kind"],
            hint=data["hint"],
            matched_line=data["matched_line"],
            exit_code=data["exit_code"],
            pid=data["pid"],
            engine=data["engine"],
            url=data["url"],
            log_path=data["log_path"],
            phases=tuple(
                PhaseSpan(
                    name=p["name"],
                    start_s=p["start_s"],
                    end_s=p["end_s"],
                    progress=PhaseProgress.from_json(p.get("progress")),
                    bound=p.get("bound"),
                    bound_evidence=p.get("bound_evidence"),
                )
                for p in data["phases"]
            ),
            tail=tuple(data["tail"]),
            diagnosis=Diagnosis.from_json(data.get("diagnosis")),
            telemetry=TelemetrySummary.from_json(data.get("telemetry")),
            already_up=bool(data.get("already_up", False)),
        )


def raise_for_verdict(verdict: Verdict) -> Verdict:
    """Return a READY verdict; raise ServerCrashed / ServerTimeout for the others."""
    if verdict.status == Status.CRASH:
        raise ServerCrashed(verdict)
    if verdict.status == Status.TIMEOUT:
        raise ServerTimeout(verdict)
    return verdict
