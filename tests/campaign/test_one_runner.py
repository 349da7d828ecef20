"""One runner per database: a second `servegate run` on a live runner's database refuses."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from tests.campaign.helpers import query, servegate, wait_for_points, write_campaign
from tests.conftest import leftovers


def _points(db: Path) -> dict[object, tuple[object, ...]]:
    rows = query(db, "SELECT id, variant_id, load, repeat, recorded_at, summary FROM point")
    return {row[0]: row[1:] for row in rows}


@pytest.mark.slow
def test_second_run_on_a_live_runners_database_exits_2_and_changes_nothing(
    tmp_path: Path,
) -> None:
    """With a runner alive (here paused, as Ctrl-Z pauses one), `run` and `run --resume`
    on its database exit 2 at once naming its PID and host; the first runner then
    finishes every point, exits 0, and none of its attempts is marked interrupted."""
    path = write_campaign(
        tmp_path,
        """
        [[variant]]
        name = "baseline"

        [[variant]]
        name = "b"
        args = "--itl-ms 6"
        """,
        bench="concurrency = [1]\nrequests = 6\nrepeats = 3",
    )
    db = tmp_path / "c.db"
    first = subprocess.Popen(
        [sys.executable, "-m", "servegate", "run", str(path), "--db", str(db)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    with first:
        try:
            wait_for_points(db, 1)
            os.kill(first.pid, signal.SIGSTOP)
            before = _points(db)
            second = servegate("run", path, "--db", db, timeout=60)
            resumed = servegate("run", path, "--db", db, "--resume", timeout=60)
            after_refusals = _points(db)
        finally:
            os.kill(first.pid, signal.SIGCONT)
        stdout, stderr = first.communicate(timeout=120)
    host = socket.gethostname()
    for out in (second, resumed):
        assert out.returncode == 2, out.stderr
        lines = out.stderr.strip().splitlines()
        assert len(lines) == 1, out.stderr
        assert lines[0].startswith("Error: ")
        assert f"PID {first.pid}" in lines[0]
        assert host in lines[0]
        assert "Traceback" not in out.stderr
    assert after_refusals == before  # the refused runs wrote nothing
    assert first.returncode == 0, stderr
    points = _points(db)
    assert len(points) == 6
    assert {k: points[k] for k in before} == before  # the first runner's points are its own
    statuses = [str(row[0]) for row in query(db, "SELECT status FROM attempt")]
    assert statuses == ["done", "done"]
    assert query(db, "SELECT status FROM campaign") == [("done",)]
    assert "baseline" in stdout
    assert leftovers(grace_s=5) == []
