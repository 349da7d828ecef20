"""The command line: launch, wait, stop and ps as users run them, exit codes included."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest
from tests.conftest import free_port
from tests.gate.helpers import FAKE, MISBEHAVE, PY, alive, read_pid, servegate, verdict_of

from servegate.launch import state


def test_detached_launch_ps_stop(port: int, tmp_path: Path) -> None:
    """launch exits 0 on READY leaving the server tracked; ps lists it; stop ends it."""
    result = servegate(
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
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("SERVER READY after ")
    assert "servegate stop api" in result.stderr
    listing = servegate("ps")
    assert listing.stdout.splitlines()[1].split()[:3][0] == "api"
    pid = int(listing.stdout.splitlines()[1].split()[1])
    assert alive(pid)
    # the server answers Ctrl-C / kill -INT: the keeper's own SIGINT choice is not inherited
    ignored = next(
        x for x in Path(f"/proc/{pid}/status").read_text().splitlines() if x.startswith("SigIgn:")
    )
    assert not int(ignored.split()[1], 16) & (1 << (signal.SIGINT - 1))
    stopped = servegate("stop", "api", "--json")
    assert stopped.returncode == 0, stopped.stderr
    report = json.loads(stopped.stdout)
    assert pid in report["killed"] and report["port_free"] is True
    assert not alive(pid)
    assert servegate("ps").stdout == ""


def test_ps_prints_nothing_when_nothing_is_tracked() -> None:
    """An empty ps writes no line on stdout (hooks treat any line as a leak)."""
    result = servegate("ps")
    assert (result.returncode, result.stdout) == (0, "")


def test_crash_output_and_tail(tmp_path: Path) -> None:
    """CRASH prints the verdict line, then the last --tail lines; exit 1; nothing left."""
    result = servegate("launch", "--ready", "never", "--tail", "1", "--", PY, MISBEHAVE, "oom-hang")
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert lines[0].startswith("CRASH after ")
    assert "GPU out of memory (oom) - lower the memory fraction" in lines[0] or (
        "CUDA out of memory (oom)" in lines[0]
    )
    assert lines[1].startswith("--- last 1 lines of ")
    assert lines[2].startswith("torch.OutOfMemoryError")
    assert state.list_tracked() == []


def test_json_verdict_schema() -> None:
    """--json prints one servegate.verdict/1 object with every documented field."""
    result = servegate("launch", "--json", "--ready", "never", "--", PY, MISBEHAVE, "exit", "7")
    assert result.returncode == 1
    data = verdict_of(result)
    expected = {
        "schema",
        "status",
        "elapsed_s",
        "started_at",
        "decided_at",
        "detected_by",
        "reason",
        "kind",
        "hint",
        "matched_line",
        "exit_code",
        "pid",
        "engine",
        "url",
        "log_path",
        "phases",
        "tail",
    }
    assert expected <= set(data)
    assert (data["schema"], data["status"], data["exit_code"]) == (
        "servegate.verdict/1",
        "crash",
        7,
    )


def test_timeout_exit_code() -> None:
    """TIMEOUT exits 124."""
    result = servegate(
        "launch", "--ready", "never", "--stall", "0.5", "--sample", "0",
        "--", PY, MISBEHAVE, "stall", "hello",
    )  # fmt: skip
    assert result.returncode == 124
    assert result.stdout.startswith("TIMEOUT after ")
    assert "no progress for 0.5s" in result.stdout.splitlines()[0]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--engine", "ollama", "--", PY, "-V"], "unknown engine 'ollama'"),
        (["--ready", "(unclosed", "--", PY, "-V"], "invalid --ready regular expression"),
        (["--crash", "[z-a]", "--ready", "x", "--", PY, "-V"], "invalid --crash regular"),
        (["--ready", "x"], "missing command"),
        (["--ready", "x", "--log", "/no/such/dir/x.log", "--", PY, "-V"], "does not exist"),
        (["--ready", "x", "--log", "/tmp", "--", PY, "-V"], "cannot write the log /tmp"),
        (["--ready", "x", "--", "no-such-program-xyz"], "not found on PATH"),
        (["--engine", "generic", "--", PY, "-V"], "nothing can tell"),
        (["--ready", "x", "--", PY, "-V", "--port", "70000"], "--port 70000 is above 65535"),
    ],
)
def test_bad_input_exits_2(args: list[str], message: str) -> None:
    """Bad input is one 'Error:' sentence on stderr and exit 2, with nothing printed
    before it (no launching line); nothing is started."""
    result = servegate("launch", *args)
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("Error: ")  # validated before a launching line
    assert message in result.stderr
    assert result.stderr.count("\n") <= 2
    assert state.list_tracked() == []


def test_port_taken_is_exit_2(port: int) -> None:
    """A port already taken before launch: exit 2, the command never starts."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))
        sock.listen()
        result = servegate(
            "launch", "--engine", "sglang", "--port", str(port), "--", PY, FAKE, "sglang", str(port)
        )
    assert result.returncode == 2
    assert f"port {port} is already in use by PID {os.getpid()} (" in result.stderr


def test_wait_and_stop_bad_input() -> None:
    """wait with a dead PID and stop of an unknown name are usage errors (exit 2)."""
    result = servegate("wait", "--pid", str(2**22 + 4321), "--ready", "x")
    assert result.returncode == 2 and "no process has PID" in result.stderr
    result = servegate("stop", "nobody")
    assert result.returncode == 2 and "no running server named 'nobody'" in result.stderr


def test_foreground_stops_the_tree_on_sigterm(port: int, tmp_path: Path) -> None:
    """launch --foreground stays attached after READY; SIGTERM stops the tree, exit 0."""
    pidfile = tmp_path / "escapee"
    proc = subprocess.Popen(
        [
            PY,
            "-m",
            "servegate",
            "launch",
            "--foreground",
            "--ready",
            "generic server ready",
            "--",
            PY,
            MISBEHAVE,
            "escape",
            str(port),
            str(pidfile),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().startswith("SERVER READY")
    escapee = read_pid(pidfile)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "stopped 2 process(es)" in err
    assert not alive(escapee)


def test_sigkilled_launcher_takes_its_tree_along(port: int, tmp_path: Path) -> None:
    """Even when the launching process is SIGKILLed, the keeper stops the whole tree."""
    pidfile = tmp_path / "escapee"
    code = (
        "import sys, time; from servegate.launch import launch\n"
        f"s = launch([{PY!r}, {MISBEHAVE!r}, 'escape', '{port}', {str(pidfile)!r}],"
        " ready=['generic server ready'], timeout_s=30)\n"
        "print(s.pid, flush=True); time.sleep(3600)\n"
    )
    proc = subprocess.Popen([PY, "-c", code], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    server_pid = int(proc.stdout.readline())
    escapee = read_pid(pidfile)
    assert alive(server_pid) and alive(escapee)
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate()
    deadline = time.monotonic() + 15
    while (alive(server_pid) or alive(escapee)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(server_pid)
    assert not alive(escapee)


def test_garbage_and_a_10mb_line_are_survived(port: int) -> None:
    """Binary junk and a 10 MB line without newline do not stop the ready line's match."""
    result = servegate(
        "launch",
        "--ready",
        "generic server ready",
        "--name",
        "junk",
        "--",
        PY,
        MISBEHAVE,
        "garbage",
        str(port),
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert servegate("stop", "junk").returncode == 0


@pytest.mark.slow
def test_one_gigabyte_of_log(port: int, tmp_path: Path) -> None:
    """1 GB of output is drained and scanned; the ready line after it is still seen."""
    log = tmp_path / "flood.log"
    result = servegate(
        "launch",
        "--ready",
        "generic server ready",
        "--log",
        str(log),
        "--name",
        "flood",
        "--",
        PY,
        MISBEHAVE,
        "flood",
        str(port),
        "1024",
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert log.stat().st_size > 1024 * 1024 * 1024
    assert servegate("stop", "flood").returncode == 0


def test_wait_url_alone_gates_a_generic_server(port: int, tmp_path: Path) -> None:
    """wait --url URL with the generic engine probes that URL (any 2xx): READY, exit 0."""
    with subprocess.Popen(
        [PY, "-m", "http.server", str(port), "--bind", "127.0.0.1", "--directory", str(tmp_path)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    ) as server:
        try:
            result = servegate("wait", "--url", f"http://127.0.0.1:{port}", "--json")
        finally:
            server.terminate()
    assert result.returncode == 0, result.stderr
    data = verdict_of(result)
    assert (data["status"], data["detected_by"], data["engine"]) == ("ready", "probe", "generic")
    assert data["url"] == f"http://127.0.0.1:{port}"
    assert f"GET http://127.0.0.1:{port}" in str(data["reason"])


def test_quiet_prints_the_verdict_without_progress(port: int) -> None:
    """-q on launch and wait: no launching line, phase lines or status; the verdict and
    how to stop the server still print. Each run is compared with the same run without -q."""
    sim = (PY, "-m", "servegate", "sim", "--engine", "vllm", "--startup", "1", "--port", str(port))
    gate = ("--engine", "vllm", "--port", str(port))

    def phase_lines(text: str) -> list[str]:
        return [line for line in text.splitlines() if line.startswith("phase ")]

    loud = servegate("launch", *gate, "--name", "loud", "--", *sim)
    assert loud.returncode == 0, loud.stderr
    assert loud.stderr.startswith("launching ") and phase_lines(loud.stderr)
    tracked = state.load("loud")
    assert tracked is not None
    watched = ("--log", tracked.log_path, "--pid", str(tracked.pid))
    waited = servegate("wait", *gate, *watched)
    hushed = servegate("wait", *gate, *watched, "-q")
    assert (waited.returncode, hushed.returncode) == (0, 0), hushed.stderr
    assert waited.stdout.startswith("SERVER READY after ") and phase_lines(waited.stderr)
    assert hushed.stdout.startswith("SERVER READY after ") and not phase_lines(hushed.stderr)
    assert servegate("stop", "loud").returncode == 0

    calm = servegate("launch", *gate, "--name", "calm", "--quiet", "--", *sim)
    assert calm.returncode == 0, calm.stderr
    assert calm.stdout.startswith("SERVER READY after ")
    assert "launching" not in calm.stderr and not phase_lines(calm.stderr)
    assert "servegate stop calm" in calm.stderr
    assert servegate("stop", "calm").returncode == 0
    assert state.list_tracked() == []


def test_a_port_the_command_contradicts_is_named_at_launch_and_in_the_timeout(port: int) -> None:
    """launch --port A -- server --port B is no error (a container may map A to B), but
    a note says so right after the launching line, and the TIMEOUT's hint names it."""
    other = free_port()
    sim = (PY, "-m", "servegate", "sim", "--engine", "vllm", "--startup", "0.2")
    result = servegate(
        "launch", "--engine", "vllm", "--port", str(port), "--timeout", "3", "--json",
        "--", *sim, "--port", str(other),
    )  # fmt: skip
    assert result.returncode == 124, result.stderr
    said = f"--port {port} but the command says --port {other}"
    lines = result.stderr.splitlines()
    assert lines[0].startswith("launching ")
    note = f"note: {said}; the probe asks port {port} (right if something maps it there)"
    assert note in lines[1:], result.stderr
    hint = str(verdict_of(result)["hint"])
    assert hint.startswith(f"{said}: pass --port {other} unless something maps {port} to it")
    assert state.list_tracked() == []


def test_wait_on_a_url_whose_root_answers_404_names_the_answer_and_the_fix(port: int) -> None:
    """wait --url on a server whose / answers 404: a progress line says so with the fix
    (--health-url URL/health), and the TIMEOUT's reason and hint say it again."""
    sim = (PY, "-m", "servegate", "sim", "--engine", "vllm", "--startup", "0.2")
    up = servegate(
        "launch", "--engine", "vllm", "--port", str(port), "--name", "up",
        "--", *sim, "--port", str(port),
    )  # fmt: skip
    assert up.returncode == 0, up.stderr
    try:
        url = f"http://127.0.0.1:{port}"
        result = servegate("wait", "--url", url, "--stall", "1", "--json")
    finally:
        assert servegate("stop", "up").returncode == 0
    assert result.returncode == 124, result.stderr
    fix = f"pass --health-url {url}/health"
    note = f"GET {url} answered 404: the server is up, but this URL will not say it is ready"
    assert f"{note}; {fix}" in result.stderr.splitlines(), result.stderr
    data = verdict_of(result)
    assert f"GET {url} answered 404" in str(data["reason"])
    assert fix in str(data["hint"]) and "a hang" not in str(data["hint"])
