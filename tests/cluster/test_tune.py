"""servegate tune on a real Ray cluster (a head and two GPU nodes on this machine): the
trials two at a time, one on each node; Ctrl-C and --resume measure no finished trial
twice."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest
from tests.campaign.test_tune import CAMPAIGN
from tests.cluster.conftest import RayCluster, start_cluster, wait_none_left

from servegate.store import Store

pytest.importorskip("optuna")
pytestmark = [pytest.mark.ray, pytest.mark.timeout(600)]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RayCluster]:
    yield from start_cluster(["H200", "H200"], tmp_path_factory)


def _events(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_tune_on_the_cluster_interrupted_and_resumed_measures_no_trial_twice(
    cluster: RayCluster, tmp_path: Path
) -> None:
    """Ctrl-C after the first trials: exit 130, no server left on the node; --resume goes
    on to the budget with every start on the cluster's node, redoing only the trial in
    flight."""
    text = CAMPAIGN.format(requests=400, extra="--itl-ms 20", cache=tmp_path / "cache")
    text = text.replace("timeout_s = 60\n", "timeout_s = 60\ngpus = 1\n", 1)
    assert "gpus = 1" in text
    path = tmp_path / "search.toml"
    path.write_text(text + f'\n[cluster]\nray = "{cluster.address}"\n')
    db = tmp_path / "t.db"
    log = tmp_path / "trials.jsonl"
    argv = [sys.executable, "-m", "servegate", "tune", str(path), "--db", str(db)]
    argv += ["--max-trials", "4", "--events-file", str(log), "-q"]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=tmp_path)  # fmt: skip
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:  # until the baseline and one trial ended
            if log.exists() and len(log.read_text().splitlines()) >= 2:
                break
            assert proc.poll() is None, proc.communicate()[1][-3000:]
            time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err[-3000:]
    assert wait_none_left() == []
    before = _events(log)
    assert len(before) >= 2
    again = subprocess.run([*argv, "--resume"], capture_output=True, text=True, timeout=480,
                           check=False, cwd=tmp_path)  # fmt: skip
    assert again.returncode == 0, again.stderr[-3000:]
    after = _events(log)[len(before) :]
    assert max(int(str(t["trial"])) for t in after) == 4
    with Store.open(db) as store:
        info = store.find_campaign("tune-sim")
        assert info is not None
        attempts = store.attempts(info.id)
    nodes = tuple("/" + w.node_id[:8] for w in cluster.workers)
    assert all(a.node is not None and a.node.endswith(nodes) for a in attempts), [
        a.node for a in attempts
    ]
    ended = Counter(a.variant for a in attempts if str(a.status) in ("done", "crash", "timeout"))
    assert ended and max(ended.values()) == 1, ended  # nothing measured to the end twice
    for trial in before:
        assert sum(1 for a in attempts if a.variant == trial["variant"]) == 1, trial


def _at(stamp: str) -> float:
    return datetime.fromisoformat(stamp).timestamp()


def test_trials_run_two_at_once_on_a_cluster_of_two_nodes(
    cluster: RayCluster, tmp_path: Path
) -> None:
    """With two nodes that fit a server, the trials after the baseline run in pairs: the
    servers of a pair up at the same time, one on each node; every trial told once, in
    the events file and the store; nothing measured twice."""
    text = CAMPAIGN.format(requests=400, extra="--itl-ms 20", cache=tmp_path / "cache")
    text = text.replace("timeout_s = 60\n", "timeout_s = 60\ngpus = 1\n", 1)
    path = tmp_path / "search.toml"
    path.write_text(text)
    db = tmp_path / "t.db"
    log = tmp_path / "trials.jsonl"
    argv = [sys.executable, "-m", "servegate", "tune", str(path), "--db", str(db)]
    argv += ["--max-trials", "4", "--events-file", str(log), "--ray", cluster.address]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=480, check=False,
                          cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert "2 fit a server" in done.stderr, done.stderr[-3000:]
    assert wait_none_left() == []
    events = _events(log)
    assert sorted(int(str(t["trial"])) for t in events) == [0, 1, 2, 3, 4], events
    with Store.open(db) as store:
        info = store.find_campaign("tune-sim")
        assert info is not None
        attempts = [a for a in store.attempts(info.id) if a.variant != "baseline"]
    ended = Counter(a.variant for a in attempts if str(a.status) in ("done", "crash", "timeout"))
    assert ended and max(ended.values()) == 1, ended
    # the gate's READY and the stop bound each server's time up; a pair overlaps in it
    spans = sorted(
        (_at(a.started_at), _at(a.ended_at), a.node)
        for a in attempts
        if a.ended_at is not None and str(a.status) == "done"
    )
    overlapping = [
        (x, y) for i, x in enumerate(spans) for y in spans[i + 1 :] if y[0] < x[1] and x[2] != y[2]
    ]
    assert overlapping, spans


FLOWING = """
[campaign]
name = "tune-flow"
baseline = "baseline"

[server]
engine = "sglang"
command = "{python} -m servegate sim --engine sglang --port {port} --time-scale 0.005"
port = "auto"
timeout_s = 60
gpus = 1

[bench]
concurrency = 8
requests = 96
input_len = 16
output_len = 8
repeats = 1

[search]
name = "itl{itl}"
args = ["--itl-ms", "{itl}"]
objective = "throughput"

[search.params.itl]
choices = [1, 2, 3, 700, 800, 900]
"""
FLOW_SEED = 1  # TPE's seeded first draws: itl 2 (fast), itl 900 (slow), itl 2 again, 700


def test_a_node_that_frees_takes_the_next_trial_without_waiting_for_the_slow_one(
    cluster: RayCluster, tmp_path: Path
) -> None:
    """Two nodes, a slow trial (86 s of decoding: far more than a start takes to reach
    a node on a loaded machine, 30 s seen) beside a fast one (a fraction of a second):
    the next trial starts on the fast one's node while the slow one still runs, not
    when the pair has ended; every trial told once, nothing measured twice."""
    path = tmp_path / "search.toml"
    path.write_text(FLOWING)
    db = tmp_path / "t.db"
    log = tmp_path / "trials.jsonl"
    argv = [sys.executable, "-m", "servegate", "tune", str(path), "--db", str(db)]
    argv += ["--max-trials", "4", "--seed", str(FLOW_SEED), "--events-file", str(log)]
    argv += ["--ray", cluster.address]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=480, check=False,
                          cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert wait_none_left() == []
    events = _events(log)
    assert sorted(int(str(t["trial"])) for t in events) == [0, 1, 2, 3, 4], events
    with Store.open(db) as store:
        info = store.find_campaign("tune-flow")
        assert info is not None
        attempts = [a for a in store.attempts(info.id) if a.variant != "baseline"]
    ended = Counter(a.variant for a in attempts if str(a.status) in ("done", "crash", "timeout"))
    assert ended and max(ended.values()) == 1, ended
    spans = {
        a.variant: (_at(a.started_at), _at(a.ended_at))
        for a in attempts
        if a.ended_at is not None and str(a.status) == "done"
    }
    slow = [n for n in spans if int(n.removeprefix("itl")) >= 100]
    assert slow, f"seed {FLOW_SEED} proposed no slow trial: {sorted(spans)}"
    # a trial started after another had ended, while a third, started before it, ran on.
    # Trials go out in the order drawn (fast, slow, the fast one again: told from the
    # store, then 700), so in pairs the slow one's partner is the fast one and the fourth
    # waits for the slow one's end; flowing, it starts beside the slow one. The slow one
    # may reach its node after the fast one has ended (CI: 0.4 s after), so "began before
    # the fast one ended" is not asked.
    flowed = [
        (f, s, late)
        for f, (_, f1) in spans.items()
        for s, (s0, s1) in spans.items()
        for late, (l0, _) in spans.items()
        if len({f, s, late}) == 3 and f1 <= l0 and s0 < l0 < s1
    ]
    assert flowed, spans
