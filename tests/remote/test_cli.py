"""The command line with ``--host``: launch, wait, stop, ps, dump and bench over SSH print
what they print on the host, with the same exit codes."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from pathlib import Path

import psutil
from tests.conftest import free_port
from tests.remote.helpers import Lines, serving, sim, simulator_here
from tests.remote.sshd import Remote


def servegate(host: Remote, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "servegate", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=host.env(),
    )


def test_launch_ps_stop_with_host(host: Remote) -> None:
    """launch --host: READY and exit 0, the hint names --host; ps --host lists the server,
    dump --host reads its stacks there, stop --host ends its tree."""
    port = free_port()
    name = f"c{port}"
    done = servegate(
        host,
        "launch",
        "--host",
        host.url,
        "--engine",
        "sglang",
        "--name",
        name,
        "--port",
        str(port),
        "--",
        *sim(host, port, "--startup", "0.5"),
    )
    assert done.returncode == 0, done.stderr
    assert re.fullmatch(r"SERVER READY after \d+\.\ds\n", done.stdout), done.stdout
    assert f"stop it with: servegate stop --host {host.url} {name}" in done.stderr
    (server,) = serving(port)
    listed = servegate(host, "ps", "--host", host.alias, "--json")
    assert listed.returncode == 0, listed.stderr
    assert [s["pid"] for s in json.loads(listed.stdout) if s["name"] == name] == [server.pid]
    dumped = servegate(host, "dump", name, "--host", host.alias, "--json")
    assert dumped.returncode == 0, dumped.stderr
    assert server.pid in [p["pid"] for p in json.loads(dumped.stdout)["processes"]]
    stopped = servegate(host, "stop", "--host", host.alias, name)
    assert stopped.returncode == 0, stopped.stderr
    assert stopped.stdout.startswith(f"{name}: stopped ")
    assert not server.is_running()
    assert servegate(host, "ps", "--host", host.alias).stdout == ""


def test_crash_and_timeout_with_host_exit_like_local(host: Remote) -> None:
    """CRASH: exit 1, the verdict line then the tail; TIMEOUT --json: exit 124 and one
    servegate.verdict/1 object on stdout."""
    port = free_port()
    crashed = servegate(
        host,
        "launch",
        "--host",
        host.alias,
        "--engine",
        "sglang",
        "--port",
        str(port),
        "--",
        *sim(host, port, "--startup", "1", "--fail", "oom", "--fail-at", "load_weights"),
    )
    assert crashed.returncode == 1, crashed.stderr
    lines = crashed.stdout.splitlines()
    assert lines[0].startswith("CRASH after ") and "(oom)" in lines[0]
    assert lines[1].startswith("--- last ")
    timed_out = servegate(
        host,
        "launch",
        "--host",
        host.alias,
        "--json",
        "-q",
        "--timeout",
        "1",
        "--engine",
        "sglang",
        "--port",
        str(port),
        "--",
        *sim(host, port, "--startup", "60"),
    )
    assert timed_out.returncode == 124, timed_out.stderr
    verdict = json.loads(timed_out.stdout)
    assert (verdict["schema"], verdict["status"]) == ("servegate.verdict/1", "timeout")
    assert serving(port) == []


def test_wait_with_host(host: Remote) -> None:
    """wait --host gates a server started on the host by someone else; never kills it."""
    port = free_port()
    with simulator_here(port, "0.5") as other:
        done = servegate(
            host,
            "wait",
            "--host",
            host.alias,
            "--engine",
            "sglang",
            "--url",
            f"http://127.0.0.1:{port}",
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith("SERVER READY after ")
        assert other.poll() is None


def test_foreground_with_host_dies_with_servegate_killed(host: Remote) -> None:
    """launch --foreground --host, then SIGKILL to servegate here: the tree there stops."""
    port = free_port()
    attached = Lines(
        [
            sys.executable,
            "-m",
            "servegate",
            "launch",
            "--host",
            host.alias,
            "--foreground",
            "--engine",
            "sglang",
            "--port",
            str(port),
            "--",
            *sim(host, port, "--startup", "0.5"),
        ],
        host.env(),
    )
    attached.wait_for(r"^SERVER READY after ", stream="out")
    (server,) = serving(port)
    tree = [server, *server.children(recursive=True)]
    attached.proc.send_signal(signal.SIGKILL)
    attached.finish()
    _, alive = psutil.wait_procs(tree, timeout=60)
    assert not alive, alive


def test_bench_with_host_records_where_the_load_came_from(host: Remote, tmp_path: Path) -> None:
    """bench --host: on the host by default, here with --bench-from local (through a
    tunnel to the host's loopback); the results say which, with every raw sample."""
    port = free_port()
    flags = [
        "--url",
        f"http://127.0.0.1:{port}",
        "--requests",
        "6",
        "--input-len",
        "16",
        "--output-len",
        "4",
        "-q",
    ]
    with simulator_here(port, "0"):
        there = servegate(host, "bench", "--host", host.alias, "--json", *flags)
        assert there.returncode == 0, there.stderr
        results = json.loads(there.stdout)
        assert (results["bench_from"], results["host"]) == ("remote", host.alias)
        assert len(results["points"][0]["samples"]) == 6
        written = tmp_path / "here.json"
        here = servegate(
            host,
            "bench",
            "--host",
            host.alias,
            "--bench-from",
            "local",
            "--json-file",
            str(written),
            *flags,
        )
        assert here.returncode == 0, here.stderr
        results = json.loads(written.read_text())
        assert (results["bench_from"], results["via"]) == ("local", "tunnel")
        assert results["points"][0]["completed"] == 6


def test_bench_from_without_host_is_exit_2(host: Remote) -> None:
    done = servegate(host, "bench", "--url", "http://127.0.0.1:1", "--bench-from", "local")
    assert done.returncode == 2
    assert "--bench-from goes with --host HOST" in done.stderr


def test_missing_servegate_there_is_exit_2_naming_the_install(host: Remote) -> None:
    """ps --host on a host without servegate: exit 2, one sentence naming the fix; under
    --json, the one servegate.error/1 object."""
    done = servegate(host, "ps", "--host", "sgtest-empty", "--json")
    assert done.returncode == 2
    error = json.loads(done.stdout)
    assert error == {
        "schema": "servegate.error/1",
        "error": "servegate is not installed on sgtest-empty: "
        "run servegate remote install sgtest-empty.",
        "exit_code": 2,
    }
