"""Stop a server, by name or by PID: its whole tree, then its record.

    from servegate.launch.stop import stop
    stopped = stop("sglang")          # or stop(12345), or stop(pid, force=True)
    print(stopped.label, stopped.report.line())

``servegate stop`` and ``Server.stop`` both end here. A PID is stopped only when
servegate answers for it (a tracked server's main process, or an orphan of a dead one)
unless ``force``; ``tree.stop_tree`` does the stopping. A server that had already exited
with nothing of it left running is only forgotten (``Stopped.exited`` says how it ended).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import psutil

from servegate.errors import ServerNotFound, UsageError
from servegate.launch import state
from servegate.launch.tree import ProcInfo, StopReport, is_alive, stop_tree

__all__ = ["Stopped", "stop"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Stopped:
    """What ``stop`` stopped: which server, the stop report, and its keeper's log trouble."""

    label: str  # NAME, "NAME orphan PID" or "pid PID"
    report: StopReport
    log_problem: str | None = None  # the log trouble its keeper recorded, if any
    # the server had already exited, nothing of it ran: "code 1 at TIME", "killed by
    # SIGKILL at TIME" or "exit code unknown" (its record is removed)
    exited: str | None = None

    def line(self) -> str:
        """One line for people: the stop report, or that it had already exited."""
        if self.exited is not None:
            return f"had already exited ({self.exited}); its record is removed"
        return self.report.line()

    def to_json(self) -> dict[str, Any]:
        """The ``servegate stop --json`` object."""
        return {
            "name": self.label,
            **self.report.to_json(),
            "log_problem": self.log_problem,
            "already_exited": self.exited,
        }


def stop(
    target: str | int | state.Tracked, *, grace_s: float = 10.0, force: bool = False
) -> Stopped:
    """Stop a server and its whole tree; forget its record once nothing of it runs.

    Args:
        target: a tracked server's name, a PID (a tracked server's main process or an
            orphan ``ps`` lists for a dead one), or the record itself (``Server.stop``).
        grace_s: seconds between SIGTERM and SIGKILL.
        force: with a PID, stop that process's tree even if servegate did not launch it.

    Raises:
        ServerNotFound: no such server or process.
        UsageError: a PID servegate does not answer for (without ``force``).
    """
    if isinstance(target, state.Tracked):
        return _stop_tracked(target, grace_s)
    if isinstance(target, str):
        named = _tracked(target)
        return _forget(named) if named.gone() else _stop_tracked(named, grace_s)
    # a dead server's PID may belong to another process by now
    running = [server for server in state.list_tracked() if not server.gone()]
    tracked, orphan = _owner(target, running, force=force)
    if tracked is None:
        return Stopped(label=f"pid {target}", report=_stop_untracked(target, grace_s))
    if orphan is None:
        return _stop_tracked(tracked, grace_s)
    report = stop_tree(
        pid=orphan.pid,
        pgid=None,  # the group may hold other orphans: only this one's own tree
        recorded=(orphan,),
        grace_s=grace_s,
        main_create_time=orphan.create_time,
    )
    if tracked.gone():
        state.remove(tracked.name)
    return Stopped(label=f"{tracked.name} orphan {orphan.pid}", report=report)


def _tracked(name: str) -> state.Tracked:
    """The record of the server ``name``, running or dead."""
    tracked = state.load(state.check_name(name))
    if tracked is None:
        raise ServerNotFound(f"no running server named {name!r}: see servegate ps.")
    return tracked


def _forget(tracked: state.Tracked) -> Stopped:
    """A server with nothing left running: remove its record, say how it had ended."""
    problem = state.remove(tracked.name)
    report = StopReport(
        killed=(), survivors=(), escalated=False, duration_s=0.0, port=None, port_free=None
    )
    return Stopped(
        label=tracked.name, report=report, log_problem=problem, exited=tracked.exit_detail()
    )


def _stop_tracked(tracked: state.Tracked, grace_s: float) -> Stopped:
    """Stop a tracked server's whole tree and forget it."""
    report = stop_tree(
        pid=tracked.pid,
        pgid=tracked.pgid,
        roots=tracked.keeper_roots(),
        recorded=tracked.descendants,
        marker=tracked.marker,
        grace_s=grace_s,
        port=tracked.port,
        main_create_time=tracked.create_time,
    )
    problem = state.remove(tracked.name)
    return Stopped(label=tracked.name, report=report, log_problem=problem)


def _owner(
    pid: int, servers: list[state.Tracked], *, force: bool
) -> tuple[state.Tracked | None, ProcInfo | None]:
    """The tracked server that answers for ``pid`` and, when ``pid`` is an orphan of a
    dead one, that orphan; (None, None) for any other live process under ``force``."""
    for tracked in servers:
        if tracked.pid == pid:
            return tracked, None
        for orphan in () if tracked.alive() else tracked.orphans():
            if orphan.pid == pid:
                return tracked, orphan
    if pid <= 1 or pid == os.getpid():
        raise UsageError(f"refusing to stop PID {pid}: pass a server's PID.")
    if not psutil.pid_exists(pid):
        raise ServerNotFound(f"no process has PID {pid}: see servegate ps.")
    if force:
        return None, None
    for tracked in servers:
        if any(d.pid == pid and is_alive(d) for d in tracked.descendants):
            raise UsageError(
                f"PID {pid} is a process of server {tracked.name!r}, not its main process: "
                f"stop the whole server with servegate stop {tracked.name}, "
                "or pass --force to stop only this PID's tree."
            )
    raise UsageError(
        f"PID {pid} is not a server or orphan that servegate launched (see servegate ps): "
        "pass --force to stop it anyway."
    )


def _stop_untracked(pid: int, grace_s: float) -> StopReport:
    """Stop the tree of a process servegate did not launch (``force``)."""
    try:
        pgid = os.getpgid(pid)
    except ProcessLookupError:
        raise ServerNotFound(f"no process has PID {pid}: see servegate ps.") from None
    # signal its group only if it leads one; otherwise just its own tree
    return stop_tree(pid=pid, pgid=pgid if pgid == pid else None, grace_s=grace_s)
