"""Cold or warm, the ETA of a start, and ``--timeout auto``, from past starts.

The rules (docs/gate.md, "Cold or warm, ETA"):

- **cold** when one of the engine's compile/JIT caches gained at least ``COLD_FILES``
  files during the start and was empty before it or grew by at least ``COLD_GROWTH``
  of its bytes; **warm** otherwise (a cache the engine did not touch does not count).
- **expected** temperature of the next start: warm when the same configuration has
  started before and every cache that held files after that start still holds at
  least 90 % of them; cold when one was cleared; unknown without history.
- **ETA**: the median of the past READY starts of the same configuration and the same
  temperature (all of them when none has it): overall, and per phase (duration and
  where it ends). A ``wait`` on a server that was already up (``startup.already_up``)
  timed no start and is left out, here and in ``--timeout auto``.
- ``--timeout auto``: the longest such start times ``AUTO_MARGIN`` (``AUTO_MARGIN_OTHER``
  when only starts of the other temperature are known), at least ``AUTO_FLOOR_S``;
  ``AutoTimeout`` says which rule chose it, for the user.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from servegate.startup.caches import CacheState
from servegate.startup.history import StartRow

__all__ = [
    "AUTO_FLOOR_S",
    "AUTO_MARGIN",
    "AUTO_MARGIN_OTHER",
    "COLD_FILES",
    "COLD_GROWTH",
    "AutoTimeout",
    "Eta",
    "auto_rule",
    "auto_timeout",
    "estimate",
    "expected_cold",
    "is_cold",
]

COLD_FILES = 5
COLD_GROWTH = 0.10
AUTO_MARGIN = 1.5
AUTO_MARGIN_OTHER = 3.0
AUTO_FLOOR_S = 60.0
_KEPT = 0.9


def is_cold(before: Sequence[CacheState], after: Sequence[CacheState]) -> bool | None:
    """Cold or warm from the caches before and after a start; None without both."""
    if not before or not after:
        return None
    old = {state.name: state for state in before}
    for state in after:
        was = old.get(state.name)
        if was is None:
            continue
        gained = state.files - was.files
        if gained < COLD_FILES:
            continue
        if was.empty or state.bytes - was.bytes >= COLD_GROWTH * was.bytes:
            return True
    return False


def expected_cold(now: Sequence[CacheState], last: StartRow | None) -> bool | None:
    """Whether the coming start should be cold (see the module's rules); None: unknown."""
    if last is None:
        return None
    after = [
        CacheState.from_json({"name": c["name"], "path": c["path"], **c["after"]})
        for c in last.startup.get("caches") or []
        if c.get("after") is not None
    ]
    if not after:
        return None
    current = {state.name: state for state in now}
    for state in after:
        if state.files == 0:
            continue
        present = current.get(state.name)
        if present is None or present.files < _KEPT * state.files:
            return True
    return False


@dataclass(frozen=True, slots=True, kw_only=True)
class Eta:
    """What past starts say the coming one will take."""

    total_s: float
    cold: bool | None  # the temperature the starts it is based on had (None: mixed)
    based_on: int  # how many past starts
    # phase name -> (median duration, median end since the start), in past order
    phases: Mapping[str, tuple[float, float]] = field(default_factory=dict)

    def remaining(self, elapsed_s: float, phase: str | None, in_phase_s: float) -> float:
        """Seconds left, given where the start is now."""
        if phase is not None and phase in self.phases:
            duration, end = self.phases[phase]
            return max(0.0, duration - in_phase_s) + max(0.0, self.total_s - end)
        return max(0.0, self.total_s - elapsed_s)

    def to_json(self) -> dict[str, Any]:
        """The ETA as a JSON object."""
        return {
            "total_s": round(self.total_s, 3),
            "cold": self.cold,
            "based_on": self.based_on,
            "phases": {
                name: {"duration_s": round(d, 3), "end_s": round(e, 3)}
                for name, (d, e) in self.phases.items()
            },
        }


def _matching(rows: Sequence[StartRow], cold: bool | None) -> tuple[list[StartRow], bool]:
    """READY rows of temperature ``cold`` (True: found them), else all READY rows; never
    a wait on a server that was already up (its 0.0 s is no startup duration)."""
    ready = [row for row in rows if row.status == "ready" and not row.startup.get("already_up")]
    if cold is not None:
        same = [row for row in ready if row.cold is cold]
        if same:
            return same, True
    return ready, cold is None


def estimate(rows: Sequence[StartRow], cold: bool | None) -> Eta | None:
    """The ETA from past starts of one configuration (newest first); None without any."""
    used, _ = _matching(rows, cold)
    if not used:
        return None
    temps = {row.cold for row in used}
    durations: dict[str, list[float]] = {}
    ends: dict[str, list[float]] = {}
    order: list[str] = []
    for row in reversed(used):  # oldest first: the newest order wins below
        for phase in row.phases:
            if phase.get("end_s") is None:
                continue
            name = phase["name"]
            if name not in order:
                order.append(name)
            ends.setdefault(name, []).append(float(phase["end_s"]))
        for name, duration in row.phase_durations().items():
            durations.setdefault(name, []).append(duration)
    phases = {
        name: (statistics.median(durations[name]), statistics.median(ends[name]))
        for name in order
        if name in durations
    }
    return Eta(
        total_s=statistics.median(row.elapsed_s for row in used),
        cold=temps.pop() if len(temps) == 1 else None,
        based_on=len(used),
        phases=phases,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class AutoTimeout:
    """``--timeout auto``: the seconds chosen, and the past starts and rule behind them."""

    timeout_s: float
    longest_s: float  # the longest past READY start it is based on
    margin: float  # AUTO_MARGIN, or AUTO_MARGIN_OTHER
    based_on: int  # how many past READY starts
    expected_cold: bool | None  # the temperature expected of this start (None: unknown)
    same_temperature: bool  # those starts have it (always, when it is unknown)

    def describe(self) -> str:
        """``412 s (3x the longest of 2 past warm READY starts of this configuration,
        137.3 s; this start is expected cold)``."""
        of = self.expected_cold if self.same_temperature else not self.expected_cold
        kind = {True: "cold READY", False: "warm READY", None: "READY"}[of]
        if self.based_on > 1:
            which = f"longest of {self.based_on} past {kind} starts"
        else:
            which = f"one past {kind} start"
        rule = f"{self.margin:g}x the {which} of this configuration, {self.longest_s:.1f} s"
        if self.margin * self.longest_s < AUTO_FLOOR_S:
            rule = f"the {AUTO_FLOOR_S:.0f} s floor; {rule}, is less"
        if not self.same_temperature:
            rule += f"; this start is expected {'cold' if self.expected_cold else 'warm'}"
        return f"{self.timeout_s:.0f} s ({rule})"

    def to_json(self) -> dict[str, Any]:
        """As a JSON object (the verdict's ``startup.timeout_auto``)."""
        return {
            "timeout_s": round(self.timeout_s, 3),
            "longest_s": round(self.longest_s, 3),
            "margin": self.margin,
            "based_on": self.based_on,
            "expected_cold": self.expected_cold,
            "same_temperature": self.same_temperature,
            "rule": self.describe(),
        }


def auto_rule(rows: Sequence[StartRow], cold: bool | None) -> AutoTimeout | None:
    """``--timeout auto`` from past starts, with its rule; None without a READY one."""
    used, same = _matching(rows, cold)
    if not used:
        return None
    margin = AUTO_MARGIN if same else AUTO_MARGIN_OTHER
    longest = max(row.elapsed_s for row in used)
    return AutoTimeout(
        timeout_s=max(AUTO_FLOOR_S, margin * longest),
        longest_s=longest,
        margin=margin,
        based_on=len(used),
        expected_cold=cold,
        same_temperature=same,
    )


def auto_timeout(rows: Sequence[StartRow], cold: bool | None) -> float | None:
    """``--timeout auto`` in seconds from past starts; None without a READY one."""
    rule = auto_rule(rows, cold)
    return None if rule is None else rule.timeout_s
