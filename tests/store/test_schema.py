"""Schema migrations, version checks and refusal of files the store must not touch."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest

from servegate.errors import StoreVersionError, UsageError
from servegate.store import MIGRATIONS, Migration, Store


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _pragma(path: Path, name: str) -> object:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(f"PRAGMA {name}").fetchone()[0]
    finally:
        conn.close()


def test_new_database_has_every_step_recorded_and_wal(tmp_path: Path) -> None:
    """A new file gets every migration, recorded by name, and is in WAL mode."""
    path = tmp_path / "servegate.db"
    with Store.open(path) as store:
        steps = store.schema_steps()
    assert [(m.version, m.name) for m in MIGRATIONS] == [(v, n) for v, n, _ in steps]
    assert MIGRATIONS[-1].version == _pragma(path, "user_version")
    assert _pragma(path, "journal_mode") == "wal"


def test_reopening_applies_nothing_again(tmp_path: Path) -> None:
    """Opening an up-to-date database leaves its recorded steps as they were."""
    path = tmp_path / "servegate.db"
    with Store.open(path) as store:
        first = store.schema_steps()
    with Store.open(path) as store:
        assert first == store.schema_steps()


def test_an_older_database_is_upgraded_step_by_step(tmp_path: Path) -> None:
    """A database at the newest step gets one more step applied and recorded, and keeps
    its data; a database at step 1 gets every later step."""
    path = tmp_path / "servegate.db"
    with Store.open(path) as store:
        cid = store.campaign("kept", "cfg", "baseline")
    latest = MIGRATIONS[-1].version
    step = Migration(
        version=latest + 1,
        name="campaign notes",
        statements=("ALTER TABLE campaign ADD COLUMN notes TEXT",),
    )
    with Store.open(path, migrations=(*MIGRATIONS, step)) as store:
        names = [n for _, n, _ in store.schema_steps()]
        assert names == [m.name for m in MIGRATIONS] + ["campaign notes"]
        assert store.campaign_info(cid).name == "kept"
    assert _pragma(path, "user_version") == latest + 1

    old = tmp_path / "old.db"
    with Store.open(old, migrations=MIGRATIONS[:1]) as store:
        store.campaign("kept", "cfg", "baseline")
    with Store.open(old) as store:
        assert [v for v, _, _ in store.schema_steps()] == [m.version for m in MIGRATIONS]
        assert [c.name for c in store.campaigns()] == ["kept"]


def test_a_failing_step_is_rolled_back_whole(tmp_path: Path) -> None:
    """A step whose second statement fails leaves no trace of its first statement."""
    path = tmp_path / "servegate.db"
    Store.open(path).close()
    broken = Migration(
        version=MIGRATIONS[-1].version + 1,
        name="broken",
        statements=("CREATE TABLE half (x)", "CREATE TABLE campaign (x)"),
    )
    with pytest.raises(sqlite3.OperationalError):
        Store.open(path, migrations=(*MIGRATIONS, broken))
    assert _pragma(path, "user_version") == MIGRATIONS[-1].version
    conn = sqlite3.connect(path)
    try:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    finally:
        conn.close()
    assert "half" not in tables


def test_a_newer_database_is_refused_and_left_untouched(tmp_path: Path) -> None:
    """A file from a newer servegate raises StoreVersionError; its bytes do not change."""
    path = tmp_path / "servegate.db"
    Store.open(path).close()
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode = DELETE")  # a single file, easy to compare
    conn.execute("PRAGMA user_version = 99")
    conn.close()
    before = _digest(path)
    with pytest.raises(StoreVersionError, match=r"newer servegate \(schema 99"):
        Store.open(path)
    assert before == _digest(path)
    assert _pragma(path, "user_version") == 99
    assert StoreVersionError.exit_code == 2


def test_a_file_that_is_not_sqlite_is_refused_and_left_untouched(tmp_path: Path) -> None:
    """A text file passed as the database is refused with a message naming --db."""
    path = tmp_path / "notes.txt"
    path.write_text("these are my notes, not a database\n" * 50)
    before = _digest(path)
    with pytest.raises(UsageError, match="--db"):
        Store.open(path)
    assert before == _digest(path)


def test_another_programs_database_is_refused(tmp_path: Path) -> None:
    """A SQLite file with foreign tables and no servegate schema is not migrated."""
    path = tmp_path / "other.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE customers (id INTEGER)")
    conn.commit()
    conn.close()
    with pytest.raises(UsageError, match="another program"):
        Store.open(path)
    assert _pragma(path, "user_version") == 0


def test_a_missing_folder_is_a_usage_error(tmp_path: Path) -> None:
    """A --db path in a folder that does not exist names the fix."""
    with pytest.raises(UsageError, match="does not exist"):
        Store.open(tmp_path / "nope" / "servegate.db")
