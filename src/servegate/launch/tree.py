"""Process trees: snapshot every descendant, stop them all, confirm the port is free.

Killing the process group is necessary but not enough: TGI shards and TensorRT-LLM MPI
workers run in groups of their own, and any child may call setsid(). So the tree is
snapshotted first (descendants of the roots, members of the server's session, and any
process carrying the server's environment marker), then the group gets SIGTERM, then
after the grace period the group and every snapshotted survivor get SIGKILL.

The port is then confirmed released by the server's own processes: if it is still
taken, the sockets that hold it are looked up, and a port held only by processes
outside the tree (the one that made the server fail with "address already in use")
is reported at once instead of waited for, since it will not come free.
"""

from __future__ import annotations

import contextlib
import errno
import os
import select
import signal
import socket
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import psutil

from servegate._proc import same_process

__all__ = [
    "MARKER_VAR",
    "ProcInfo",
    "StopReport",
    "describe_holders",
    "is_alive",
    "named_port_holders",
    "port_holders",
    "port_is_free",
    "snapshot",
    "stop_tree",
]

MARKER_VAR = "SERVEGATE_SERVER_ID"  # set in every launched server's environment
_PORT_WAIT_S = 1.0  # how long a stop waits for its own processes' port to come free
_TCP_HOLDING = ("0A", "07")  # /proc/net/tcp states that keep a port: LISTEN, bound (CLOSE)


@dataclass(frozen=True, slots=True, kw_only=True)
class ProcInfo:
    """One process of a server's tree; ``create_time`` guards against PID reuse."""

    pid: int
    create_time: float
    cmd: str

    def to_json(self) -> dict[str, Any]:
        """As JSON for the state file."""
        return {"pid": self.pid, "create_time": self.create_time, "cmd": self.cmd}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ProcInfo:
        """From ``to_json()``."""
        return cls(pid=int(data["pid"]), create_time=float(data["create_time"]), cmd=data["cmd"])


@dataclass(frozen=True, slots=True, kw_only=True)
class StopReport:
    """What stopping a server did and how long it took."""

    killed: tuple[int, ...]  # PIDs that were alive when the stop began and are gone now
    survivors: tuple[int, ...]  # PIDs still alive afterwards (should be empty)
    escalated: bool  # SIGKILL was needed after the grace period
    duration_s: float
    port: int | None
    port_free: bool | None  # None when no port is known
    port_holders: tuple[int, ...] = ()  # PIDs outside the tree holding the port, if any

    def to_json(self) -> dict[str, Any]:
        """As a JSON object."""
        return {
            "killed": list(self.killed),
            "survivors": list(self.survivors),
            "escalated": self.escalated,
            "duration_s": round(self.duration_s, 4),
            "port": self.port,
            "port_free": self.port_free,
            "port_holders": list(self.port_holders),
        }

    def line(self) -> str:
        """One line for people."""
        how = "SIGKILL after the grace period" if self.escalated else "SIGTERM"
        text = f"stopped {len(self.killed)} process(es) in {self.duration_s:.2f}s ({how})"
        if self.port is not None and self.port_holders:
            pids = ", ".join(map(str, self.port_holders))
            text += f"; port {self.port} held by pid {pids}, not by this server"
        elif self.port is not None:
            text += f"; port {self.port} " + ("free" if self.port_free else "STILL IN USE")
        if self.survivors:
            text += f"; still alive: {', '.join(map(str, self.survivors))}"
        return text


def _info(proc: psutil.Process) -> ProcInfo | None:
    try:
        return ProcInfo(
            pid=proc.pid,
            create_time=proc.create_time(),
            cmd=" ".join(proc.cmdline())[:300] or proc.name(),
        )
    except psutil.Error:
        return None


def is_alive(info: ProcInfo) -> bool:
    """True while the very process of ``info`` runs (not a zombie, not a reused PID)."""
    return same_process(info.pid, info.create_time)


def snapshot(
    roots: Iterable[int],
    *,
    session: int | None = None,
    marker: str | None = None,
    include_roots: bool = True,
) -> list[ProcInfo]:
    """Every live process of a server's tree, found three ways (see the module doc)."""
    found: dict[int, ProcInfo] = {}
    for root in roots:
        try:
            proc = psutil.Process(root)
        except psutil.Error:
            continue
        members = [proc] if include_roots else []
        with contextlib.suppress(psutil.Error):
            members += proc.children(recursive=True)
        for member in members:
            info = _info(member)
            if info is not None:
                found[info.pid] = info
    me = os.getpid()
    if session is not None:
        for pid in _all_pids():
            if pid in found or pid == me:
                continue
            try:
                if os.getsid(pid) != session:
                    continue
                info = _info(psutil.Process(pid))
            except (OSError, psutil.Error):
                continue
            if info is not None:
                found[info.pid] = info
    if marker is not None:
        # the slow sweep (every process's environment): for processes that left both
        # the tree and the session, e.g. after their parent died
        for proc in psutil.process_iter():
            if proc.pid in found or proc.pid == me:
                continue
            try:
                if proc.environ().get(MARKER_VAR) != marker:
                    continue
            except (psutil.Error, OSError):
                continue
            info = _info(proc)
            if info is not None:
                found[info.pid] = info
    return [info for info in found.values() if is_alive(info)]


def _all_pids() -> list[int]:
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def _signal_group(pgid: int | None, sig: int) -> None:
    if pgid is None or pgid <= 1:
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _member(info: ProcInfo, getter: Any, number: int | None) -> bool:
    """True when the verified process ``info`` is in group / session ``number``."""
    if number is None or not is_alive(info):
        return False
    try:
        return bool(getter(info.pid) == number)
    except OSError:
        return False


def _signal(info: ProcInfo, sig: int) -> None:
    if not is_alive(info):
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(info.pid, sig)


def _wait_gone(infos: Sequence[ProcInfo], timeout_s: float) -> list[ProcInfo]:
    """Wait (on pidfds, no polling) until every process exits or the time is up."""
    fds: dict[int, ProcInfo] = {}
    left: list[ProcInfo] = []
    for info in infos:
        if not is_alive(info):
            continue
        try:
            fds[os.pidfd_open(info.pid)] = info
        except OSError:
            continue
    try:
        poller = select.poll()
        for fd in fds:
            poller.register(fd, select.POLLIN)
        deadline = time.monotonic() + timeout_s
        pending = set(fds)
        while pending:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            for fd, _ in poller.poll(remaining * 1000):
                pending.discard(fd)
                poller.unregister(fd)
        left = [fds[fd] for fd in pending]
    finally:
        for fd in fds:
            os.close(fd)
    # a process that exited but is not reaped yet counts as gone (is_alive says so)
    return [info for info in left if is_alive(info)]


def port_is_free(port: int, host: str = "0.0.0.0") -> bool:
    """True when a server could bind ``port`` now (what the next launch needs)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            if exc.errno in (errno.EADDRINUSE, errno.EACCES):
                return False
            raise
    return True


def port_holders(port: int) -> list[int]:
    """PIDs holding a TCP socket bound to ``port`` (those whose descriptors we may read)."""
    return _port_owners(port)[0]


def named_port_holders(port: int) -> list[tuple[int | None, str]]:
    """(PID, name) of the processes holding ``port``; (None, "?") stands for sockets whose
    owner is not visible (another user's), as ``describe_holders`` expects."""
    pids, unseen = _port_owners(port)
    named: list[tuple[int | None, str]] = []
    for pid in pids:
        try:
            named.append((pid, psutil.Process(pid).name()))
        except psutil.Error:
            named.append((pid, "?"))
    return [*named, (None, "?")] if unseen else named


def _port_owners(port: int) -> tuple[list[int], bool]:
    """The PIDs holding ``port`` (/proc/net/tcp*, then every readable descriptor), and
    whether some of its sockets have no visible owner."""
    inodes: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                rows = f.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()  # sl local_address rem_address st ... inode
            if len(fields) < 10 or fields[3] not in _TCP_HOLDING:
                continue
            if int(fields[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(f"socket:[{fields[9]}]")
    if not inodes:
        return [], False
    holders, seen = [], set()
    for pid in _all_pids():
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue  # gone, or another user's
        held = False
        for fd in fds:
            try:
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if link in inodes:
                seen.add(link)
                held = True
        if held:
            holders.append(pid)
    return holders, seen != inodes


def _confirm_port(port: int, tree: set[int]) -> tuple[bool, tuple[int, ...]]:
    """Whether ``port`` is free after a stop; if not, who outside ``tree`` holds it.

    Waits (``_PORT_WAIT_S`` at most) only while the holder may be the tree's own: a
    survivor, or a socket whose owner cannot be seen. A port that only processes
    outside the tree hold will not come free by waiting.
    """
    deadline = time.monotonic() + _PORT_WAIT_S
    while True:
        if port_is_free(port):
            return True, ()
        holders = port_holders(port)
        foreign = tuple(pid for pid in holders if pid not in tree)
        if (holders and len(foreign) == len(holders)) or time.monotonic() >= deadline:
            return False, foreign
        time.sleep(0.02)


def stop_tree(
    *,
    pid: int,
    pgid: int | None,
    roots: Sequence[int] = (),
    recorded: Sequence[ProcInfo] = (),
    marker: str | None = None,
    grace_s: float = 10.0,
    port: int | None = None,
    main_create_time: float | None = None,
) -> StopReport:
    """Snapshot, SIGTERM the group, wait ``grace_s``, SIGKILL group and survivors.

    With ``main_create_time`` the main process is checked first: when it is gone (its
    PID may belong to another process by now), only the ``recorded`` processes that are
    verifiably the same (create time) are stopped, and the group and session are used
    only while one of those still belongs to them, so a reused number is never hit.
    """
    started = time.monotonic()
    procs = {info.pid: info for info in recorded if is_alive(info)}
    session = pgid
    main_pids = [pid]
    if main_create_time is not None and not is_alive(
        ProcInfo(pid=pid, create_time=main_create_time, cmd="")
    ):
        main_pids = []
        pgid = pgid if any(_member(info, os.getpgid, pgid) for info in procs.values()) else None
        held = any(_member(info, os.getsid, session) for info in procs.values())
        session = session if held else None
    # a live keeper is a subreaper: every orphan of the tree is still its descendant,
    # so the environment sweep is needed only when the keeper is gone
    keeper_alive = any(psutil.pid_exists(root) for root in roots)
    sweep = None if keeper_alive else marker
    for info in snapshot([*main_pids, *roots], session=session, marker=sweep):
        procs[info.pid] = info
    for root in roots:  # the roots given (a keeper) end on their own once the server is gone
        procs.pop(root, None)
    targets = list(procs.values())
    _signal_group(pgid, signal.SIGTERM)
    main = procs.get(pid) if main_pids else None
    if main is not None and (pgid is None or pgid != pid):
        _signal(main, signal.SIGTERM)
    for info in targets:  # processes that left the group (setsid) hear SIGTERM too
        if info is not main and not _member(info, os.getpgid, pgid):
            _signal(info, signal.SIGTERM)
    survivors = _wait_gone(targets, grace_s)
    escalated = bool(survivors)
    if escalated:
        # a fresh look too: children may have been born during the grace period
        for info in snapshot([s.pid for s in survivors], session=session, marker=sweep):
            if info.pid not in procs:
                procs[info.pid] = info
                survivors.append(info)
        _signal_group(pgid, signal.SIGKILL)
        for info in survivors:
            _signal(info, signal.SIGKILL)
        survivors = _wait_gone(survivors, 5.0)
    left = {info.pid for info in survivors}
    port_free, holders = _confirm_port(port, set(procs)) if port is not None else (None, ())
    return StopReport(
        killed=tuple(sorted(p for p in procs if p not in left)),
        survivors=tuple(sorted(left)),
        escalated=escalated,
        duration_s=time.monotonic() - started,
        port=port,
        port_free=port_free,
        port_holders=holders,
    )


def describe_holders(holders: Sequence[tuple[int | None, str]]) -> str:
    """'PID 1234 (python3)' for each holder, or '' when none is visible."""
    return ", ".join(
        f"PID {pid} ({name})" if pid else "a process of another user" for pid, name in holders
    )
