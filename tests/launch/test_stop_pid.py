"""``stop --pid`` ends only what servegate answers for, unless told ``--force``.

A tracked server's main PID and the orphans that ``ps`` lists for a dead tracked
server are servegate's to stop; any other PID (a typo, a neighbour's job) is refused
with exit 2 and a message naming ``--force``, and is left running.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import psutil
from tests.gate.helpers import FAKE, PY, alive, servegate
from tests.launch.test_orphans import TREE, read_pids, track

from servegate.launch.tree import ProcInfo

SLEEPER = [PY, "-c", "import time; time.sleep(120)"]


def test_an_unrelated_pid_is_refused_until_force() -> None:
    """stop --pid of a process servegate did not launch: exit 2 naming --force, the
    process lives on; with --force it is stopped."""
    with subprocess.Popen(SLEEPER) as bystander:
        try:
            refused = servegate("stop", "--pid", str(bystander.pid))
            assert refused.returncode == 2, refused.stderr
            assert "--force" in refused.stderr
            assert f"PID {bystander.pid}" in refused.stderr
            assert refused.stdout == ""
            assert bystander.poll() is None  # the command has ended and it still runs
            forced = servegate("stop", "--pid", str(bystander.pid), "--force", "--grace", "5")
            assert forced.returncode == 0, forced.stderr
            assert bystander.wait(timeout=30) is not None
            assert f"pid {bystander.pid}:" in forced.stdout
        finally:
            if bystander.poll() is None:
                bystander.kill()


def test_an_unrelated_pid_under_json_is_one_error_object() -> None:
    """The refusal under --json is one servegate.error/1 object naming --force."""
    with subprocess.Popen(SLEEPER) as bystander:
        try:
            refused = servegate("stop", "--pid", str(bystander.pid), "--json")
            assert refused.returncode == 2, refused.stderr
            data = json.loads(refused.stdout)
            assert (data["schema"], data["exit_code"]) == ("servegate.error/1", 2)
            assert "--force" in data["error"]
            assert bystander.poll() is None
        finally:
            bystander.kill()


def test_a_tracked_servers_pid_is_stopped(port: int) -> None:
    """stop --pid with a server that launch tracks stops its tree and forgets it."""
    launched = servegate(
        "launch",
        "--engine",
        "sglang",
        "--port",
        str(port),
        "--name",
        "api",
        "--",
        PY,
        FAKE,
        "sglang",
        str(port),
    )
    assert launched.returncode == 0, launched.stderr
    (row,) = json.loads(servegate("ps", "--json").stdout)
    pid = int(row["pid"])
    stopped = servegate("stop", "--pid", str(pid), "--json")
    assert stopped.returncode == 0, stopped.stderr
    report = json.loads(stopped.stdout)
    assert report["name"] == "api"
    assert pid in report["killed"] and report["port_free"] is True
    assert not alive(pid)
    assert servegate("ps").stdout == ""


def test_an_orphan_that_ps_lists_is_stopped(tmp_path: Path) -> None:
    """stop --pid with the PID of an orphan that ps lists for a dead server stops it."""
    pidfile = tmp_path / "orphan.pid"
    main = subprocess.Popen(
        [PY, TREE, "orphan", str(pidfile)],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        start_new_session=True,
    )
    orphan = 0
    try:
        (orphan,) = read_pids(pidfile)
        child = psutil.Process(orphan)
        info = ProcInfo(pid=orphan, create_time=child.create_time(), cmd=" ".join(child.cmdline()))
        track("dying", main, [info], psutil.Process(main.pid).create_time())
        assert main.stdin is not None
        main.stdin.close()  # the main process exits; its setsid'd child lives on
        main.wait(10)
        (row,) = json.loads(servegate("ps", "--json").stdout)
        assert row["orphans"] == [orphan]
        stopped = servegate("stop", "--pid", str(orphan), "--grace", "5", "--json")
        assert stopped.returncode == 0, stopped.stderr
        assert orphan in json.loads(stopped.stdout)["killed"]
        assert not alive(orphan)
        assert servegate("ps").stdout == ""
    finally:
        if main.poll() is None:
            main.kill()
        main.wait(10)
        if orphan and alive(orphan):
            psutil.Process(orphan).kill()
