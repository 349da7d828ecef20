"""Fixtures of the report tests: every SQLite connection opened must be closed."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture(autouse=True)
def connections_closed(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[sqlite3.Connection]]:
    """Record every connection opened during the test; fail the test if one stays open."""
    opened: list[sqlite3.Connection] = []
    real_connect = sqlite3.connect

    def tracking_connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        conn = real_connect(*args, **kwargs)
        opened.append(conn)
        return conn

    monkeypatch.setattr(sqlite3, "connect", tracking_connect)
    yield opened
    monkeypatch.undo()
    still_open = []
    for conn in opened:
        try:
            conn.execute("SELECT 1")
        except sqlite3.ProgrammingError:
            continue  # closed, as it should be
        still_open.append(conn)
        conn.close()
    assert not still_open, f"{len(still_open)} SQLite connection(s) left open"


@pytest.fixture(scope="module")
def campaign_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A database holding the constructed four-variant campaign (built once per module)."""
    from .campaign import build

    path = tmp_path_factory.mktemp("db") / "servegate.db"
    build(path)
    return path
