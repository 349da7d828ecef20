"""Names of tracked servers: every launched server is tracked under a name of its own."""

from __future__ import annotations

import json
import subprocess

import pytest

from servegate.launch import state

from .helpers import PY, TINY, free_port, servegate

LAUNCHES = 5
LAUNCH = [PY, "-m", "servegate", "launch", "--ready", "tiny server ready", "--timeout", "60"]


@pytest.mark.timeout(300)  # 15 Python processes start at once on a busy machine
def test_concurrent_launches_each_get_their_own_name() -> None:
    """Launches started together with the same default name are tracked as generic,
    generic-2, ... and every one of them is stopped by its name."""
    ports = [free_port() for _ in range(LAUNCHES)]
    procs = [
        subprocess.Popen(
            [*LAUNCH, "--port", str(port), "--", PY, TINY, "ready", str(port)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for port in ports
    ]
    results = [proc.communicate(timeout=120) for proc in procs]
    assert [proc.returncode for proc in procs] == [0] * LAUNCHES, results
    listing = json.loads(servegate("ps", "--json").stdout)
    names = sorted(entry["name"] for entry in listing)
    expected = sorted(["generic"] + [f"generic-{i}" for i in range(2, LAUNCHES + 1)])
    assert expected == names
    assert sorted(ports) == sorted(entry["port"] for entry in listing)
    for name in names:
        stopped = servegate("stop", name, "--json")
        assert stopped.returncode == 0, stopped.stderr
        assert json.loads(stopped.stdout)["port_free"] is True
    assert state.list_tracked() == []


def test_a_name_being_launched_is_not_handed_out_again() -> None:
    """A reserved name is taken while its launcher lives, even before its server runs."""
    first = state.reserve_name("api")
    second = state.reserve_name("api")
    assert (first, second) == ("api", "api-2")
    assert state.list_tracked() == []  # a reservation is not a server
    state.remove(first)
    assert state.reserve_name("api") == "api"
    state.remove("api")
    state.remove(second)


def test_a_dead_launchers_reservation_is_reclaimed() -> None:
    """A reservation left by a launcher that died no longer holds its name."""
    code = "from servegate.launch import state; print(state.reserve_name('api'))"
    done = subprocess.run([PY, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "api"
    assert state.reserve_name("api") == "api"
    state.remove("api")
