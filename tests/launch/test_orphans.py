"""Servers whose main process is gone while parts of their tree live on.

vLLM's API server exits with code 0 after its engine dies, and its orphaned worker
outlives it: ps must still list such a server and stop must still end its orphans,
without ever killing a process that merely reuses a recorded PID.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import uuid
from pathlib import Path

import psutil
from tests.gate.helpers import PY, SCRIPTS, alive, servegate

from servegate.launch import launch, state
from servegate.launch.tree import ProcInfo, snapshot

TREE = str(SCRIPTS / "engine_tree.py")


def wait_for(predicate: object, timeout_s: float = 10.0) -> bool:
    """Poll ``predicate`` until it is true or the time is up."""
    assert callable(predicate)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return bool(predicate())


def read_pids(path: Path) -> list[int]:
    """PIDs written to a file by a test script, once it is complete."""
    assert wait_for(lambda: path.exists() and path.read_text().endswith("\n"))
    return [int(line) for line in path.read_text().split()]


def track(
    name: str, main: subprocess.Popen[bytes], descendants: list[ProcInfo], create_time: float
) -> None:
    """Record ``main`` (a session leader) as a launched server, as a detached launch does."""
    state.save(
        state.Tracked(
            name=name,
            pid=main.pid,
            pgid=main.pid,
            create_time=create_time,
            keeper_pid=None,
            command=tuple(str(arg) for arg in main.args),  # type: ignore[union-attr]
            engine="generic",
            url=None,
            port=None,
            log_path="/dev/null",
            started_at="2026-01-01T00:00:00Z",
            marker=uuid.uuid4().hex,
            attached=False,
            descendants=tuple(descendants),
        )
    )


def test_orphan_keeps_the_server_listed_and_stop_ends_it(tmp_path: Path) -> None:
    """Main gone, setsid'd child alive: ps says so, stop kills the child, then forgets."""
    pidfile = tmp_path / "orphan.pid"
    main = subprocess.Popen(
        [PY, TREE, "orphan", str(pidfile)],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        (orphan,) = read_pids(pidfile)
        tree = snapshot([main.pid], session=main.pid)
        assert orphan in {info.pid for info in tree}
        track("dying", main, tree, psutil.Process(main.pid).create_time())
        assert main.stdin is not None
        main.stdin.close()  # the main process exits; its setsid'd child lives on
        main.wait(10)
        assert alive(orphan)
        assert os.getsid(orphan) != main.pid  # it really left the session
        listing = servegate("ps")
        assert "dead: main exited, 1 orphan(s) alive" in listing.stdout, listing.stdout
        (row,) = json.loads(servegate("ps", "--json").stdout)
        assert (row["name"], row["orphans"]) == ("dying", [orphan])
        stopped = servegate("stop", "dying", "--grace", "5", "--json")
        assert stopped.returncode == 0, stopped.stderr
        assert orphan in json.loads(stopped.stdout)["killed"]
        assert not alive(orphan)
        assert state.load("dying") is None
        assert servegate("ps").stdout == ""
    finally:
        if alive(main.pid):
            main.kill()
        main.wait(10)
        if pidfile.exists():
            for pid in read_pids(pidfile):
                if alive(pid):
                    os.kill(pid, signal.SIGKILL)


def test_a_reused_pid_is_never_killed() -> None:
    """A recorded descendant whose PID now belongs to another process is left alone."""
    bystander = subprocess.Popen([PY, "-c", "import time; time.sleep(60)"])
    main = subprocess.Popen([PY, "-c", "pass"], start_new_session=True)
    try:
        main.wait(10)
        # the bystander's PID with another start time: what a reused PID looks like
        created = psutil.Process(bystander.pid).create_time()
        stale = ProcInfo(pid=bystander.pid, create_time=created - 100.0, cmd="old worker")
        track("stale", main, [stale], created)
        # nothing of it runs: listed as dead, not as running with an orphan
        assert "dead: exited, exit code unknown" in servegate("ps").stdout
        stopped = servegate("stop", "stale")
        assert stopped.returncode == 0, stopped.stderr
        assert "had already exited (exit code unknown)" in stopped.stdout
        assert state.load("stale") is None
        assert alive(bystander.pid)
    finally:
        bystander.kill()
        bystander.wait(10)


def test_stop_leaves_a_reused_group_alone(tmp_path: Path) -> None:
    """With the main gone, its old group is signalled only through a verified member."""
    pidfile = tmp_path / "orphan.pid"
    main = subprocess.Popen(
        [PY, TREE, "orphan", str(pidfile)],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        start_new_session=True,
    )
    # a process in a group of its own whose number the record will claim
    other = subprocess.Popen([PY, "-c", "import time; time.sleep(60)"], start_new_session=True)
    try:
        (orphan,) = read_pids(pidfile)
        tree = snapshot([main.pid], session=main.pid)
        assert main.stdin is not None
        main.stdin.close()
        main.wait(10)
        record = state.Tracked(
            name="regrouped",
            pid=main.pid,
            pgid=other.pid,  # as if the old group number were in use by someone else now
            create_time=time.time() - 1000.0,
            keeper_pid=None,
            command=("server",),
            engine="generic",
            url=None,
            port=None,
            log_path="/dev/null",
            started_at="2026-01-01T00:00:00Z",
            marker=uuid.uuid4().hex,
            attached=False,
            descendants=tuple(tree),
        )
        state.save(record)
        stopped = servegate("stop", "regrouped", "--grace", "5")
        assert stopped.returncode == 0, stopped.stderr
        assert not alive(orphan)
        assert alive(other.pid), "a group no recorded process belongs to was signalled"
    finally:
        other.kill()
        other.wait(10)
        if alive(main.pid):
            main.kill()
        main.wait(10)
        for pid in read_pids(pidfile):
            if alive(pid):
                os.kill(pid, signal.SIGKILL)


def test_vllm_engine_death_makes_the_server_not_alive(port: int, tmp_path: Path) -> None:
    """Killing VLLM::EngineCore after READY: alive() is False while the API server runs."""
    pidfile = tmp_path / "children"
    with launch(
        [PY, TREE, "vllm", str(port), str(pidfile)], engine="vllm", port=port, timeout_s=30
    ) as server:
        assert server.verdict.status == "ready"
        assert server.alive()
        core, _worker = read_pids(pidfile)
        os.kill(core, signal.SIGKILL)
        assert wait_for(lambda: not server.alive())
        assert server.tracked.alive(), "the API server itself lives on, as vLLM's does"


def test_a_running_servers_children_are_not_orphans(port: int, tmp_path: Path) -> None:
    """ps --json of a server whose main process runs: its live children (vLLM's
    EngineCore and Worker) are its own, so "orphans" is empty and the state running."""
    pidfile = tmp_path / "children"
    launched = servegate(
        "launch", "--engine", "vllm", "--port", str(port), "--name", "api",
        "--", PY, TREE, "vllm", str(port), str(pidfile),
    )  # fmt: skip
    assert launched.returncode == 0, launched.stderr
    try:
        children = read_pids(pidfile)
        assert all(alive(pid) for pid in children)
        (row,) = json.loads(servegate("ps", "--json").stdout)
    finally:
        stopped = servegate("stop", "api")
    assert (row["name"], row["state"], row["orphans"]) == ("api", "running", [])
    assert stopped.returncode == 0, stopped.stderr
