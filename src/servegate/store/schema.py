"""The SQLite schema of the store, as named migration steps, and the code that applies them.

Each step runs in its own transaction together with its row in ``schema_migrations`` and
the new ``PRAGMA user_version``, so a database is always at exactly one recorded step.
A database whose version is newer than the steps this servegate knows is refused before
anything is written to it: an older tool must never rewrite a newer tool's data.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from servegate.errors import StoreVersionError, UsageError
from servegate.store.failures import translate


@dataclass(frozen=True, slots=True, kw_only=True)
class Migration:
    """One recorded schema step: its version (1, 2, ...), a short name, its statements."""

    version: int
    name: str
    statements: tuple[str, ...]


INITIAL = Migration(
    version=1,
    name="initial schema",
    statements=(
        """CREATE TABLE campaign (
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL UNIQUE,
            baseline TEXT NOT NULL,
            config_text TEXT NOT NULL,
            status TEXT NOT NULL DEFAULT 'running',
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL
        )""",
        """CREATE TABLE variant (
            id INTEGER PRIMARY KEY,
            campaign_id INTEGER NOT NULL REFERENCES campaign(id) ON DELETE CASCADE,
            name TEXT NOT NULL,
            position INTEGER NOT NULL,
            UNIQUE (campaign_id, name)
        )""",
        """CREATE TABLE attempt (
            id INTEGER PRIMARY KEY,
            campaign_id INTEGER NOT NULL REFERENCES campaign(id) ON DELETE CASCADE,
            variant_id INTEGER NOT NULL REFERENCES variant(id) ON DELETE CASCADE,
            server_key TEXT NOT NULL,
            cold INTEGER NOT NULL,
            command TEXT NOT NULL,
            env TEXT NOT NULL,
            host TEXT NOT NULL,
            versions TEXT NOT NULL,
            git_commit TEXT,
            status TEXT NOT NULL,
            reason TEXT,
            started_at TEXT NOT NULL,
            ended_at TEXT,
            stop_killed TEXT,
            stop_duration_s REAL,
            stop_port_free INTEGER
        )""",
        "CREATE INDEX attempt_campaign ON attempt (campaign_id)",
        """CREATE TABLE verdict (
            attempt_id INTEGER PRIMARY KEY REFERENCES attempt(id) ON DELETE CASCADE,
            status TEXT NOT NULL,
            elapsed_s REAL NOT NULL,
            detected_by TEXT,
            reason TEXT,
            kind TEXT,
            hint TEXT,
            exit_code INTEGER,
            started_at TEXT,
            decided_at TEXT,
            json TEXT NOT NULL
        )""",
        """CREATE TABLE phase (
            attempt_id INTEGER NOT NULL REFERENCES attempt(id) ON DELETE CASCADE,
            position INTEGER NOT NULL,
            name TEXT NOT NULL,
            start_s REAL NOT NULL,
            end_s REAL,
            PRIMARY KEY (attempt_id, position)
        ) WITHOUT ROWID""",
        """CREATE TABLE point (
            id INTEGER PRIMARY KEY,
            campaign_id INTEGER NOT NULL REFERENCES campaign(id) ON DELETE CASCADE,
            attempt_id INTEGER NOT NULL REFERENCES attempt(id) ON DELETE CASCADE,
            variant_id INTEGER NOT NULL REFERENCES variant(id) ON DELETE CASCADE,
            load TEXT NOT NULL,
            repeat INTEGER NOT NULL,
            recorded_at TEXT NOT NULL,
            completed INTEGER NOT NULL,
            failed INTEGER NOT NULL,
            output_throughput REAL,
            request_throughput REAL,
            ttft_ms_p50 REAL,
            ttft_ms_p99 REAL,
            itl_ms_p50 REAL,
            e2el_ms_p50 REAL,
            failures TEXT NOT NULL,
            summary TEXT NOT NULL,
            server_metrics TEXT NOT NULL,
            warnings TEXT NOT NULL,
            detail TEXT NOT NULL,
            UNIQUE (variant_id, load, repeat)
        )""",
        "CREATE INDEX point_campaign ON point (campaign_id)",
        # a rowid table: rows carry a blob of chunk times, too big for WITHOUT ROWID
        """CREATE TABLE sample (
            id INTEGER PRIMARY KEY,
            point_id INTEGER NOT NULL REFERENCES point(id) ON DELETE CASCADE,
            idx INTEGER NOT NULL,
            send_s REAL,
            ttft_ms REAL,
            e2el_ms REAL,
            output_tokens INTEGER,
            error_kind TEXT,
            chunk_ms BLOB,
            UNIQUE (point_id, idx)
        )""",
    ),
)

RUNNER = Migration(
    version=2,
    name="runner lock",
    statements=(
        # at most one row: the runner writing to this database (see store/lock.py)
        """CREATE TABLE runner (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            pid INTEGER NOT NULL,
            host TEXT NOT NULL,
            started REAL NOT NULL,
            campaign TEXT NOT NULL,
            claimed_at TEXT NOT NULL
        )""",
    ),
)

STARTS = Migration(
    version=3,
    name="start order and failed variants",
    statements=(
        # the seed of the campaign's start order, so that --resume continues the same order
        "ALTER TABLE campaign ADD COLUMN start_seed INTEGER",
        # which start of its server configuration an attempt is (1, 2, ...; NULL before)
        "ALTER TABLE attempt ADD COLUMN start INTEGER",
        # the variants a failed attempt's failure belongs to; none: the whole server start
        """CREATE TABLE attempt_failure (
            attempt_id INTEGER NOT NULL REFERENCES attempt(id) ON DELETE CASCADE,
            variant_id INTEGER NOT NULL REFERENCES variant(id) ON DELETE CASCADE,
            PRIMARY KEY (attempt_id, variant_id)
        ) WITHOUT ROWID""",
        # earlier runners named them only in the reason: "could not benchmark a, b"
        """INSERT OR IGNORE INTO attempt_failure (attempt_id, variant_id)
            SELECT a.id, v.id FROM attempt a JOIN variant v ON v.campaign_id = a.campaign_id
            WHERE a.status = 'failed'
            AND substr(a.reason, 1, 20) = 'could not benchmark '
            AND instr(
                ', ' || substr(
                    CASE WHEN instr(a.reason, char(10)) > 0
                    THEN substr(a.reason, 1, instr(a.reason, char(10)) - 1)
                    ELSE a.reason END, 21) || ', ',
                ', ' || v.name || ', ') > 0""",
        # ... and "server died during the benchmark (after NAME c=16 repeat 2): ..."
        """INSERT OR IGNORE INTO attempt_failure (attempt_id, variant_id)
            SELECT a.id, (
                SELECT v.id FROM variant v WHERE v.campaign_id = a.campaign_id AND (
                    instr(a.reason, 'server died during the benchmark (before ' || v.name || ' ')
                        = 1
                    OR instr(a.reason, 'server died during the benchmark (after ' || v.name || ' ')
                        = 1)
                ORDER BY length(v.name) DESC LIMIT 1)
            FROM attempt a
            WHERE a.status = 'failed'
            AND instr(a.reason, 'server died during the benchmark (') = 1""",
    ),
)

TELEMETRY = Migration(
    version=4,
    name="start telemetry",
    statements=(
        # the flight recorder's series of one start (servegate.telemetry.Snapshot): the
        # totals as columns, the busiest processes and each GPU as JSON in ``detail``
        """CREATE TABLE attempt_telemetry (
            attempt_id INTEGER NOT NULL REFERENCES attempt(id) ON DELETE CASCADE,
            idx INTEGER NOT NULL,
            t_s REAL NOT NULL,
            cpu_pct REAL NOT NULL,
            rss_bytes INTEGER NOT NULL,
            threads INTEGER NOT NULL,
            processes INTEGER NOT NULL,
            read_bps REAL NOT NULL,
            write_bps REAL NOT NULL,
            net_rx_bps REAL NOT NULL,
            gpu_mem_bytes INTEGER NOT NULL,
            gpu_tree_bytes INTEGER NOT NULL,
            detail TEXT NOT NULL,
            PRIMARY KEY (attempt_id, idx)
        ) WITHOUT ROWID""",
    ),
)

PLACEMENT = Migration(
    version=5,
    name="node and GPU model of each attempt",
    statements=(
        # where a start ran: the cluster node (NULL: the machine the runner runs on) and
        # the GPU model it measured on (NULL: not known); comparisons pair GPU models
        "ALTER TABLE attempt ADD COLUMN node TEXT",
        "ALTER TABLE attempt ADD COLUMN gpu_model TEXT",
    ),
)

CAPACITY = Migration(
    version=6,
    name="capacity of each start's search",
    statements=(
        # find_max: the capacity one start's probes found (servegate.bench.capacity's JSON,
        # with the crash that bounded it); its probes are points of the same attempt
        """CREATE TABLE capacity (
            variant_id INTEGER NOT NULL REFERENCES variant(id) ON DELETE CASCADE,
            start INTEGER NOT NULL,
            attempt_id INTEGER NOT NULL REFERENCES attempt(id) ON DELETE CASCADE,
            json TEXT NOT NULL,
            PRIMARY KEY (variant_id, start)
        ) WITHOUT ROWID""",
    ),
)

# Every step this version knows, oldest first; a new step is appended, never edited.
# A database opened read-only (a report in a read-only folder) is not migrated: reads
# must not need what a later step adds, or must do without it.
MIGRATIONS: tuple[Migration, ...] = (
    INITIAL,
    RUNNER,
    STARTS,
    TELEMETRY,
    PLACEMENT,
    CAPACITY,
)

_BOOKKEEPING = """CREATE TABLE IF NOT EXISTS schema_migrations (
    version INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    applied_at TEXT NOT NULL
)"""


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def user_version(conn: sqlite3.Connection) -> int:
    """The database's ``PRAGMA user_version`` (0 for a new or foreign file)."""
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def check_readable(conn: sqlite3.Connection, path: str, migrations: Sequence[Migration]) -> int:
    """Return the database's version, or raise if this servegate must not touch it.

    Runs only reads, so a refused database is left exactly as it was.
    """
    try:
        version = user_version(conn)
        tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master")}
    except sqlite3.Error as exc:
        error = translate(exc, path)
        if error is None:
            raise
        raise error from None
    known = migrations[-1].version if migrations else 0
    if version > known:
        raise StoreVersionError(
            f"{path} was written by a newer servegate (schema {version}, this one knows "
            f"up to {known}); upgrade servegate or pass another file with --db."
        )
    if version == 0 and tables - {"schema_migrations"}:
        raise UsageError(
            f"{path} is a SQLite database of another program; pass a new file with --db."
        )
    return version


def migrate(
    conn: sqlite3.Connection,
    migrations: Sequence[Migration] = MIGRATIONS,
    *,
    now: Callable[[], str] = _now,
) -> list[str]:
    """Apply the steps the database lacks, each in one transaction; return their names.

    ``conn`` must be in autocommit mode (``isolation_level=None``). A step that fails is
    rolled back whole, and the steps before it stay applied.
    """
    current = user_version(conn)
    applied: list[str] = []
    for step in migrations:
        if step.version <= current:
            continue
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute(_BOOKKEEPING)
            for statement in step.statements:
                conn.execute(statement)
            conn.execute(
                "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
                (step.version, step.name, now()),
            )
            # PRAGMA takes no parameters; the version is an int from our own table
            conn.execute(f"PRAGMA user_version = {int(step.version)}")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        current = step.version
        applied.append(step.name)
    return applied
