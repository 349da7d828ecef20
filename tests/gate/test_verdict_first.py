"""The verdict reaches the user the moment it is known; nothing after it waits without need."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from pathlib import Path

import pytest

from servegate.gate.probe import Prober
from servegate.launch.tree import port_holders, stop_tree

from .helpers import PY, SCRIPTS, alive, read_pid

EDGES = str(SCRIPTS / "edges.py")


def _launch_cli(err: Path, *args: str) -> subprocess.Popen[str]:
    """``servegate launch ARGS`` with its stdout on a pipe and its stderr in ``err``."""
    with err.open("w") as stderr:
        return subprocess.Popen(
            [PY, "-m", "servegate", "launch", *args],
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
        )


def _finish(proc: subprocess.Popen[str]) -> str:
    """The rest of its stdout, once it exited."""
    assert proc.stdout is not None
    with proc.stdout:
        rest = proc.stdout.read()
    proc.wait(60)
    return rest


@pytest.mark.parametrize("output", [["--tail", "1"], ["--json"]])
def test_crash_is_printed_before_the_tree_is_stopped(tmp_path: Path, output: list[str]) -> None:
    """The CRASH line (or JSON) arrives while a child that ignores SIGTERM still runs."""
    pidfile = tmp_path / "stubborn.pid"
    err = tmp_path / "stderr"
    proc = _launch_cli(err, *output, "--ready", "never", "--", PY, EDGES, "stubborn", str(pidfile))
    assert proc.stdout is not None
    first = proc.stdout.readline()
    stubborn = read_pid(pidfile)
    still_running = alive(stubborn)  # the stop gives it 5 s of grace before SIGKILL
    rest = _finish(proc)
    assert proc.returncode == 1, err.read_text()
    if output == ["--json"]:
        assert json.loads(first)["kind"] == "oom"
    else:
        assert first.startswith("CRASH after ") and "(oom)" in first
        assert rest.startswith("--- last 1 lines of ")
    assert first not in rest  # printed once
    assert still_running, "the verdict waited for the stop"
    assert not alive(stubborn)


def test_probe_stop_does_not_wait_for_a_request_that_hangs() -> None:
    """A probe blocked on a server that accepts and never answers stops at once."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        wake_r, wake_w = os.pipe()
        prober = Prober(f"http://127.0.0.1:{port}/health", wake_fd=wake_w, timeout_s=30.0)
        try:
            prober.start()
            conn, _ = listener.accept()  # the probe's request is in flight now
            with conn:
                conn.settimeout(10)
                assert conn.recv(1024).startswith(b"GET /health")
                started = time.monotonic()
                prober.stop()
                stopped_in = time.monotonic() - started
                assert conn.recv(1024) == b""  # the probe hung up
        finally:
            prober.stop()
            os.close(wake_r)
            os.close(wake_w)
    assert stopped_in < 5.0, f"stop() took {stopped_in:.1f}s (the request timeout is 30 s)"


def test_stop_names_a_foreign_holder_of_the_port_and_does_not_wait_for_it() -> None:
    """A port held by a process outside the tree is reported as such, without waiting."""
    server = subprocess.Popen([PY, "-c", "import time; time.sleep(60)"], start_new_session=True)
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        port = other.getsockname()[1]
        assert port_holders(port) == [os.getpid()]
        report = stop_tree(pid=server.pid, pgid=server.pid, grace_s=5.0, port=port)
    server.wait(10)
    assert server.pid in report.killed
    assert (report.port_free, report.port_holders) == (False, (os.getpid(),))
    assert f"held by pid {os.getpid()}" in report.line()
    # the old wait for the port to come free took 3 s; confirming it takes milliseconds
    assert report.duration_s < 2.0, report.line()


def test_port_taken_while_loading_returns_soon_after_its_verdict(port: int, tmp_path: Path) -> None:
    """Another process takes the port while the server loads: CRASH port-in-use, then exit."""
    go, log = tmp_path / "go", tmp_path / "server.log"
    err = tmp_path / "stderr"
    proc = _launch_cli(
        err, "--engine", "sglang", "--port", str(port), "--log", str(log), "--",
        PY, EDGES, "port-taken", str(go), str(port),
    )  # fmt: skip
    with socket.socket() as other:
        deadline = time.monotonic() + 30
        while b"Load weight begin" not in (log.read_bytes() if log.exists() else b""):
            assert time.monotonic() < deadline, "the server never started loading"
            time.sleep(0.01)
        other.bind(("127.0.0.1", port))
        other.listen()  # accepts the probe's connections and never answers them
        taken = time.monotonic()
        go.touch()
        out = _finish(proc)
        returned = time.monotonic()
    assert proc.returncode == 1, err.read_text()
    assert "(port-in-use)" in out.splitlines()[0]
    # before: the verdict waited for the probe's request (5 s) and for the port (3 s)
    assert returned - taken < 3.0, f"returned {returned - taken:.1f}s after the port was taken"
