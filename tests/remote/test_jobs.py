"""launch, wait, stop and ps run on the host through ``servegate.remote``: the same output
and exit codes as on the host itself; jobs outlive a dropped connection; a foreground
launch dies with the local side, SIGKILL included."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys

import psutil
import pytest
from tests.conftest import free_port
from tests.remote.helpers import drive, run, serving, sim, simulator_here, simulators
from tests.remote.sshd import Remote

from servegate.remote import parse_host
from servegate.remote.client import cancel


def elapsed_free(line: str) -> str:
    """A verdict line with its times masked (they differ between two starts)."""
    return re.sub(r"\d+\.\ds", "Ns", line)


def local_launch(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "servegate", "launch", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_launch_ready_then_ps_and_stop(host: Remote) -> None:
    """READY: exit 0, the server stays up on the host, ps lists it, stop ends its tree."""
    port = free_port()
    name = f"r{port}"
    code, out, err = run(
        host,
        "job",
        "launch",
        "--engine",
        "sglang",
        "--name",
        name,
        "--port",
        str(port),
        "--",
        *sim(host, port, "--startup", "0.5"),
    )
    assert code == 0, (out, err)
    assert re.fullmatch(r"SERVER READY after \d+\.\ds", out[0]), out
    assert any(f"stop it with: servegate stop {name}" in line for line in err), err
    (server,) = serving(port)
    assert server.uids().real == host.uid  # it runs as the remote user, not here
    code, out, err = run(host, "cli", "ps", "--json")
    assert code == 0, err
    listed = {entry["name"]: entry for entry in json.loads(out[0])}
    assert listed[name]["pid"] == server.pid and listed[name]["state"] == "running"
    code, out, err = run(host, "cli", "stop", name)
    assert code == 0, (out, err)
    assert out[0].startswith(f"{name}: stopped ") and f"port {port} free" in out[0], out
    assert not server.is_running()
    code, out, err = run(host, "cli", "ps", "--json")
    assert code == 0, err
    assert name not in {entry["name"] for entry in json.loads(out[0])}, out


def test_crash_prints_the_local_verdict_line_and_exit_code(host: Remote) -> None:
    """CRASH over SSH: exit 1 and the verdict line a local launch prints for the same crash."""
    fail = ["--startup", "1", "--fail", "oom", "--fail-at", "load_weights"]
    port = free_port()
    code, out, err = run(
        host,
        "job",
        "launch",
        "--engine",
        "sglang",
        "--port",
        str(port),
        "--",
        *sim(host, port, *fail),
    )
    assert code == 1, (out, err)
    port_here = free_port()
    here = local_launch(
        "--engine",
        "sglang",
        "--port",
        str(port_here),
        "--",
        sys.executable,
        "-m",
        "servegate",
        "sim",
        "--port",
        str(port_here),
        *fail,
    )
    assert here.returncode == 1, here.stderr
    assert out[0].startswith("CRASH after ") and "(oom)" in out[0], out
    assert elapsed_free(out[0]) == elapsed_free(here.stdout.splitlines()[0])
    assert out[1].startswith("--- last ") and out[1].endswith("sglang.log ---"), out
    assert serving(port) == []


def test_timeout_is_124_with_json(host: Remote) -> None:
    """TIMEOUT over SSH: exit 124, and --json prints the verdict object alone on stdout."""
    port = free_port()
    code, out, err = run(
        host,
        "job",
        "launch",
        "--json",
        "-q",
        "--engine",
        "sglang",
        "--timeout",
        "1",
        "--port",
        str(port),
        "--",
        *sim(host, port, "--startup", "60"),
    )
    assert code == 124, (out, err)
    (line,) = out
    verdict = json.loads(line)
    assert verdict["schema"] == "servegate.verdict/1" and verdict["status"] == "timeout"
    assert serving(port) == []


def test_bad_input_there_is_exit_2_here(host: Remote) -> None:
    """A command missing on the host is the host's one-sentence error and exit 2."""
    code, out, err = run(host, "job", "launch", "--", "no-such-engine-binary", "--port", "1")
    assert code == 2, (out, err)
    assert "command 'no-such-engine-binary' not found on PATH" in "\n".join(err)


def test_wait_gates_a_server_started_on_the_host(host: Remote) -> None:
    """wait over SSH gates a server someone else started there, and never kills it."""
    port = free_port()
    with simulator_here(port, "0.5") as other:
        code, out, err = run(
            host,
            "job",
            "wait",
            "--engine",
            "sglang",
            "--url",
            f"http://127.0.0.1:{port}",
            "--timeout",
            "60",
        )
        assert code == 0, (out, err)
        assert out[0].startswith("SERVER READY after "), out
        assert other.poll() is None


@pytest.mark.slow
def test_a_dropped_connection_is_reopened_and_the_wait_goes_on(host: Remote) -> None:
    """Killing the sshd session serving the launch: the server keeps starting there, the
    local side reconnects and prints the verdict; the server outlived the connection."""
    port = free_port()
    name = f"d{port}"
    launching = drive(
        host,
        "job",
        "launch",
        "--engine",
        "sglang",
        "--name",
        name,
        "--port",
        str(port),
        "--",
        *sim(host, port, "--startup", "4"),
    )
    launching.wait_for(r"^phase load_weights")  # the job runs, its output flows
    host.drop_connections()
    launching.wait_for(r"connection to sgtest lost; reconnecting")
    assert launching.finish() == 0, (launching.out, launching.err)
    assert launching.out[0].startswith("SERVER READY after "), launching.out
    (server,) = serving(port)
    code, out, err = run(host, "cli", "stop", name)
    assert code == 0, (out, err)
    assert not server.is_running()


def test_foreground_dies_with_the_local_side_even_by_sigkill(host: Remote) -> None:
    """--foreground over SSH: SIGKILL here, and the remote side stops the whole tree."""
    port = free_port()
    attached = drive(
        host,
        "foreground",
        "launch",
        "--foreground",
        "--engine",
        "sglang",
        "--port",
        str(port),
        "--",
        *sim(host, port, "--startup", "0.5"),
    )
    attached.wait_for(r"^SERVER READY after ", stream="out")
    (server,) = serving(port)
    tree = [server, *server.children(recursive=True)]
    attached.proc.send_signal(signal.SIGKILL)
    attached.finish()
    _, alive = psutil.wait_procs(tree, timeout=60)
    assert not alive, alive
    code, out, _ = run(host, "cli", "ps")
    assert (code, out) == (0, [])


@pytest.mark.slow
def test_ctrl_c_here_interrupts_the_launch_there(host: Remote) -> None:
    """Ctrl-C during a launch over SSH: the tree on the host is stopped, exit 130, as a
    local launch does."""
    port = free_port()
    launching = drive(
        host,
        "job",
        "launch",
        "--engine",
        "sglang",
        "--port",
        str(port),
        "--",
        *sim(host, port, "--startup", "60"),
    )
    launching.wait_for(r"^phase load_weights")
    (server,) = simulators(port)
    tree = [server, *server.children(recursive=True)]
    launching.proc.send_signal(signal.SIGINT)
    assert launching.finish() == 130, (launching.out, launching.err)
    _, alive = psutil.wait_procs(tree, timeout=60)
    assert not alive, alive


def test_a_ctrl_c_the_host_answers_or_does_not(host: Remote) -> None:
    """The cancel a Ctrl-C sends is answered by the host even for a job that has ended;
    a host it cannot reach is reported as such (False), after its retries, not ignored."""
    assert cancel(parse_host(host.alias), "0" * 32)
    closed = f"ssh://{host.user}@127.0.0.1:{free_port()}"  # nothing listens there
    assert not cancel(parse_host(closed), "0" * 32, within_s=1.0)
