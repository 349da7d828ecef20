"""Servers that died after READY: ps keeps them, as dead, until stop or ps --prune.

A detached server nobody watches can die on its own; ps must say that it died, how
(its exit code or signal) and when, and stop NAME must then forget it and say so.
"""

from __future__ import annotations

import json
import os
import signal
import time

from tests.gate.helpers import PY, alive, servegate

from servegate.launch import state

# ready at once; SIGUSR1 makes it exit with code 3, as a server that fails after READY
DIES_ON_USR1 = (
    "import os, signal, time\n"
    "signal.signal(signal.SIGUSR1, lambda *a: os._exit(3))\n"
    "print('serving now', flush=True)\n"
    "while True: time.sleep(3600)\n"
)


def launch_and_kill(name: str, how: int) -> int:
    """Launch a server under ``name``, READY; send it ``how``; wait until its keeper
    (which records the exit) has ended. Returns its PID."""
    result = servegate(
        "launch", "--ready", "serving now", "--name", name, "--", PY, "-c", DIES_ON_USR1
    )
    assert result.returncode == 0, result.stderr
    tracked = state.load(name)
    assert tracked is not None and tracked.keeper_pid is not None
    os.kill(tracked.pid, how)
    deadline = time.monotonic() + 30.0
    while alive(tracked.keeper_pid):
        assert time.monotonic() < deadline, "the keeper outlived its server"
        time.sleep(0.02)
    assert not alive(tracked.pid)
    return tracked.pid


def test_ps_lists_a_server_that_died_after_ready_and_stop_forgets_it() -> None:
    """ps lists a server that exited after READY as dead, with its code and when; stop
    NAME then says it had already exited (exit 0) and removes the record."""
    pid = launch_and_kill("api", signal.SIGUSR1)
    listing = servegate("ps")
    assert listing.returncode == 0, listing.stderr
    (row,) = listing.stdout.splitlines()[1:]
    assert row.split()[:2] == ["api", str(pid)]
    assert "dead: exited with code 3 at 20" in row
    (data,) = json.loads(servegate("ps", "--json").stdout)
    assert (data["name"], data["exit_code"]) == ("api", 3)
    assert data["state"] == f"dead: exited with code 3 at {data['exited_at']}"
    stopped = servegate("stop", "api")
    assert stopped.returncode == 0, stopped.stderr
    assert stopped.stdout.startswith(
        f"api: had already exited (code 3 at {data['exited_at']}); its record is removed"
    )
    assert state.load("api") is None
    assert servegate("ps").stdout == ""
    again = servegate("stop", "api")
    assert again.returncode == 2
    assert "no running server named 'api'" in again.stderr


def test_a_killed_server_is_listed_by_its_signal_and_ps_prune_forgets_it() -> None:
    """A server killed by a signal is listed as killed by it; ps --prune forgets every
    dead server (and says which) and keeps the running ones."""
    launch_and_kill("victim", signal.SIGKILL)
    (data,) = json.loads(servegate("ps", "--json").stdout)
    assert data["state"].startswith("dead: killed by SIGKILL at 20")
    stopped = json.loads(servegate("stop", "victim", "--json").stdout)
    assert stopped["already_exited"].startswith("killed by SIGKILL at ")
    assert stopped["killed"] == []

    launch_and_kill("gone", signal.SIGUSR1)
    result = servegate(
        "launch", "--ready", "serving now", "--name", "live", "--", PY, "-c", DIES_ON_USR1
    )
    assert result.returncode == 0, result.stderr
    pruned = servegate("ps", "--prune")
    assert pruned.returncode == 0, pruned.stderr
    assert "forgot gone: exited with code 3 at " in pruned.stderr
    assert [line.split()[0] for line in pruned.stdout.splitlines()[1:]] == ["live"]
    assert state.load("gone") is None
    stopped = servegate("stop", "live")
    assert stopped.returncode == 0, stopped.stderr
    assert "stopped 1 process(es)" in stopped.stdout
