"""Campaigns on a real Ray cluster (a head and two GPU nodes on this machine).

Parallel starts on distinct nodes, the same comparisons as a serial run of the same
campaign, Ctrl-C on the driver (every server gone, the attempts interrupted) and
``--resume`` after it, and bad input refused before anything starts.
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.campaign.helpers import query
from tests.cluster.conftest import RayCluster, servegate_processes, start_cluster, wait_none_left
from tests.cluster.helpers import attempts, calls, points, report, servegate, write_campaign

pytestmark = [pytest.mark.ray, pytest.mark.timeout(600)]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RayCluster]:
    yield from start_cluster(["H200", "H200"], tmp_path_factory)


def test_starts_run_in_parallel_and_compare_as_a_serial_run(
    cluster: RayCluster, tmp_path: Path
) -> None:
    """Three starts on two GPU nodes: two servers are up at once, on distinct nodes, each
    attempt records its node and GPU model, and the comparisons (which variant is compared
    with what, and the calls on TPOT) are those of the same campaign run serially."""
    # 40 requests a point: each server serves for seconds after READY, so two starts
    # scheduled on two nodes overlap even when one Ray worker is slow to come up
    file = write_campaign(tmp_path, startup_s=3.0, requests=40)
    ray_db, serial_db = tmp_path / "ray.db", tmp_path / "serial.db"
    done = servegate("run", file, "--ray", cluster.address, "--db", ray_db)
    assert done.returncode == 0, done.stderr
    rows = attempts(ray_db)
    assert [r["status"] for r in rows] == ["done"] * 3
    workers = {f"/{node.node_id[:8]}" for node in cluster.workers}
    assert all(r["node"][-9:] in workers and r["gpu_model"] == "H200" for r in rows)
    both_up = [
        (a, b)
        for a in rows
        for b in rows
        if a["id"] < b["id"]
        and a["node"] != b["node"]
        # each server was READY before the other one ended: they served at the same time
        and a["ready"] < b["ended"]
        and b["ready"] < a["ended"]
    ]
    assert both_up, rows
    # progress names the node and GPU model of each start, and its phases
    assert "queued for a node with 1 GPU (H200)" in done.stderr
    assert "round 1: 3 start(s) on the cluster at once, 12 measurement(s)" in done.stderr
    for row in rows:
        assert f"{row['variant']} on {row['node']} (H200): launching" in done.stderr
    # when a start ends, where the others stand: "cluster: slow on NODE: benchmarking"
    phases = "queued|preflight|launching|benchmarking|stopping"
    assert re.search(rf"^cluster: \w+( on \S+)?: ({phases})", done.stderr, re.M), done.stderr

    serial = servegate("run", file, "--db", serial_db)
    assert serial.returncode == 0, serial.stderr
    assert points(ray_db) == points(serial_db)
    on_ray, alone = report(ray_db, "ray"), report(serial_db, "ray")
    keys = {(c["variant"], c["reference"], c["load"], c["metric"]) for c in on_ray["comparisons"]}
    assert keys == {
        (c["variant"], c["reference"], c["load"], c["metric"]) for c in alone["comparisons"]
    }
    tpot = calls(on_ray, "tpot_ms_p50")
    assert tpot == calls(alone, "tpot_ms_p50")
    # one start a variant: no call ("needs more starts"), the estimate still shows the way
    assert {v: tpot[(v, "baseline", "c=1")] for v in ("fast", "slow")} == {
        "fast": "needs more starts",
        "slow": "needs more starts",
    }
    ratio = {
        c["variant"]: c["estimate"]["ratio"]
        for c in on_ray["comparisons"]
        if (c["metric"], c["load"]) == ("tpot_ms_p50", "c=1")
    }
    assert ratio["fast"] < 0.9 and ratio["slow"] > 1.1, ratio


@pytest.mark.parametrize(
    ("signum", "when"), [(signal.SIGINT, "launching"), (signal.SIGTERM, "benchmarking")]
)
def test_ctrl_c_or_sigterm_stops_every_server_on_every_node_and_resume_finishes(
    cluster: RayCluster, tmp_path: Path, signum: int, when: str
) -> None:
    """Ctrl-C while both nodes start their servers, or SIGTERM once a point is stored:
    exit 128 + the signal, every server on every node gone, the running attempts and the
    campaign interrupted, what was measured kept; --resume measures the rest, once."""
    file = write_campaign(
        tmp_path, variants={"baseline": "", "fast": "--itl-ms 2"}, startup_s=6, requests=40
    )
    db = tmp_path / "s.db"
    argv = ["run", str(file), "--ray", cluster.address, "--db", str(db)]
    run = subprocess.Popen(
        [sys.executable, "-m", "servegate", *argv],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        # Ray places the first starts slowly on a loaded machine (more than 120 s beside
        # two CPU burners once): the deadline only ends a run that never gets there
        deadline = time.monotonic() + 360
        while not _reached(when, db):
            assert run.poll() is None, run.communicate()
            assert time.monotonic() < deadline, f"the campaign never reached {when}"
            time.sleep(0.05)
        run.send_signal(signum)
        _, err = run.communicate(timeout=120)
    finally:
        if run.poll() is None:
            run.kill()
            run.communicate()
    assert run.returncode == 128 + signum, err
    assert "start(s) on the cluster" in err
    assert wait_none_left() == []
    statuses = [r["status"] for r in attempts(db)]
    assert "interrupted" in statuses and set(statuses) <= {"interrupted", "done"}, statuses
    assert query(db, "SELECT status FROM campaign") == [("interrupted",)]
    kept = points(db)
    assert (len(kept) > 0) == (when == "benchmarking")

    # the cluster this machine belongs to, found by Ray
    done = servegate("run", file, "--ray", "auto", "--db", db, "--resume")
    assert done.returncode == 0, done.stderr
    assert "Ray cluster at auto: 3 node(s), 2 fit a server (GPU=1): 2 x H200" in done.stderr
    assert len(points(db)) == 2 * 2 * 2  # variants x loads x repeats
    assert f"({8 - len(kept)} measured, {len(kept)} already stored)" in done.stderr


def _reached(when: str, db: Path) -> bool:
    """Both servers are starting (``launching``), or a point is stored (``benchmarking``)."""
    if when == "launching":
        sims = [p for p in servegate_processes() if "servegate sim" in " ".join(p.cmdline())]
        return len(sims) == 2
    try:
        return bool(points(db))
    except Exception:  # no database, or its schema, yet
        return False


def test_bad_cluster_input_is_refused_before_anything_starts(
    cluster: RayCluster, tmp_path: Path
) -> None:
    """An address nothing listens on, and servers no node can hold, exit 2 with one
    sentence naming the fix; no database row, no process."""
    file = write_campaign(tmp_path)
    nowhere = servegate("run", file, "--ray", "127.0.0.1:1", "--db", tmp_path / "a.db")
    assert nowhere.returncode == 2
    assert nowhere.stderr.startswith("Error: cannot reach the Ray cluster at 127.0.0.1:1")
    assert "ray start --head" in nowhere.stderr
    big = write_campaign(tmp_path, name="big", extra_server="resources = { nvlink = 1 }")
    refused = servegate("run", big, "--ray", cluster.address, "--db", tmp_path / "b.db")
    assert refused.returncode == 2
    assert "no node of the Ray cluster" in refused.stderr
    assert "(GPU=1, nvlink=1)" in refused.stderr
    assert not (tmp_path / "a.db").exists()
    assert not (tmp_path / "b.db").exists()
    assert servegate_processes() == []


def test_a_node_with_another_servegate_is_refused(
    cluster: RayCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each node's servegate version is asked by a task on it before anything starts; a
    driver of another version is refused, naming the node and both versions."""
    import ray

    from servegate._version import __version__ as installed
    from servegate.campaign import cluster as cluster_module
    from servegate.campaign import load_campaign
    from servegate.errors import UsageError

    plan = load_campaign(write_campaign(tmp_path))
    monkeypatch.setattr(cluster_module, "__version__", "0.0.1")
    with pytest.raises(UsageError) as caught:
        cluster_module.connect(cluster.address, plan)
    said = f"has servegate {installed}, this driver 0.0.1; install the same version on every node"
    assert said in str(caught.value)
    assert not ray.is_initialized()  # the driver left the cluster it joined
