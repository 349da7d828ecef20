"""A host that accepts TCP and then never finishes SSH: every wait is bounded, and the ssh
child that servegate starts ends with servegate.

The hosts here are listeners of the test itself on 127.0.0.1 (no sshd needed) that
accept connections and never say a word.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator

import psutil
import pytest
from tests.listeners import Listener, silent


@pytest.fixture
def stalled() -> Iterator[Callable[..., Listener]]:
    """A factory of hosts that accept TCP and never complete SSH, each closed at the end."""
    made: list[Listener] = []

    def make() -> Listener:
        host = Listener(silent)
        made.append(host)
        return host

    yield make
    for host in made:
        host.close()


def _env(connect_timeout_s: str) -> dict[str, str]:
    """servegate's environment: no ssh config of the user's, the given connect timeout."""
    return {
        **os.environ,
        "SERVEGATE_SSH_CONFIG": os.devnull,
        "SERVEGATE_SSH_CONNECT_TIMEOUT_S": connect_timeout_s,
        "SERVEGATE_SSH_RECONNECT_S": "0",
    }


@pytest.mark.parametrize("argv", [["ps"], ["launch", "--", "true"]], ids=["ps", "launch"])
def test_a_host_that_never_speaks_ssh_is_exit_2_within_the_connect_timeout(
    stalled: Callable[..., Listener], argv: list[str]
) -> None:
    """A host that accepts TCP but never sends SSH's banner: ssh's ConnectTimeout
    (``SERVEGATE_SSH_CONNECT_TIMEOUT_S``) ends the wait; exit 2, one sentence naming the
    host and what ssh saw."""
    host = stalled()
    spec = f"ssh://127.0.0.1:{host.port}"
    done = subprocess.run(
        [sys.executable, "-m", "servegate", argv[0], "--host", spec, *argv[1:]],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=_env("1"),
    )
    assert (2, "") == (done.returncode, done.stdout), done.stderr
    assert done.stderr.startswith(f"Error: cannot connect to {spec} ("), done.stderr
    assert "banner exchange" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_the_ssh_child_ends_when_servegate_is_killed(stalled: Callable[..., Listener]) -> None:
    """ssh runs in a session of its own (Ctrl-C is servegate's), yet SIGKILL to servegate
    ends it too: nothing of the connection is left."""
    host = stalled()
    proc = subprocess.Popen(
        [sys.executable, "-m", "servegate", "ps", "--host", f"ssh://127.0.0.1:{host.port}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=_env("600"),
    )
    try:
        assert host.accepted.wait(60), "ssh never connected"
        children = [p for p in psutil.Process(proc.pid).children() if p.name() == "ssh"]
        assert len(children) == 1
        assert os.getsid(children[0].pid) != os.getsid(proc.pid)  # its own session
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        gone, alive = psutil.wait_procs(children, timeout=30)
        assert (gone, alive) == (children, [])
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
