"""The per-user history of server starts: one row per plain ``launch`` or ``wait``.

Where: ``$SERVEGATE_HISTORY`` (a file path), else ``$XDG_DATA_HOME/servegate/history.db``,
else ``~/.local/share/servegate/history.db``. Each row keeps the configuration key
(engine, the command with secrets masked and the port replaced by ``{port}``, host,
GPU model), the verdict, each phase's span and progress, cold or warm, and the startup
record (caches, page cache, ETA against actual). The ETA of the next start of the same
configuration, and ``--timeout auto``, are read from it (servegate.startup.eta).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import socket
import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from servegate.errors import StoreDamagedError, UsageError
from servegate.redact import Redactor

__all__ = [
    "ConfigKey",
    "History",
    "StartRow",
    "config_key",
    "gpu_model",
    "history_path",
]

_SCHEMA = 1
# SQLite's primary result codes for a file it cannot read as a database
_SQLITE_CORRUPT = 11
_SQLITE_NOTADB = 26
_DDL = """
CREATE TABLE IF NOT EXISTS starts (
    id INTEGER PRIMARY KEY,
    started_at TEXT NOT NULL,
    config_key TEXT NOT NULL,
    engine TEXT NOT NULL,
    command TEXT NOT NULL,
    host TEXT NOT NULL,
    gpu TEXT,
    via TEXT NOT NULL,
    status TEXT NOT NULL,
    kind TEXT,
    reason TEXT NOT NULL,
    elapsed_s REAL NOT NULL,
    cold INTEGER,
    phases TEXT NOT NULL,
    startup TEXT NOT NULL,
    telemetry TEXT
);
CREATE INDEX IF NOT EXISTS starts_by_config ON starts (config_key, id);
"""


def history_path(env: Mapping[str, str] | None = None) -> Path:
    """The history database's path (see the module's docstring)."""
    env = os.environ if env is None else env
    given = env.get("SERVEGATE_HISTORY")
    if given:
        return Path(os.path.expanduser(given))
    data = env.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(data) / "servegate" / "history.db"


def gpu_model() -> str | None:
    """The GPUs NVML sees, e.g. ``8x NVIDIA H200``; None without NVML or a GPU."""
    try:
        from servegate.telemetry.nvml import Nvml

        nvml = Nvml.open()
    except Exception:  # no library, no driver, no GPU: all mean "none"
        return None
    if nvml is None:
        return None
    try:
        with nvml:
            names = [nvml.name(index) for index in range(nvml.count)]
    except Exception:  # a GPU that NVML cannot name: none
        return None
    kinds = sorted(set(names))
    return ", ".join(f"{names.count(kind)}x {kind}" for kind in kinds)


@dataclass(frozen=True, slots=True, kw_only=True)
class ConfigKey:
    """What makes two starts comparable: the same engine, command, host and GPUs."""

    engine: str
    command: tuple[str, ...]  # secrets masked, the port as {port}
    host: str
    gpu: str | None

    @property
    def key(self) -> str:
        """A short stable hash of the four."""
        text = json.dumps([self.engine, list(self.command), self.host, self.gpu])
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def _port_free(command: Sequence[str]) -> list[str]:
    out = list(command)
    for index, arg in enumerate(out):
        if arg == "--port" and index + 1 < len(out):
            out[index + 1] = "{port}"
        elif arg.startswith("--port="):
            out[index] = "--port={port}"
    return out


def config_key(
    engine: str,
    command: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    gpu: str | None = None,
) -> ConfigKey:
    """The configuration key of a start (secrets in ``command`` and ``env`` masked)."""
    shown = Redactor.collect(envs=[env or {}], commands=[command]).command(command)
    return ConfigKey(
        engine=engine, command=tuple(_port_free(shown)), host=socket.gethostname(), gpu=gpu
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class StartRow:
    """One recorded start."""

    id: int
    started_at: str
    config_key: str
    engine: str
    command: tuple[str, ...]
    host: str
    gpu: str | None
    via: str  # launch | wait
    status: str
    kind: str | None
    reason: str
    elapsed_s: float
    cold: bool | None
    phases: tuple[dict[str, Any], ...]
    startup: dict[str, Any]

    def phase_durations(self) -> dict[str, float]:
        """Each closed phase's duration in seconds (a repeated name: summed)."""
        out: dict[str, float] = {}
        for phase in self.phases:
            if phase.get("end_s") is not None:
                duration = float(phase["end_s"]) - float(phase["start_s"])
                out[phase["name"]] = out.get(phase["name"], 0.0) + max(0.0, duration)
        return out

    def to_json(self) -> dict[str, Any]:
        """The row as a JSON object."""
        return {
            "id": self.id,
            "started_at": self.started_at,
            "config_key": self.config_key,
            "engine": self.engine,
            "command": list(self.command),
            "host": self.host,
            "gpu": self.gpu,
            "via": self.via,
            "status": self.status,
            "kind": self.kind,
            "reason": self.reason,
            "elapsed_s": self.elapsed_s,
            "cold": self.cold,
            "phases": list(self.phases),
            "startup": self.startup,
        }


class History:
    """The history database; ``History.open()`` creates it (and its folder) if needed."""

    def __init__(self, conn: sqlite3.Connection, path: Path) -> None:
        self._conn = conn
        self.path = path

    def _unusable(self, exc: Exception) -> UsageError:
        """One sentence for a history that failed a read or a write (a UsageError, so that
        a start goes on with a warning, and ``history`` exits 2 saying what is wrong)."""
        code = getattr(exc, "sqlite_errorcode", None)
        if not isinstance(exc, sqlite3.Error) or (
            code is not None and int(code) & 0xFF in (_SQLITE_CORRUPT, _SQLITE_NOTADB)
        ):
            what = exc if isinstance(exc, sqlite3.Error) else f"a row cannot be read: {exc!r}"
            return StoreDamagedError(
                f"the start history {self.path} is damaged ({what}): move it away (sqlite3 "
                "FILE .recover saves what is readable) or set SERVEGATE_HISTORY to another file."
            )
        return UsageError(
            f"cannot use the start history {self.path} ({exc}): free the disk or the file, "
            "or set SERVEGATE_HISTORY to another file."
        )

    @classmethod
    def open(cls, path: Path | None = None, *, create: bool = True) -> History:
        """Open (or create) the database; UsageError naming the fix when it cannot."""
        path = path or history_path()
        try:
            if create:
                path.parent.mkdir(parents=True, exist_ok=True)
            elif not path.exists():
                raise UsageError(
                    f"no start history at {path} yet: launch a server with servegate launch "
                    "first, or point SERVEGATE_HISTORY at an existing history file."
                )
            conn = sqlite3.connect(str(path), timeout=10.0)
        except (OSError, sqlite3.Error) as exc:
            raise UsageError(
                f"cannot open the start history {path}: {exc}; set SERVEGATE_HISTORY to a "
                "writable file path."
            ) from None
        try:
            conn.row_factory = sqlite3.Row
            version = int(conn.execute("PRAGMA user_version").fetchone()[0])
            if version > _SCHEMA:
                raise UsageError(
                    f"the start history {path} was written by a newer servegate (schema "
                    f"{version}): upgrade servegate or set SERVEGATE_HISTORY to another file."
                )
            if create and version < _SCHEMA:
                with conn:
                    conn.executescript(_DDL)
                    conn.execute(f"PRAGMA user_version = {_SCHEMA}")
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise UsageError(
                f"the start history {path} is not a usable SQLite file ({exc}): move it away "
                "or set SERVEGATE_HISTORY to another file."
            ) from None
        except BaseException:
            conn.close()
            raise
        return cls(conn, path)

    def close(self) -> None:
        """Close the connection."""
        self._conn.close()

    def __enter__(self) -> History:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def record(
        self,
        key: ConfigKey,
        *,
        via: str,
        verdict: Mapping[str, Any],
        cold: bool | None,
        startup: Mapping[str, Any],
        telemetry: Mapping[str, Any] | None = None,
    ) -> int:
        """Add one start (``verdict``: a ``servegate.verdict/1`` object); its row id."""
        try:
            return self._insert(
                key, via=via, verdict=verdict, cold=cold, startup=startup, telemetry=telemetry
            )
        except sqlite3.Error as exc:
            raise self._unusable(exc) from None

    def _insert(
        self,
        key: ConfigKey,
        *,
        via: str,
        verdict: Mapping[str, Any],
        cold: bool | None,
        startup: Mapping[str, Any],
        telemetry: Mapping[str, Any] | None,
    ) -> int:
        with self._conn:
            cursor = self._conn.execute(
                "INSERT INTO starts (started_at, config_key, engine, command, host, gpu, via, "
                "status, kind, reason, elapsed_s, cold, phases, startup, telemetry) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    verdict["started_at"],
                    key.key,
                    key.engine,
                    json.dumps(list(key.command)),
                    key.host,
                    key.gpu,
                    via,
                    verdict["status"],
                    verdict.get("kind"),
                    verdict.get("reason") or "",
                    float(verdict["elapsed_s"]),
                    None if cold is None else int(cold),
                    json.dumps(verdict.get("phases") or []),
                    json.dumps(startup),
                    None if telemetry is None else json.dumps(telemetry),
                ),
            )
        return int(cursor.lastrowid or 0)

    def starts(
        self,
        *,
        config: str | None = None,
        engine: str | None = None,
        status: str | None = None,
        limit: int | None = None,
    ) -> list[StartRow]:
        """Past starts, newest first, filtered by configuration key (or its prefix),
        engine and status."""
        where, args = [], []
        if config:
            where.append("config_key LIKE ?")
            args.append(config.replace("%", "") + "%")
        if engine:
            where.append("engine = ?")
            args.append(engine)
        if status:
            where.append("status = ?")
            args.append(status)
        sql = "SELECT * FROM starts"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY id DESC"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        try:
            return [_row(r) for r in self._conn.execute(sql, args)]
        except (sqlite3.Error, ValueError, TypeError, KeyError) as exc:
            # a damaged page, or a row whose columns are not what servegate wrote
            raise self._unusable(exc) from None


def _row(r: sqlite3.Row) -> StartRow:
    phases = json.loads(r["phases"])
    startup = json.loads(r["startup"])
    command = json.loads(r["command"])
    if not (
        isinstance(phases, list)
        and all(isinstance(p, dict) for p in phases)
        and isinstance(startup, dict)
        and isinstance(command, list)
    ):
        raise ValueError(f"start #{r['id']} holds columns of the wrong type")
    return StartRow(
        id=int(r["id"]),
        started_at=r["started_at"],
        config_key=r["config_key"],
        engine=r["engine"],
        command=tuple(str(arg) for arg in command),
        host=r["host"],
        gpu=r["gpu"],
        via=r["via"],
        status=r["status"],
        kind=r["kind"],
        reason=r["reason"],
        elapsed_s=float(r["elapsed_s"]),
        cold=None if r["cold"] is None else bool(r["cold"]),
        phases=tuple(phases),
        startup=startup,
    )


@contextlib.contextmanager
def opened(path: Path | None = None, *, create: bool = True) -> Iterator[History]:
    """``with opened() as history:``: open, then always close."""
    history = History.open(path, create=create)
    try:
        yield history
    finally:
        history.close()
