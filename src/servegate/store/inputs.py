"""What the store takes: the shapes of the results it records.

The gate's ``Verdict``, the launcher's ``StopReport`` and the load generator's
``PointResult`` satisfy these Protocols as they are; the store depends on their shape,
not on their classes, so that it sits below the layers that produce what it keeps.
Each may also be given as its ``to_json()`` object (a stored or hand-written result).
A point is read once, at the door, into the ``PointRow`` the store writes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

__all__ = ["PointRecord", "PointRow", "StopRecord", "VerdictRecord"]


class VerdictRecord(Protocol):
    """A gate verdict: ``to_json()`` gives the ``servegate.verdict/1`` object."""

    def to_json(self) -> dict[str, Any]: ...


class StopRecord(Protocol):
    """How a server was stopped (``StopReport``)."""

    @property
    def killed(self) -> Sequence[int]: ...  # PIDs that were alive when the stop began
    @property
    def duration_s(self) -> float: ...
    @property
    def port_free(self) -> bool | None: ...  # None when no port is known


class PointRecord(Protocol):
    """One measured load point (``PointResult``)."""

    @property
    def summary(self) -> Mapping[str, float]: ...
    @property
    def completed(self) -> int: ...
    @property
    def failed(self) -> int: ...
    @property
    def failures(self) -> Mapping[str, int]: ...  # error kind -> requests
    @property
    def samples(self) -> Sequence[object]: ...  # per-request samples, read by sample_row
    @property
    def server_metrics(self) -> Mapping[str, Any]: ...
    @property
    def warnings(self) -> Sequence[str]: ...
    def to_json(self, *, samples: bool = ...) -> dict[str, Any]: ...


# what a point's detail column leaves out: stored in columns and tables of their own
_NOT_DETAIL = frozenset({"samples", "summary", "failures", "server_metrics", "warnings"})


@dataclass(frozen=True, slots=True, kw_only=True)
class PointRow:
    """One load point as the store writes it."""

    summary: dict[str, Any]
    completed: int | None  # None: counted from the samples
    failed: int | None  # None: counted from ``failures``
    failures: dict[str, int]
    samples: tuple[object, ...]
    server_metrics: dict[str, Any]
    warnings: tuple[str, ...]
    detail: dict[str, Any]  # settings, model, client load, ... (no samples)

    @classmethod
    def of(cls, result: PointRecord | Mapping[str, Any]) -> PointRow:
        """Read a ``PointResult``, or its ``to_json()`` object (missing fields empty)."""
        if isinstance(result, Mapping):
            return cls(
                summary={str(k): v for k, v in dict(result.get("summary") or {}).items()},
                completed=result.get("completed"),
                failed=result.get("failed"),
                failures=dict(result.get("failures") or {}),
                samples=tuple(result.get("samples") or ()),
                server_metrics=dict(result.get("server_metrics") or {}),
                warnings=tuple(result.get("warnings") or ()),
                detail={k: v for k, v in result.items() if k not in _NOT_DETAIL},
            )
        detail = result.to_json(samples=False)
        return cls(
            summary={str(k): v for k, v in result.summary.items()},
            completed=result.completed,
            failed=result.failed,
            failures=dict(result.failures),
            samples=tuple(result.samples),
            server_metrics=dict(result.server_metrics),
            warnings=tuple(result.warnings),
            detail={k: v for k, v in detail.items() if k not in _NOT_DETAIL},
        )


def stop_fields(
    stop: StopRecord | Mapping[str, Any],
) -> tuple[tuple[int, ...], float | None, bool | None]:
    """(killed, duration_s, port_free) of a ``StopReport`` or its ``to_json()`` object."""
    if isinstance(stop, Mapping):
        killed, duration_s, port_free = (
            stop.get("killed") or (),
            stop.get("duration_s"),
            stop.get("port_free"),
        )
    else:
        killed, duration_s, port_free = stop.killed, stop.duration_s, stop.port_free
    return (
        tuple(int(p) for p in killed),
        None if duration_s is None else float(duration_s),
        None if port_free is None else bool(port_free),
    )
