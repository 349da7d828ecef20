"""Tracked servers: one JSON file per server in the state folder.

``servegate launch`` records each server it leaves running as ``NAME.json`` under
``$SERVEGATE_STATE_DIR`` (default ``~/.local/state/servegate``) so that ``ps`` can
list it and ``stop`` can end its whole tree later, from another shell.

Files of the folder (all 0600; commands in them are redacted):

- ``NAME.json``: the record. Before its server runs, a *reservation* (the PID of the
  launching process): ``reserve_name`` hands out names under an exclusive lock on
  ``.lock``, so launches started together never share a name.
- ``NAME.status``: written by the server's keeper when the log cannot be written (disk
  full, EIO): the error and how many bytes of output were dropped; and when the server
  exits: its exit code and when. It has a fixed size and is rewritten in place, so
  recording a full disk needs no new disk space.

A server that died stays recorded, and ``ps`` lists it as dead, until ``stop NAME``
or ``ps --prune`` forgets it (``prune_dead``), or a new launch takes its name.
- ``NAME.log``: the server's output, verbatim (unless ``--log`` put it elsewhere).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import signal
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import psutil

from servegate.errors import UsageError
from servegate.launch.tree import ProcInfo, is_alive
from servegate.redact import Redactor

__all__ = [
    "StatusFile",
    "Tracked",
    "list_tracked",
    "load",
    "prune_dead",
    "remove",
    "reserve_name",
    "save",
    "state_dir",
    "status_path",
]

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
STATUS_SIZE = 1024  # bytes of NAME.status, written once at start and then in place


def state_dir() -> Path:
    """The folder of tracked servers (created on first use)."""
    env = os.environ.get("SERVEGATE_STATE_DIR")
    if env:
        path = Path(env)
    else:
        base = os.environ.get("XDG_STATE_HOME") or os.path.join(Path.home(), ".local", "state")
        path = Path(base) / "servegate"
    path.mkdir(parents=True, exist_ok=True)
    return path


def check_name(name: str) -> str:
    """A valid server name, or UsageError naming the rule."""
    if not _NAME.match(name):
        raise UsageError(
            f"invalid --name {name!r}: use letters, digits, '.', '_' or '-' (at most 64)."
        )
    return name


@dataclass(frozen=True, slots=True, kw_only=True)
class Tracked:
    """A server servegate started and still answers for."""

    name: str
    pid: int
    pgid: int
    create_time: float
    keeper_pid: int | None
    command: tuple[str, ...]
    engine: str
    url: str | None
    port: int | None
    log_path: str
    started_at: str
    marker: str
    attached: bool  # True: dies with the process that launched it (Python API, --foreground)
    descendants: tuple[ProcInfo, ...] = ()
    keeper_create_time: float | None = None  # guards keeper_pid against PID reuse
    # from NAME.status: the log could not be written (the server was left running)
    log_error: str | None = None  # e.g. "No space left on device (ENOSPC)"
    log_error_at: str | None = None  # ISO-8601, the first failed write
    log_dropped_bytes: int = 0  # output drained from the server but not in the log
    # from NAME.status: the main process exited (its keeper saw it); None: still running,
    # or the keeper died with it and nothing is known
    exit_code: int | None = None  # -N: killed by signal N
    exited_at: str | None = None  # ISO-8601

    def main(self) -> ProcInfo:
        """The main process, as a ProcInfo."""
        return ProcInfo(pid=self.pid, create_time=self.create_time, cmd=" ".join(self.command))

    def alive(self) -> bool:
        """True while the main process runs."""
        return is_alive(self.main())

    def orphans(self) -> list[ProcInfo]:
        """Snapshotted descendants still running (the very processes: create time checked)."""
        return [d for d in self.descendants if d.pid != self.pid and is_alive(d)]

    def gone(self) -> bool:
        """True once the main process and every snapshotted descendant have ended."""
        return not self.alive() and not self.orphans()

    def state(self) -> str:
        """``running``, ``dead: main exited, N orphan(s) alive`` or ``dead: exited with
        code 1 at TIME``, then any log problem."""
        if self.alive():
            text = "running"
        elif orphans := self.orphans():
            how = "" if self.exit_code is None else f" ({self.exit_detail()})"
            text = f"dead: main exited{how}, {len(orphans)} orphan(s) alive"
        else:
            text = f"dead: {self.ended()}"
        problem = self.log_problem()
        return f"{text}; {problem}" if problem else text

    def ended(self) -> str:
        """How the main process ended: ``exited with code 1 at TIME``, ``killed by
        SIGKILL at TIME``, or ``exited, exit code unknown`` (its keeper died with it)."""
        detail = self.exit_detail()
        if self.exit_code is None:
            return f"exited, {detail}"
        return f"exited with {detail}" if self.exit_code >= 0 else detail

    def exit_detail(self) -> str:
        """``code 1 at TIME``, ``killed by SIGKILL at TIME`` or ``exit code unknown``."""
        if self.exit_code is None:
            return "exit code unknown"
        when = f" at {self.exited_at}" if self.exited_at else ""
        if self.exit_code >= 0:
            return f"code {self.exit_code}{when}"
        try:
            name = signal.Signals(-self.exit_code).name
        except ValueError:
            name = f"signal {-self.exit_code}"
        return f"killed by {name}{when}"

    def log_problem(self) -> str | None:
        """``log write failed: ERROR since TIME; N bytes of output dropped``, or None."""
        if self.log_error is None:
            return None
        since = f" since {self.log_error_at}" if self.log_error_at else ""
        return (
            f"log write failed: {self.log_error}{since}; "
            f"{self.log_dropped_bytes} bytes of output dropped"
        )

    def keeper_roots(self) -> tuple[int, ...]:
        """The keeper's PID while that very keeper runs, else nothing."""
        if self.keeper_pid is None:
            return ()
        if self.keeper_create_time is None:  # a record from before create times were kept
            return (self.keeper_pid,)
        keeper = ProcInfo(pid=self.keeper_pid, create_time=self.keeper_create_time, cmd="")
        return (self.keeper_pid,) if is_alive(keeper) else ()

    def to_json(self) -> dict[str, Any]:
        """As the JSON stored in NAME.json (and printed by ``ps --json``), secrets masked."""
        redactor = Redactor.collect()
        return {
            "name": self.name,
            "pid": self.pid,
            "pgid": self.pgid,
            "create_time": self.create_time,
            "keeper_pid": self.keeper_pid,
            "command": redactor.command(self.command),
            "engine": self.engine,
            "url": None if self.url is None else redactor.text(self.url),
            "port": self.port,
            "log_path": self.log_path,
            "started_at": self.started_at,
            "marker": self.marker,
            "attached": self.attached,
            "descendants": [
                {**d.to_json(), "cmd": " ".join(redactor.command(d.cmd.split(" ")))}
                for d in self.descendants
            ],
            "keeper_create_time": self.keeper_create_time,
            "log_error": self.log_error,
            "log_error_at": self.log_error_at,
            "log_dropped_bytes": self.log_dropped_bytes,
            "exit_code": self.exit_code,
            "exited_at": self.exited_at,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Tracked:
        """From ``to_json()``."""
        return cls(
            name=data["name"],
            pid=int(data["pid"]),
            pgid=int(data["pgid"]),
            create_time=float(data["create_time"]),
            keeper_pid=data.get("keeper_pid"),
            command=tuple(data["command"]),
            engine=data["engine"],
            url=data.get("url"),
            port=data.get("port"),
            log_path=data["log_path"],
            started_at=data["started_at"],
            marker=data["marker"],
            attached=bool(data.get("attached", False)),
            descendants=tuple(ProcInfo.from_json(d) for d in data.get("descendants", [])),
            keeper_create_time=data.get("keeper_create_time"),
            log_error=data.get("log_error"),
            log_error_at=data.get("log_error_at"),
            log_dropped_bytes=int(data.get("log_dropped_bytes") or 0),
            exit_code=data.get("exit_code"),
            exited_at=data.get("exited_at"),
        )

    def with_descendants(self, descendants: tuple[ProcInfo, ...]) -> Tracked:
        """A copy with a fresh snapshot of the tree."""
        return replace(self, descendants=descendants)


def _path(name: str) -> Path:
    return state_dir() / f"{name}.json"


def status_path(name: str) -> Path:
    """Where the keeper of ``name`` records log problems."""
    return state_dir() / f"{name}.status"


def _write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically, readable by its owner only."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def save(tracked: Tracked) -> None:
    """Write NAME.json atomically (0600)."""
    _write_private(_path(tracked.name), json.dumps(tracked.to_json(), indent=1))


def _read_status(name: str) -> dict[str, Any]:
    try:
        text = status_path(name).read_bytes().strip(b" \0\n")
        data = json.loads(text) if text else {}
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def load(name: str) -> Tracked | None:
    """The record of ``name`` with its keeper's status, or None (also for a reservation
    or an unreadable record)."""
    try:
        tracked = Tracked.from_json(json.loads(_path(name).read_text()))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    status = _read_status(name)
    if status.get("log_error"):
        tracked = replace(
            tracked,
            log_error=str(status["log_error"]),
            log_error_at=status.get("log_error_at"),
            log_dropped_bytes=int(status.get("log_dropped_bytes") or 0),
        )
    if isinstance(status.get("exit_code"), int):
        tracked = replace(tracked, exit_code=status["exit_code"], exited_at=status.get("exited_at"))
    return tracked


def remove(name: str) -> str | None:
    """Forget ``name``; return the log problem its keeper recorded (for the stop report)."""
    tracked = load(name)
    for path in (_path(name), status_path(name)):
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
    return None if tracked is None else tracked.log_problem()


def list_tracked(*, prune: bool = False) -> list[Tracked]:
    """Tracked servers by name, the dead ones included (``Tracked.gone()``).

    A server that died (on its own, after READY, or killed) stays recorded until it is
    stopped or pruned, so that ``ps`` can say it died and how; ``prune=True`` forgets
    those first (``prune_dead``). A server whose main process exited while a snapshotted
    descendant (an orphaned worker) still runs is not gone: ``stop`` still ends it.
    Reservations (a launch under way) are not servers and are not listed.
    """
    if prune:
        prune_dead()
    servers = []
    for path in sorted(state_dir().glob("*.json")):
        tracked = load(path.stem)
        if tracked is not None:
            servers.append(tracked)
    return servers


def prune_dead() -> list[Tracked]:
    """Forget every tracked server with no process left; return what was forgotten."""
    forgotten = []
    for path in sorted(state_dir().glob("*.json")):
        tracked = load(path.stem)
        if tracked is not None and tracked.gone():
            remove(tracked.name)
            forgotten.append(tracked)
    return forgotten


@contextlib.contextmanager
def _locked() -> Iterator[None]:
    """Hold the state folder's exclusive lock (released by the kernel if we die)."""
    fd = os.open(state_dir() / ".lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _holds_name(path: Path) -> bool:
    """Whether NAME.json belongs to a live server or a live launch. A stale reservation
    is removed; a dead server's record stays for ps until its name is taken again."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return False  # unreadable: nothing can be stopped through it
    if isinstance(data, dict) and "reserved_by" in data:
        owner = ProcInfo(
            pid=int(data["reserved_by"]), create_time=float(data["reserved_at"]), cmd=""
        )
        if is_alive(owner):
            return True
        remove(path.stem)
        return False
    tracked = load(path.stem)
    if tracked is None:
        remove(path.stem)
        return False
    return not tracked.gone()


def reserve_name(base: str) -> str:
    """Reserve ``base``, or ``base-2``, ``base-3``... if taken; return the name reserved.

    A name is taken by a tracked server with any process left, and by a reservation
    whose launching process still runs; a dead server's record gives its name up (the
    reservation replaces it). The choice and the reservation happen under
    one exclusive lock, so concurrent launches never get the same name. The
    launcher replaces the reservation with the server's record (``save``), or drops it
    (``remove``) when the launch fails; a reservation whose launcher died is reclaimed.
    """
    with _locked():
        taken = {path.stem for path in state_dir().glob("*.json") if _holds_name(path)}
        name, index = base, 2
        while name in taken:
            name, index = f"{base}-{index}", index + 1
        me = psutil.Process()
        reservation = {"name": name, "reserved_by": me.pid, "reserved_at": me.create_time()}
        _write_private(_path(name), json.dumps(reservation))
        with contextlib.suppress(FileNotFoundError):
            status_path(name).unlink()  # an earlier server's, left by a crash
    return name


class StatusFile:
    """NAME.status as its keeper writes it: a fixed-size JSON record rewritten in place.

    Created (and filled with spaces) before the server starts, so that an update later
    needs no new disk block: a full disk can still be reported on that very disk.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        os.write(self._fd, b" " * STATUS_SIZE)

    def write(self, data: dict[str, Any]) -> bool:
        """Replace the record; False when even that failed (the caller carries on)."""
        payload = json.dumps(data).encode()
        if len(payload) > STATUS_SIZE and isinstance(data.get("log_error"), str):
            cut = len(payload) - STATUS_SIZE + 3
            payload = json.dumps({**data, "log_error": data["log_error"][:-cut] + "..."}).encode()
        try:
            os.pwrite(self._fd, payload[:STATUS_SIZE].ljust(STATUS_SIZE), 0)
        except OSError:
            return False
        return True

    def close(self) -> None:
        """Close the file (it stays, for ps and stop)."""
        with contextlib.suppress(OSError):
            os.close(self._fd)
