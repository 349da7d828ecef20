"""One runner per database: the claim, its refusal, and taking over from a dead runner."""

from __future__ import annotations

import os
import socket
import sqlite3
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from servegate.errors import RunnerBusyError
from servegate.store import Store
from servegate.store.lock import RunnerInfo, row_alive

from .runners import claimed, claimer


def test_a_live_runner_is_named_and_a_dead_one_is_taken_over(tmp_path: Path) -> None:
    """While a runner lives, a claim raises RunnerBusyError naming its PID and host (exit
    2), and its campaign reads as running; once it is SIGKILLed, the next claim takes
    over and returns it, and its campaign and open attempt read as interrupted."""
    db = tmp_path / "c.db"
    Store.open(db).close()
    with claimer(db) as first, Store.open(db) as store:
        assert claimed(first) == "claimed"
        with pytest.raises(RunnerBusyError) as info:
            store.claim_runner(campaign="other")
        assert f"PID {first.pid} on {socket.gethostname()}" in str(info.value)
        assert info.value.exit_code == 2
        live = store.live_runner()
        assert live is not None and live.pid == first.pid
        info_c = store.find_campaign("c")
        assert info_c is not None and info_c.status == "running"
        assert [a.status for a in store.attempts(info_c.id)] == ["running"]
        first.kill()
        first.wait()
        assert store.live_runner() is None
        assert store.campaign_info(info_c.id).status == "interrupted"
        assert [a.status for a in store.attempts(info_c.id)] == ["interrupted"]
        gone = store.claim_runner(campaign="other")
        assert gone is not None and gone.pid == first.pid
        again = store.live_runner()
        assert again is not None and again.pid == os.getpid()


def test_a_reused_pid_does_not_hold_the_database(tmp_path: Path) -> None:
    """A runner row whose PID now belongs to another live process (another start time)
    is stale: the claim takes over from it."""
    db = tmp_path / "c.db"
    Store.open(db).close()
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        conn = sqlite3.connect(db)
        with conn:
            conn.execute(
                "INSERT INTO runner (id, pid, host, started, campaign, claimed_at) "
                "VALUES (1, ?, ?, ?, 'c', '2020-01-01T00:00:00Z')",
                (other.pid, socket.gethostname(), psutil.Process(other.pid).create_time() - 3600),
            )
        conn.close()
        with Store.open(db) as store:
            gone = store.claim_runner(campaign="c")
        assert gone is not None and gone.pid == other.pid
    finally:
        other.kill()
        other.wait()


def test_row_alive_tells_the_recorded_process_from_a_reused_or_dead_pid() -> None:
    """A row is alive only for its PID with its start time, on this host."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        started = psutil.Process(proc.pid).create_time()
        host = socket.gethostname()

        def row(pid: int, started: float, host: str = host) -> RunnerInfo:
            return RunnerInfo(pid=pid, host=host, started=started, campaign="c", claimed_at="")

        assert row_alive(row(proc.pid, started)) is True
        assert row_alive(row(proc.pid, started - 10)) is False  # the PID was reused
        assert row_alive(row(proc.pid, started, host=host + "-elsewhere")) is True
    finally:
        proc.kill()
        proc.wait()
    assert row_alive(row(proc.pid, started)) is False  # gone


def test_racing_runners_leave_exactly_one_winner(tmp_path: Path) -> None:
    """Four processes claiming one database at the same moment: one wins, three are told
    who did."""
    db = tmp_path / "c.db"
    Store.open(db).close()
    go = tmp_path / "go"
    with (
        claimer(db, str(go)) as a,
        claimer(db, str(go)) as b,
        claimer(db, str(go)) as c,
        claimer(db, str(go)) as d,
    ):
        go.touch()
        said = [claimed(p) for p in (a, b, c, d)]
        winners = [p.pid for p, line in zip((a, b, c, d), said, strict=True) if line == "claimed"]
        assert len(winners) == 1, said
        busy = [line for line in said if line.startswith("busy")]
        assert len(busy) == 3
        assert all(f"PID {winners[0]}" in line for line in busy), said
