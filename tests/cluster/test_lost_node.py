"""A worker node killed while its start is benchmarking (a head and three GPU nodes)."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.campaign.helpers import query
from tests.cluster.conftest import RayCluster, start_cluster, wait_none_left
from tests.cluster.helpers import attempts, points, write_campaign

pytestmark = [pytest.mark.ray, pytest.mark.timeout(600)]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RayCluster]:
    yield from start_cluster(["H200", "H200", "H200"], tmp_path_factory)


def test_a_node_lost_mid_start_marks_it_lost_and_retries_elsewhere(
    cluster: RayCluster, tmp_path: Path
) -> None:
    """The node of a start that has stored some points is killed: that attempt is lost
    (not a failure of its variant), the start is retried once on another node for the
    measurements it had not sent, every measurement ends up stored exactly once, the
    comparison is made, and no server is left on any node."""
    file = write_campaign(
        # slow points (8 tokens at 30 or 15 ms, 40 requests): after the victim's first
        # point, seconds of its work remain when its node is removed
        tmp_path,
        variants={"baseline": "--itl-ms 30", "fast": "--itl-ms 15"},
        startup_s=2,
        requests=40,
    )
    db, log = tmp_path / "s.db", tmp_path / "stderr.txt"
    argv = ["run", str(file), "--ray", cluster.address, "--db", str(db)]
    with log.open("w") as stderr:
        run = subprocess.Popen(
            [sys.executable, "-m", "servegate", *argv],
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
        )
    try:
        victim = _a_start_with_points(db, run, log)
        cluster.cluster.remove_node(cluster.node_named(str(victim["node"])), allow_graceful=False)
        out, _ = run.communicate(timeout=300)
    finally:
        if run.poll() is None:
            run.kill()
            run.communicate()
    err = log.read_text()
    assert run.returncode == 0, err
    rows = attempts(db)
    lost = [r for r in rows if r["status"] == "lost"]
    assert [r["id"] for r in lost] == [victim["id"]]
    [reason] = query(db, "SELECT reason FROM attempt WHERE id = ?", victim["id"])[0]
    assert str(reason).startswith(f"node {victim['node']} was lost during this start")
    retry = [r for r in rows if r["variant"] == victim["variant"] and r["id"] != victim["id"]]
    assert [r["status"] for r in retry] == ["done"]
    assert retry[0]["node"] != victim["node"]
    assert "retrying" in err
    assert points(db) == {
        (variant, load, repeat)
        for variant in ("baseline", "fast")
        for load in ("c=1", "c=4")
        for repeat in (0, 1)
    }, f"{rows}\n{err}"
    kept = query(db, "SELECT count(*) FROM point WHERE attempt_id = ?", victim["id"])[0][0]
    assert int(str(kept)) >= 1  # what the lost node sent is kept, not measured again
    assert "fast: " in out  # the comparison line
    assert wait_none_left() == []


def _a_start_with_points(db: Path, run: subprocess.Popen[str], log: Path) -> dict[str, object]:
    """The attempt of a start, not on the driver's node, that has stored a point."""
    deadline = time.monotonic() + 240  # a busy machine starts Ray's workers slowly
    while time.monotonic() < deadline:
        assert run.poll() is None, run.communicate()
        if db.exists():
            try:
                rows = attempts(db)
                measured = {
                    int(str(aid)) for (aid,) in query(db, "SELECT DISTINCT attempt_id FROM point")
                }
            except Exception:  # the schema is being created
                rows, measured = [], set()
            driver = re.search(r"the driver is on (\S+)", log.read_text())
            for row in rows:
                ready = row["id"] in measured and row["status"] == "ready"
                if ready and driver is not None and row["node"] != driver.group(1):
                    return row
        time.sleep(0.05)
    pytest.fail("no start stored a point on a node other than the driver's")
