"""The verdict's ``diagnosis``: stuck or slow when the log went quiet, and the stacks.

``state`` is "stuck" (silent past ``--stall`` and idle on every signal: stopped early),
"slow" (silent but busy: kept waiting), or None (no telemetry to tell them apart, e.g.
a plain stall TIMEOUT). ``activity`` is what the telemetry said at the last decision,
``stacks`` the dump taken before the tree was stopped (on TIMEOUT).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from servegate.diag.stacks import Stacks
from servegate.telemetry.model import Activity

__all__ = ["Diagnosis", "DiagnosisState", "activity_from_json"]

DiagnosisState = Literal["stuck", "slow"]


def activity_from_json(data: dict[str, Any] | None) -> Activity | None:
    """An :class:`Activity` from its ``to_json()``; None stays None."""
    if data is None:
        return None
    return Activity(
        busy=bool(data["busy"]),
        bound=data["bound"],
        evidence=str(data["evidence"]),
        window_s=float(data["window_s"]),
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class Diagnosis:
    """Why a quiet server was kept waiting or stopped, with the evidence."""

    state: DiagnosisState | None
    silent_s: float  # how long the log had been silent at the last decision
    phase: str | None  # where startup was: "during jit_compile"
    activity: Activity | None = None
    stacks: Stacks | None = None

    def to_json(self) -> dict[str, Any]:
        """The diagnosis as a JSON object."""
        return {
            "state": self.state,
            "silent_s": round(self.silent_s, 3),
            "phase": self.phase,
            "activity": None if self.activity is None else self.activity.to_json(),
            "stacks": None if self.stacks is None else self.stacks.to_json(),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> Diagnosis | None:
        """Rebuild from ``to_json()``; None stays None."""
        if data is None:
            return None
        return cls(
            state=data["state"],
            silent_s=float(data["silent_s"]),
            phase=data["phase"],
            activity=activity_from_json(data["activity"]),
            stacks=Stacks.from_json(data["stacks"]),
        )
