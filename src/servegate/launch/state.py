"""Tracked servers: one JSON file per server in the state folder.

``servegate launch`` records each server it leaves running as ``NAME.json`` under
``$SERVEGATE_STATE_DIR`` (default ``~/.local/state/servegate``) so that ``ps`` can
list it and ``stop`` can end its whole tree later, from another shell.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from servegate.errors import UsageError
from servegate.launch.tree import ProcInfo, is_alive

__all__ = ["Tracked", "list_tracked", "load", "remove", "save", "state_dir", "unique_name"]

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


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
        """``running``, or ``dead: main exited, N orphan(s) alive``, for ``ps``."""
        if self.alive():
            return "running"
        return f"dead: main exited, {len(self.orphans())} orphan(s) alive"

    def keeper_roots(self) -> tuple[int, ...]:
        """The keeper's PID while that very keeper runs, else nothing."""
        if self.keeper_pid is None:
            return ()
        if self.keeper_create_time is None:  # a record from before create times were kept
            return (self.keeper_pid,)
        keeper = ProcInfo(pid=self.keeper_pid, create_time=self.keeper_create_time, cmd="")
        return (self.keeper_pid,) if is_alive(keeper) else ()

    def to_json(self) -> dict[str, Any]:
        """As the JSON stored in NAME.json."""
        return {
            "name": self.name,
            "pid": self.pid,
            "pgid": self.pgid,
            "create_time": self.create_time,
            "keeper_pid": self.keeper_pid,
            "command": list(self.command),
            "engine": self.engine,
            "url": self.url,
            "port": self.port,
            "log_path": self.log_path,
            "started_at": self.started_at,
            "marker": self.marker,
            "attached": self.attached,
            "descendants": [d.to_json() for d in self.descendants],
            "keeper_create_time": self.keeper_create_time,
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
        )

    def with_descendants(self, descendants: tuple[ProcInfo, ...]) -> Tracked:
        """A copy with a fresh snapshot of the tree."""
        return replace(self, descendants=descendants)


def _path(name: str) -> Path:
    return state_dir() / f"{name}.json"


def save(tracked: Tracked) -> None:
    """Write NAME.json atomically."""
    path = _path(tracked.name)
    tmp = path.with_suffix(f".json.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(tracked.to_json(), indent=1))
    os.replace(tmp, path)


def load(name: str) -> Tracked | None:
    """The record of ``name``, or None (also for an unreadable record)."""
    try:
        return Tracked.from_json(json.loads(_path(name).read_text()))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def remove(name: str) -> None:
    """Forget ``name``."""
    with contextlib.suppress(FileNotFoundError):
        _path(name).unlink()


def list_tracked(*, prune: bool = True) -> list[Tracked]:
    """Tracked servers with any process left, by name; records of gone ones are removed.

    A server whose main process exited stays listed while a snapshotted descendant
    (an orphaned worker) still runs, so that ``stop`` can still end it.
    """
    live = []
    for path in sorted(state_dir().glob("*.json")):
        tracked = load(path.stem)
        if tracked is None:
            continue
        if not tracked.gone():
            live.append(tracked)
        elif prune:
            remove(tracked.name)
    return live


def unique_name(base: str) -> str:
    """``base`` if no live server uses it, else ``base-2``, ``base-3``..."""
    taken = {t.name for t in list_tracked()}
    if base not in taken:
        return base
    index = 2
    while f"{base}-{index}" in taken:
        index += 1
    return f"{base}-{index}"
