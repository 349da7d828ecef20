"""The campaign store: one SQLite file holding every attempt, verdict, phase and measurement.

Written as things happen, one transaction per result, in WAL mode so that a report can
read while a campaign runs and a SIGKILLed runner loses at most the result in flight.
``done_points`` is what lets ``servegate run --resume`` skip finished measurements.
Text is redacted again at the door (secret names, the inherited environment's secret
values, URL credentials): a token in a database file travels with every report.

    with Store.open("servegate.db") as store:
        cid = store.campaign("fusion", config_text, baseline="baseline")
        aid = store.start_attempt(cid, variant="baseline", server_key=key, command=argv,
                                  env=env, host="local", versions={}, git_commit=None)
        store.record_verdict(aid, verdict)
        store.record_point(aid, variant="baseline", load="c=16", repeat=0, result=result)
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any

import numpy as np

from servegate.bench import metrics
from servegate.errors import RunnerBusyError, UsageError
from servegate.redact import Redactor, scrub
from servegate.store.failures import (
    SQLITE_CANTOPEN,
    guarded,
    primary_code,
    read_only_error,
    translate,
    writable_problem,
)
from servegate.store.inputs import PointRecord, PointRow, StopRecord, VerdictRecord, stop_fields
from servegate.store.lock import RunnerInfo, RunnerLock, busy_message, row_alive
from servegate.store.records import (
    AttemptInfo,
    CampaignInfo,
    CapacityInfo,
    PhaseInfo,
    PointInfo,
    Samples,
    clean_json,
    decode_chunks,
    dumps,
    encode_chunks,
    number,
    sample_row,
)
from servegate.store.schema import MIGRATIONS, Migration, check_readable, migrate
from servegate.store.status import AttemptStatus, CampaignStatus
from servegate.telemetry.model import GpuSample, ProcSample, Snapshot
from servegate.telemetry.sampler import trimmed

# the statuses as plain strings (see servegate.store.status for what each means)
CAMPAIGN_STATUSES = frozenset(CampaignStatus)
ATTEMPT_STATUSES = frozenset(AttemptStatus)
# summary keys copied into their own columns, for queries without JSON
_KEY_COLUMNS = (
    "output_throughput",
    "request_throughput",
    "ttft_ms_p50",
    "ttft_ms_p99",
    "itl_ms_p50",
    "e2el_ms_p50",
)
_SELECT_CAMPAIGN = (
    "SELECT id, name, baseline, status, created_at, updated_at, config_text FROM campaign "
)
_INSERT_POINT = (
    "INSERT INTO point (campaign_id, attempt_id, variant_id, load, repeat, recorded_at, "
    "completed, failed, output_throughput, request_throughput, ttft_ms_p50, ttft_ms_p99, "
    "itl_ms_p50, e2el_ms_p50, failures, summary, server_metrics, warnings, detail) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


def _utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def _connect_read_only(target: Path) -> sqlite3.Connection:
    """A read-only connection to ``target``, also in a folder that cannot be written.

    A WAL database needs its -shm file; where SQLite can neither open nor create it (a
    read-only folder, nothing left open by a writer) the file is opened as immutable,
    which is exact when no -wal file holds results that are not in the database yet.
    """
    uri = target.resolve().as_uri()
    conn = sqlite3.connect(f"{uri}?mode=ro", uri=True, isolation_level=None, timeout=10.0)
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return conn
    except sqlite3.Error as exc:
        conn.close()
        if primary_code(exc) != SQLITE_CANTOPEN:
            error = translate(exc, target)
            if error is None:
                raise
            raise error from None
    wal = target.with_name(target.name + "-wal")
    if wal.exists() and wal.stat().st_size > 0:
        raise UsageError(
            f"{target} has results in {wal.name} that SQLite reads only with write access "
            f"to {target.resolve().parent}; copy {target.name} and {wal.name} to a writable "
            "folder and pass that copy with --db."
        )
    return sqlite3.connect(f"{uri}?immutable=1", uri=True, isolation_level=None)


class Store:
    """A servegate database; open it with ``Store.open(path)`` as a context manager."""

    def __init__(
        self,
        conn: sqlite3.Connection,
        path: str,
        now: Callable[[], str],
        *,
        read_only: bool = False,
    ) -> None:
        self._conn = conn
        self.path = path
        self._now = now
        self.read_only = read_only
        self._lock = RunnerLock(path)
        self._runner: RunnerInfo | None = None  # this process, while it is the runner

    # --- lifecycle ---------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        path: str | Path,
        *,
        now: Callable[[], str] | None = None,
        migrations: Sequence[Migration] = MIGRATIONS,
        read_only: bool = False,
    ) -> Store:
        """Open (or create) the database at ``path`` and bring its schema up to date.

        ``read_only`` opens an existing database for reading only, without migrating
        it; in a folder where SQLite cannot create its -wal and -shm files it is opened
        as immutable (a report of results on read-only media).

        Raises ``StoreVersionError`` for a database from a newer servegate,
        ``StoreDamagedError`` for a damaged one, and ``UsageError`` for a file that is
        not a servegate database or a folder that cannot be written; none is altered.
        """
        target = Path(path)
        if not target.parent.is_dir():
            raise UsageError(f"the folder of {target} does not exist; create it or change --db.")
        if target.is_dir():
            raise UsageError(f"{target} is a folder; pass a database file with --db.")
        if read_only:
            if not target.is_file():
                raise UsageError(f"no database at {target}; pass an existing one with --db.")
            conn = _connect_read_only(target)
            try:
                if check_readable(conn, str(target), migrations) == 0:
                    # empty, or never migrated: nothing to read, and it must not be written
                    raise UsageError(
                        f"{target} holds no servegate results; pass a database written "
                        "by servegate run with --db."
                    )
                conn.execute("PRAGMA busy_timeout = 10000")
            except BaseException:
                conn.close()
                raise
            return cls(conn, str(target), now or _utc_now, read_only=True)
        if target.exists():
            # check with a read-only connection first: a refused file is never written
            probe = _connect_read_only(target)
            try:
                check_readable(probe, str(target), migrations)
            finally:
                probe.close()
            if not os.access(target, os.W_OK) or writable_problem(target.resolve().parent):
                raise read_only_error(target)
        elif writable_problem(target.resolve().parent):
            raise read_only_error(target)
        conn = sqlite3.connect(str(target), isolation_level=None, timeout=10.0)
        try:
            check_readable(conn, str(target), migrations)
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA foreign_keys = ON")
            conn.execute("PRAGMA busy_timeout = 10000")
            migrate(conn, migrations)
        except sqlite3.Error as exc:
            conn.close()
            error = translate(exc, target)
            if error is None:
                raise
            raise error from None
        except BaseException:
            conn.close()
            raise
        return cls(conn, str(target), now or _utc_now)

    def close(self) -> None:
        """Close the connection (giving up the runner claim); the store is then unusable."""
        try:
            self.release_runner()
        finally:
            self._conn.close()
            self._lock.close()  # only now: see RunnerLock

    def __enter__(self) -> Store:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        """One write transaction: all of it lands, or none of it."""
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            yield self._conn
            self._conn.execute("COMMIT")
        except BaseException:
            # SQLite may have rolled back already (a full disk, an I/O error)
            if self._conn.in_transaction:
                with suppress(sqlite3.Error):
                    self._conn.execute("ROLLBACK")
            raise

    # --- the one runner ----------------------------------------------------------------

    @guarded
    def claim_runner(self, *, campaign: str) -> RunnerInfo | None:
        """Make this process the database's one runner; return the dead runner it replaced.

        Raises ``RunnerBusyError`` (naming the live runner's PID and host) when another
        runner is alive; a runner that died, or whose PID now belongs to another
        process, is replaced.
        """
        if self._runner is not None:
            return None
        if self._lock.held_elsewhere():  # at once, without waiting for a write lock
            holder = self._read_runner()
            if holder is not None:  # else it is claiming now: its commit is waited for below
                raise RunnerBusyError(busy_message(self.path, holder))
        me = RunnerInfo.current(campaign=campaign, claimed_at=self._now())
        try:
            with self._tx() as conn:  # racing runners pass here one at a time
                previous = self._read_runner()
                held = self._lock.acquire()
                if held is False or (held is None and previous is not None and row_alive(previous)):
                    raise RunnerBusyError(busy_message(self.path, previous))
                conn.execute(
                    "INSERT OR REPLACE INTO runner (id, pid, host, started, campaign, claimed_at) "
                    "VALUES (1, ?, ?, ?, ?, ?)",
                    (me.pid, me.host, me.started, me.campaign, me.claimed_at),
                )
        except BaseException:
            self._lock.release()
            raise
        self._runner = me
        return previous

    def release_runner(self) -> None:
        """Give up the claim: the row goes, and with the lock the next runner may start.

        Never raises: on a full disk the row stays, and the free lock tells the next
        runner that it is stale.
        """
        me, self._runner = self._runner, None
        if me is None:
            return
        try:
            with self._tx() as conn:
                conn.execute(
                    "DELETE FROM runner WHERE id = 1 AND pid = ? AND host = ? AND started = ?",
                    (me.pid, me.host, me.started),
                )
        except sqlite3.Error:
            pass
        finally:
            self._lock.release()

    @guarded
    def live_runner(self) -> RunnerInfo | None:
        """The runner writing to this database now (this process included), or None."""
        if self._runner is not None:
            return self._runner
        held = self._lock.held_elsewhere()
        if held is False:
            return None
        info = self._read_runner()
        if held is None and (info is None or not row_alive(info)):
            return None
        return info or RunnerInfo(pid=0, host="?", started=0.0, campaign="", claimed_at="")

    def _read_runner(self) -> RunnerInfo | None:
        try:
            row = _named(
                self._conn,
                "SELECT pid, host, started, campaign, claimed_at FROM runner WHERE id = 1",
            ).fetchone()
        except sqlite3.OperationalError as exc:
            if "no such table" in str(exc):  # a read-only database from before the table
                return None
            raise
        if row is None:
            return None
        return RunnerInfo(
            pid=int(row["pid"]),
            host=str(row["host"]),
            started=float(row["started"]),
            campaign=str(row["campaign"]),
            claimed_at=str(row["claimed_at"]),
        )

    @guarded
    def schema_steps(self) -> list[tuple[int, str, str]]:
        """The recorded migration steps: (version, name, applied_at), oldest first."""
        rows = self._conn.execute(
            "SELECT version, name, applied_at FROM schema_migrations ORDER BY version"
        )
        return [(int(v), str(n), str(a)) for v, n, a in rows]

    # --- campaigns and variants --------------------------------------------------------

    @guarded
    def campaign(self, name: str, config_text: str, baseline: str) -> int:
        """Get or create the campaign called ``name``; return its id.

        An existing campaign keeps its results; its config text and baseline are
        replaced by the ones given (the file as it is now) and its status set to running.
        """
        now = self._now()
        config_text = scrub(config_text)
        with self._tx() as conn:
            row = _named(conn, "SELECT id FROM campaign WHERE name = ?", (name,)).fetchone()
            if row is not None:
                conn.execute(
                    "UPDATE campaign SET config_text = ?, baseline = ?, status = 'running', "
                    "updated_at = ? WHERE id = ?",
                    (config_text, baseline, now, row["id"]),
                )
                return int(row["id"])
            cur = conn.execute(
                "INSERT INTO campaign (name, baseline, config_text, status, created_at, "
                "updated_at) VALUES (?, ?, ?, 'running', ?, ?)",
                (name, baseline, config_text, now, now),
            )
            cid = int(cur.lastrowid or 0)
            self._variant_id(conn, cid, baseline)
            return cid

    @guarded
    def set_campaign_status(self, cid: int, status: CampaignStatus) -> None:
        """Mark a campaign running, done, interrupted or failed."""
        if status not in CAMPAIGN_STATUSES:
            raise ValueError(f"campaign status {status!r} not in {sorted(CAMPAIGN_STATUSES)}")
        with self._tx() as conn:
            conn.execute(
                "UPDATE campaign SET status = ?, updated_at = ? WHERE id = ?",
                (str(status), self._now(), cid),
            )

    @guarded
    def campaigns(self) -> list[CampaignInfo]:
        """Every stored campaign, newest first."""
        rows = _named(self._conn, _SELECT_CAMPAIGN + "ORDER BY created_at DESC, id DESC")
        return [self._campaign_now(row) for row in rows]

    @guarded
    def find_campaign(self, name: str) -> CampaignInfo | None:
        """The campaign called ``name``, or None."""
        row = _named(self._conn, _SELECT_CAMPAIGN + "WHERE name = ?", (name,)).fetchone()
        return None if row is None else self._campaign_now(row)

    @guarded
    def campaign_info(self, cid: int) -> CampaignInfo:
        """The campaign with id ``cid`` (KeyError when there is none)."""
        row = _named(self._conn, _SELECT_CAMPAIGN + "WHERE id = ?", (cid,)).fetchone()
        if row is None:
            raise KeyError(cid)
        return self._campaign_now(row)

    def _campaign_now(self, row: sqlite3.Row) -> CampaignInfo:
        """The stored campaign, shown interrupted when it is 'running' with no live runner.

        A runner killed with SIGKILL, or stopped by a full disk, cannot write its
        campaign's last status; the runner lock says whether it is still at work.
        """
        info = _campaign_info(row)
        if info.status is CampaignStatus.RUNNING and not self._runs(info.name):
            return dataclasses.replace(info, status=CampaignStatus.INTERRUPTED)
        return info

    def _runs(self, campaign: str) -> bool:
        """Whether a live runner is running ``campaign`` in this database now."""
        live = self.live_runner()
        return live is not None and live.campaign == campaign

    @guarded
    def add_variant(self, cid: int, name: str) -> int:
        """Declare a variant (get-or-create), so reports list it even before it runs."""
        with self._tx() as conn:
            return self._variant_id(conn, cid, name)

    @guarded
    def variants(self, cid: int) -> list[str]:
        """The campaign's variant names in the order they were declared or first ran."""
        rows = _named(
            self._conn,
            "SELECT name FROM variant WHERE campaign_id = ? ORDER BY position, id",
            (cid,),
        )
        return [str(row["name"]) for row in rows]

    @staticmethod
    def _variant_id(conn: sqlite3.Connection, cid: int, name: str) -> int:
        row = _named(
            conn, "SELECT id FROM variant WHERE campaign_id = ? AND name = ?", (cid, name)
        ).fetchone()
        if row is not None:
            return int(row["id"])
        position = conn.execute(
            "SELECT COALESCE(MAX(position) + 1, 0) FROM variant WHERE campaign_id = ?", (cid,)
        ).fetchone()[0]
        cur = conn.execute(
            "INSERT INTO variant (campaign_id, name, position) VALUES (?, ?, ?)",
            (cid, name, position),
        )
        return int(cur.lastrowid or 0)

    # --- attempts ----------------------------------------------------------------------

    @guarded
    def start_attempt(
        self,
        cid: int,
        *,
        variant: str,
        server_key: str,
        command: Sequence[str],
        env: Mapping[str, str],
        host: str,
        versions: Mapping[str, Any],
        git_commit: str | None,
        start: int | None = None,
        node: str | None = None,
        gpu_model: str | None = None,
    ) -> int:
        """Record that a server is being launched for ``variant``; return the attempt id.

        ``start`` numbers the starts of one server configuration (1, 2, ... with
        ``restarts``); ``node`` and ``gpu_model`` say where it runs (a cluster node and
        its GPU model; None: the runner's own machine, the model not known).

        ``server_key`` names the server configuration (same command and env, same key):
        an attempt is the cold start unless an earlier one with this key came up READY
        (an attempt stopped by preflight, or that crashed, warmed no cache).
        Secret-looking env values and flag values are redacted before they are stored.
        """
        redactor = Redactor.collect()
        with self._tx() as conn:
            vid = self._variant_id(conn, cid, variant)
            earlier = conn.execute(
                "SELECT 1 FROM attempt a JOIN verdict v ON v.attempt_id = a.id "
                "WHERE a.campaign_id = ? AND a.server_key = ? AND v.status = 'ready' LIMIT 1",
                (cid, server_key),
            ).fetchone()
            cur = conn.execute(
                "INSERT INTO attempt (campaign_id, variant_id, server_key, cold, command, env, "
                "host, versions, git_commit, status, started_at, start, node, gpu_model) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'running', ?, ?, ?, ?)",
                (
                    cid,
                    vid,
                    server_key,
                    int(earlier is None),
                    dumps(redactor.command(command)),
                    dumps(redactor.env(env)),
                    scrub(host),
                    dumps(dict(versions)),
                    git_commit,
                    self._now(),
                    start,
                    None if node is None else scrub(node),
                    gpu_model,
                ),
            )
            return int(cur.lastrowid or 0)

    @guarded
    def record_verdict(self, aid: int, verdict: VerdictRecord | Mapping[str, Any]) -> None:
        """Store the gate's verdict (a ``Verdict`` or its JSON object) and its phases.

        The attempt's status becomes the verdict's: ready, crash or timeout.
        """
        data = scrub(clean_json(verdict if isinstance(verdict, Mapping) else verdict.to_json()))
        status = AttemptStatus(data.get("status") or AttemptStatus.CRASH)
        phases: list[Mapping[str, Any]] = data.get("phases") or []
        with self._tx() as conn:
            conn.execute("DELETE FROM verdict WHERE attempt_id = ?", (aid,))
            conn.execute("DELETE FROM phase WHERE attempt_id = ?", (aid,))
            conn.execute(
                "INSERT INTO verdict (attempt_id, status, elapsed_s, detected_by, reason, kind, "
                "hint, exit_code, started_at, decided_at, json) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    aid,
                    str(status),
                    number(data.get("elapsed_s")) or 0.0,
                    data.get("detected_by"),
                    data.get("reason"),
                    data.get("kind"),
                    data.get("hint"),
                    data.get("exit_code"),
                    data.get("started_at"),
                    data.get("decided_at"),
                    dumps(data),
                ),
            )
            for position, span in enumerate(phases):
                conn.execute(
                    "INSERT INTO phase (attempt_id, position, name, start_s, end_s) "
                    "VALUES (?, ?, ?, ?, ?)",
                    (
                        aid,
                        position,
                        str(span.get("name")),
                        number(span.get("start_s")) or 0.0,
                        number(span.get("end_s")),
                    ),
                )
            conn.execute(
                "UPDATE attempt SET status = ?, reason = ? WHERE id = ?",
                (str(status), data.get("reason"), aid),
            )

    @guarded
    def record_telemetry(self, aid: int, snapshots: Sequence[Snapshot]) -> int:
        """Store a start's sampled series (``verdict.snapshots``), replacing any before.

        The totals go in columns; each snapshot's busiest processes (at most 8) and its
        GPUs go in ``detail`` as JSON. Returns the number of snapshots stored.
        """
        rows = []
        for idx, snap in enumerate(trimmed(snapshots)):
            detail = {
                "procs": [p.to_json() for p in snap.procs],
                "gpus": [g.to_json() for g in snap.gpus],
            }
            rows.append(
                (
                    aid,
                    idx,
                    snap.t_s,
                    snap.cpu_pct,
                    snap.rss_bytes,
                    snap.threads,
                    snap.processes,
                    snap.read_bps,
                    snap.write_bps,
                    snap.net_rx_bps,
                    sum(g.mem_used_bytes for g in snap.gpus),
                    sum(g.mem_tree_bytes for g in snap.gpus),
                    json.dumps(detail, separators=(",", ":")),
                )
            )
        with self._tx() as conn:
            conn.execute("DELETE FROM attempt_telemetry WHERE attempt_id = ?", (aid,))
            conn.executemany(
                "INSERT INTO attempt_telemetry (attempt_id, idx, t_s, cpu_pct, rss_bytes, "
                "threads, processes, read_bps, write_bps, net_rx_bps, gpu_mem_bytes, "
                "gpu_tree_bytes, detail) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                rows,
            )
        return len(rows)

    @guarded
    def telemetry(self, aid: int) -> list[Snapshot]:
        """A start's stored series, oldest first; [] when none (or an older database)."""
        if not self._has_table("attempt_telemetry"):
            return []
        out = []
        for row in _named(
            self._conn,
            "SELECT t_s, cpu_pct, rss_bytes, threads, processes, read_bps, write_bps, "
            "net_rx_bps, detail FROM attempt_telemetry WHERE attempt_id = ? ORDER BY idx",
            (aid,),
        ):
            detail = json.loads(row["detail"])
            out.append(
                Snapshot(
                    t_s=row["t_s"],
                    cpu_pct=row["cpu_pct"],
                    rss_bytes=row["rss_bytes"],
                    threads=row["threads"],
                    processes=row["processes"],
                    read_bps=row["read_bps"],
                    write_bps=row["write_bps"],
                    net_rx_bps=row["net_rx_bps"],
                    procs=tuple(ProcSample.from_json(p) for p in detail.get("procs", ())),
                    gpus=tuple(GpuSample.from_json(g) for g in detail.get("gpus", ())),
                )
            )
        return out

    def _has_table(self, table: str) -> bool:
        """Whether ``table`` exists (a read-only database may predate it)."""
        row = self._conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)
        ).fetchone()
        return row is not None

    @guarded
    def record_stop(self, aid: int, stop: StopRecord | Mapping[str, Any]) -> None:
        """Store how the server was stopped: killed pids, seconds taken, port free again."""
        killed, duration_s, port_free = stop_fields(stop)
        with self._tx() as conn:
            conn.execute(
                "UPDATE attempt SET stop_killed = ?, stop_duration_s = ?, stop_port_free = ?, "
                "ended_at = COALESCE(ended_at, ?) WHERE id = ?",
                (
                    dumps(sorted(killed)),
                    number(duration_s),
                    None if port_free is None else int(bool(port_free)),
                    self._now(),
                    aid,
                ),
            )

    @guarded
    def finish_attempt(
        self,
        aid: int,
        status: AttemptStatus,
        reason: str | None = None,
        *,
        failed_variants: Sequence[str] = (),
    ) -> None:
        """Close an attempt with its final status (done, failed, interrupted, ...).

        ``failed_variants``: with status ``failed``, the variants the failure belongs to
        (a benchmark that failed for some variants of a shared server); none means the
        whole server start failed.
        """
        if status not in ATTEMPT_STATUSES:
            raise ValueError(f"attempt status {status!r} not in {sorted(ATTEMPT_STATUSES)}")
        with self._tx() as conn:
            conn.execute(
                "UPDATE attempt SET status = ?, reason = COALESCE(?, reason), ended_at = ? "
                "WHERE id = ?",
                (str(status), scrub(reason), self._now(), aid),
            )
            row = _named(conn, "SELECT campaign_id FROM attempt WHERE id = ?", (aid,)).fetchone()
            for name in failed_variants if row is not None else ():
                conn.execute(
                    "INSERT OR IGNORE INTO attempt_failure (attempt_id, variant_id) VALUES (?, ?)",
                    (aid, self._variant_id(conn, int(row["campaign_id"]), name)),
                )

    @guarded
    def start_seed(self, cid: int, seed: int | None = None) -> int | None:
        """The seed of the campaign's start order: ``seed`` is recorded when given
        (a new run), and the recorded one returned (None: never recorded)."""
        if seed is not None:
            with self._tx() as conn:
                conn.execute("UPDATE campaign SET start_seed = ? WHERE id = ?", (seed, cid))
        if not self._has_column("campaign", "start_seed"):
            return None
        row = _named(self._conn, "SELECT start_seed FROM campaign WHERE id = ?", (cid,)).fetchone()
        return None if row is None or row["start_seed"] is None else int(row["start_seed"])

    def _has_column(self, table: str, column: str) -> bool:
        """Whether ``table`` has ``column`` (a read-only database may predate it)."""
        rows = _named(self._conn, f"PRAGMA table_info({table})").fetchall()
        return any(row["name"] == column for row in rows)

    @guarded
    def mark_interrupted(self, cid: int, reason: str = "the runner stopped") -> int:
        """Close attempts left open by a runner that died; return how many there were.

        Call it when resuming: an attempt still ``running`` or ``ready`` without an end
        time belongs to a runner that can no longer finish it.
        """
        with self._tx() as conn:
            cur = conn.execute(
                "UPDATE attempt SET status = 'interrupted', reason = COALESCE(reason, ?), "
                "ended_at = ? WHERE campaign_id = ? AND ended_at IS NULL "
                "AND status IN ('running', 'ready')",
                (scrub(reason), self._now(), cid),
            )
            return int(cur.rowcount)

    @guarded
    def attempts(self, cid: int) -> list[AttemptInfo]:
        """Every attempt of the campaign in launch order, with verdicts and phases."""
        phases: dict[int, list[PhaseInfo]] = {}
        failures: dict[int, list[str]] = {}
        starts = self._has_column("attempt", "start")  # no: read-only, from before step 3
        placed = self._has_column("attempt", "node")  # no: read-only, from before step 5
        if starts:
            for aid, name in self._conn.execute(
                "SELECT f.attempt_id, v.name FROM attempt_failure f "
                "JOIN attempt a ON a.id = f.attempt_id JOIN variant v ON v.id = f.variant_id "
                "WHERE a.campaign_id = ? ORDER BY f.attempt_id, v.position, v.id",
                (cid,),
            ):
                failures.setdefault(int(aid), []).append(str(name))
        for aid, name, start, end in self._conn.execute(
            "SELECT p.attempt_id, p.name, p.start_s, p.end_s FROM phase p "
            "JOIN attempt a ON a.id = p.attempt_id WHERE a.campaign_id = ? "
            "ORDER BY p.attempt_id, p.position",
            (cid,),
        ):
            phases.setdefault(int(aid), []).append(PhaseInfo(name=name, start_s=start, end_s=end))
        rows = _named(
            self._conn,
            "SELECT a.id, v.name AS variant, a.server_key, a.cold, a.command, a.env, a.host, "
            "a.versions, a.git_commit, a.status, a.reason, a.started_at, a.ended_at, "
            "d.json AS verdict, a.stop_killed, a.stop_duration_s, a.stop_port_free, "
            + ("a.start, " if starts else "NULL AS start, ")
            + ("a.node, a.gpu_model " if placed else "NULL AS node, NULL AS gpu_model ")
            + "FROM attempt a JOIN variant v ON v.id = a.variant_id "
            "LEFT JOIN verdict d ON d.attempt_id = a.id "
            "WHERE a.campaign_id = ? ORDER BY a.started_at, a.id",
            (cid,),
        ).fetchall()
        name = _named(self._conn, "SELECT name FROM campaign WHERE id = ?", (cid,)).fetchone()
        # attempts left open count as interrupted once no runner is at work on them
        stopped = name is None or not self._runs(str(name["name"]))
        out = []
        for row in rows:
            aid = int(row["id"])
            status = AttemptStatus(row["status"])
            unfinished = status in (AttemptStatus.RUNNING, AttemptStatus.READY)
            open_ = unfinished and row["ended_at"] is None
            if stopped and open_:
                status = AttemptStatus.INTERRUPTED
            out.append(
                AttemptInfo(
                    id=aid,
                    variant=row["variant"],
                    server_key=row["server_key"],
                    cold=bool(row["cold"]),
                    command=tuple(json.loads(row["command"])),
                    env=json.loads(row["env"]),
                    host=row["host"],
                    versions=json.loads(row["versions"]),
                    git_commit=row["git_commit"],
                    status=status,
                    reason=row["reason"],
                    started_at=row["started_at"],
                    ended_at=row["ended_at"],
                    verdict=None if row["verdict"] is None else json.loads(row["verdict"]),
                    phases=tuple(phases.get(aid, ())),
                    stop_killed=_json_tuple(row["stop_killed"]),
                    stop_duration_s=row["stop_duration_s"],
                    stop_port_free=_maybe_bool(row["stop_port_free"]),
                    start=None if row["start"] is None else int(row["start"]),
                    failed_variants=tuple(failures.get(aid, ())),
                    node=row["node"],
                    gpu_model=row["gpu_model"],
                )
            )
        return out

    # --- measurements ------------------------------------------------------------------

    @guarded
    def record_point(
        self,
        aid: int,
        *,
        variant: str,
        load: str,
        repeat: int,
        result: PointRecord | Mapping[str, Any],
    ) -> int:
        """Store one measured load point with its per-request samples; return its id.

        One transaction: the point and all its samples land together. Recording the same
        (variant, load, repeat) again replaces the earlier measurement.
        """
        point = PointRow.of(result)
        summary, failures = point.summary, point.failures
        rows = [sample_row(s) for s in point.samples]
        sends = [r.send_s for r in rows if r.send_s is not None]
        first_send = min(sends) if sends else 0.0
        with self._tx() as conn:
            cid_row = _named(
                conn, "SELECT campaign_id FROM attempt WHERE id = ?", (aid,)
            ).fetchone()
            if cid_row is None:
                raise KeyError(aid)
            cid = int(cid_row["campaign_id"])
            vid = self._variant_id(conn, cid, variant)
            conn.execute(
                "DELETE FROM point WHERE variant_id = ? AND load = ? AND repeat = ?",
                (vid, load, repeat),
            )
            cur = conn.execute(
                _INSERT_POINT,
                (
                    cid,
                    aid,
                    vid,
                    load,
                    int(repeat),
                    self._now(),
                    int(
                        point.completed
                        if point.completed is not None
                        else sum(r.error_kind is None for r in rows)
                    ),
                    int(point.failed if point.failed is not None else sum(failures.values())),
                    *(number(summary.get(key)) for key in _KEY_COLUMNS),
                    dumps({str(k): int(v) for k, v in failures.items()}),
                    dumps(summary),
                    dumps(point.server_metrics),
                    dumps(scrub(list(point.warnings))),
                    dumps(scrub(point.detail)),
                ),
            )
            pid = int(cur.lastrowid or 0)
            conn.executemany(
                "INSERT INTO sample (point_id, idx, send_s, ttft_ms, e2el_ms, output_tokens, "
                "error_kind, chunk_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    (
                        pid,
                        idx,
                        None if r.send_s is None else r.send_s - first_send,
                        r.ttft_ms,
                        r.e2el_ms,
                        r.output_tokens,
                        r.error_kind,
                        encode_chunks(r.chunk_ms),
                    )
                    for idx, r in enumerate(rows)
                ),
            )
            return pid

    @guarded
    def done_points(self, cid: int) -> set[tuple[str, str, int]]:
        """The (variant, load, repeat) measurements already stored for the campaign; a
        finished capacity search is (variant, ``find-max``, start - 1)."""
        rows = self._conn.execute(
            "SELECT v.name, p.load, p.repeat FROM point p JOIN variant v ON v.id = p.variant_id "
            "WHERE p.campaign_id = ?",
            (cid,),
        )
        done = {(str(v), str(load), int(rep)) for v, load, rep in rows}
        return done | {(c.variant, "find-max", c.start - 1) for c in self.capacities(cid)}

    @guarded
    def record_capacity(
        self, aid: int, *, variant: str, start: int, data: Mapping[str, Any]
    ) -> None:
        """Store the capacity that start ``start`` of ``variant`` found (its search's
        JSON), with the attempt whose server ran its last probe; replaces an earlier one."""
        with self._tx() as conn:
            row = _named(conn, "SELECT campaign_id FROM attempt WHERE id = ?", (aid,)).fetchone()
            if row is None:
                raise KeyError(aid)
            vid = self._variant_id(conn, int(row["campaign_id"]), variant)
            conn.execute(
                "INSERT OR REPLACE INTO capacity (variant_id, start, attempt_id, json) "
                "VALUES (?, ?, ?, ?)",
                (vid, int(start), aid, dumps(scrub(dict(data)))),
            )

    @guarded
    def capacities(self, cid: int) -> list[CapacityInfo]:
        """The capacity of every finished search, by variant and start (none before the
        capacity step, read-only)."""
        if not self._has_table("capacity"):
            return []
        rows = _named(
            self._conn,
            "SELECT v.name AS variant, c.start, c.attempt_id, c.json FROM capacity c "
            "JOIN variant v ON v.id = c.variant_id WHERE v.campaign_id = ? "
            "ORDER BY v.position, c.start",
            (cid,),
        )
        return [
            CapacityInfo(
                variant=row["variant"],
                start=int(row["start"]),
                attempt_id=int(row["attempt_id"]),
                data=json.loads(row["json"]),
            )
            for row in rows
        ]

    @guarded
    def points(self, cid: int) -> list[PointInfo]:
        """Every stored point of the campaign, by variant, load and repeat."""
        rows = _named(
            self._conn,
            "SELECT p.id, p.attempt_id, v.name AS variant, p.load, p.repeat, p.recorded_at, "
            "p.completed, p.failed, p.failures, p.summary, p.server_metrics, p.warnings, p.detail "
            "FROM point p JOIN variant v ON v.id = p.variant_id WHERE p.campaign_id = ? "
            "ORDER BY v.position, p.load, p.repeat",
            (cid,),
        )
        return [
            PointInfo(
                id=int(row["id"]),
                attempt_id=int(row["attempt_id"]),
                variant=row["variant"],
                load=row["load"],
                repeat=int(row["repeat"]),
                recorded_at=row["recorded_at"],
                completed=int(row["completed"]),
                failed=int(row["failed"]),
                failures=json.loads(row["failures"]),
                summary=json.loads(row["summary"]),
                server_metrics=json.loads(row["server_metrics"]),
                warnings=tuple(json.loads(row["warnings"])),
                detail=json.loads(row["detail"]),
            )
            for row in rows
        ]

    @guarded
    def samples(self, point_ids: Iterable[int]) -> Samples:
        """The per-request samples of the given points, pooled (completed requests only)."""
        ids = [int(i) for i in point_ids]
        ttft: list[float] = []
        e2el: list[float] = []
        tokens: list[float] = []
        chunks: list[np.ndarray[Any, np.dtype[np.float64]]] = []
        errors: dict[str, int] = {}
        for point_id in ids:
            for t, e, n, kind, blob in self._conn.execute(
                "SELECT ttft_ms, e2el_ms, output_tokens, error_kind, chunk_ms FROM sample "
                "WHERE point_id = ? ORDER BY idx",
                (point_id,),
            ):
                if kind is not None:
                    errors[kind] = errors.get(kind, 0) + 1
                    continue
                ttft.append(math.nan if t is None else t)
                e2el.append(math.nan if e is None else e)
                tokens.append(math.nan if n is None else n)
                chunks.append(decode_chunks(blob))
        return Samples(
            ttft_ms=np.asarray(ttft, dtype=np.float64),
            e2el_ms=np.asarray(e2el, dtype=np.float64),
            output_tokens=np.asarray(tokens, dtype=np.float64),
            itl_ms=metrics.itl(chunks),
            errors=errors,
        )


def _named(conn: sqlite3.Connection, sql: str, params: Sequence[object] = ()) -> sqlite3.Cursor:
    """``conn.execute``, its rows read by column name (``row["status"]``), never by place."""
    cursor = conn.cursor()
    cursor.row_factory = sqlite3.Row
    return cursor.execute(sql, params)


def _json_tuple(text: str | None) -> tuple[Any, ...] | None:
    return None if text is None else tuple(json.loads(text))


def _maybe_bool(value: int | None) -> bool | None:
    return None if value is None else bool(value)


def _campaign_info(row: sqlite3.Row) -> CampaignInfo:
    return CampaignInfo(
        id=int(row["id"]),
        name=row["name"],
        baseline=row["baseline"],
        status=CampaignStatus(row["status"]),
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        config_text=row["config_text"],
    )
