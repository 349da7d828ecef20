"""A start's series in the campaign store: written, read back, replaced, migrated."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from servegate.store import MIGRATIONS, Store
from servegate.telemetry import Sampler

from .helpers import tree, wait_for


def _attempt(store: Store) -> int:
    cid = store.campaign("c", "[campaign]\n", "base")
    return store.start_attempt(
        cid,
        variant="base",
        server_key="k",
        command=["server"],
        env={},
        host="h",
        versions={},
        git_commit=None,
    )


def test_series_round_trip(tmp_path: Path) -> None:
    """A real tree's series is stored and read back equal (busiest 8 processes kept)."""
    with tree("12") as root:
        assert root.stdout is not None
        root.stdout.readline()
        with Sampler(root.pid, period_s=0.05) as sampler:
            wait_for(sampler, lambda s: s.processes == 12 and s.t_s > 0.2)
    snaps = sampler.snapshots()
    path = tmp_path / "s.db"
    with Store.open(path) as store:
        aid = _attempt(store)
        assert store.record_telemetry(aid, snaps) == len(snaps)
        back = store.telemetry(aid)
        assert [s.t_s for s in back] == [s.t_s for s in snaps]
        assert [s.rss_bytes for s in back] == [s.rss_bytes for s in snaps]
        assert [s.processes for s in back] == [s.processes for s in snaps]
        assert back[-1].procs == snaps[-1].procs[:8]
        assert max(len(s.procs) for s in back) == 8
        assert store.record_telemetry(aid, snaps[:2]) == 2  # a second write replaces
        assert len(store.telemetry(aid)) == 2
        assert store.telemetry(aid + 1) == []
    with sqlite3.connect(path) as conn:
        gpu_cols = conn.execute(
            "SELECT gpu_mem_bytes, gpu_tree_bytes FROM attempt_telemetry"
        ).fetchall()
    conn.close()
    assert gpu_cols == [(0, 0), (0, 0)]  # no GPU here: zeros, not missing rows


def test_older_database_gains_the_table(tmp_path: Path) -> None:
    """A database of the step before is migrated; the stored series then reads back."""
    path = tmp_path / "old.db"
    steps = [m.name for m in MIGRATIONS]
    before = MIGRATIONS[: steps.index("start telemetry")]  # the steps up to telemetry's
    with Store.open(path, migrations=tuple(before)) as store:
        store.campaign("c", "[campaign]\n", "base")
        assert store.telemetry(1) == []  # no table yet: nothing, no error
    with Store.open(path) as store:
        aid = _attempt(store)
        assert "start telemetry" in [name for _, name, _ in store.schema_steps()]
        with Sampler(None, period_s=0.05) as sampler:
            wait_for(sampler, lambda s: s.t_s > 0.1)
        store.record_telemetry(aid, sampler.snapshots())
        assert len(store.telemetry(aid)) == len(sampler.snapshots()) >= 2
