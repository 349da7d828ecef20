"""The Python API: launch(), Server, and the verdicts real processes produce."""

from __future__ import annotations

import json
import shlex
import signal
import socket
import time
import urllib.request
from pathlib import Path

import pytest
from tests.gate.helpers import FAKE, MISBEHAVE, PY, SCRIPTS, alive, read_pid

import servegate
from servegate.errors import PortInUseError, ServerCrashed, ServerTimeout
from servegate.gate.options import port_from_command
from servegate.launch import launch, state
from servegate.launch.tree import stop_tree

EDGES = str(SCRIPTS / "edges.py")


def test_ready_then_stop(port: int, tmp_path: Path) -> None:
    """A server printing SGLang's startup lines is READY, tracked, then fully stopped."""
    log = tmp_path / "server.log"
    with launch(
        [PY, FAKE, "sglang", str(port)], engine="sglang", port=port, timeout_s=30, log_path=str(log)
    ) as server:
        verdict = server.verdict
        assert verdict.status == "ready"
        assert verdict.detected_by == "log"
        assert server.url == f"http://127.0.0.1:{port}"
        assert server.alive()
        names = [phase.name for phase in verdict.phases]
        assert names[:3] == ["parse_args", "init_distributed", "load_weights"]
        assert "capture_cuda_graphs" in names and "warmup" in names
        assert [t.name for t in state.list_tracked()] == [server.name]
        pid = server.pid
    report = server.stop()
    assert pid in report.killed
    assert report.port_free is True
    assert not alive(pid)
    assert state.list_tracked() == []
    assert "The server is fired up and ready to roll!" in log.read_text()


def test_public_names() -> None:
    """servegate exports launch, wait, Server, StopReport and Verdict."""
    for name in ("launch", "wait", "Server", "StopReport", "Verdict"):
        assert name in servegate.__all__


def test_vllm_ready_needs_one_real_completion(port: int) -> None:
    """For vLLM, READY comes only after /health and a 1-token completion succeed."""
    with launch([PY, FAKE, "vllm", str(port)], engine="vllm", port=port, timeout_s=30) as server:
        with urllib.request.urlopen(f"{server.url}/stats", timeout=5) as response:
            stats = json.loads(response.read())
        assert stats["completions"] >= 1
        assert server.verdict.phases[-1].name == "http_startup"


def test_port_is_parsed_from_the_command(port: int) -> None:
    """Without port=, the command's --port N is probed (and checked free before)."""
    with launch(
        [PY, FAKE, "llamacpp", str(port), "--port", str(port)], engine="llamacpp", timeout_s=30
    ) as server:
        assert server.port == port


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("python3 -m sglang.launch_server --model-path /m --port 30000", 30000),
        ("vllm serve /m --host 0.0.0.0 --port=8001", 8001),
        ("llama-server -m m.gguf -p hello --port 8080", 8080),
        ("text-generation-launcher --model-id m -p 3001", 3001),
        ("trtllm-serve /m --host localhost --port 8002 --port 8003", 8003),
        ("docker run -p 9000:8000 image", None),
        ("llama-server -m m.gguf -p 8080", None),
        ("bash -c 'exec vllm serve /m --port 8004 > log'", 8004),
        ("vllm serve /m --port 0", None),
    ],
)
def test_the_commands_port_is_read_from_each_engines_flags(command: str, expected: int) -> None:
    """--port N, --port=N (the last wins), TGI's -p N, and inside sh -c; -p elsewhere is
    docker's mapping or llama.cpp's prompt, and port 0 is no port."""
    assert expected == port_from_command(shlex.split(command))


@pytest.mark.parametrize(("code", "kind"), [(0, "exit"), (3, "exit")])
def test_silent_exit_is_a_crash(code: int, kind: str) -> None:
    """A process that exits without a traceback is a CRASH with its exit code, at once."""
    started = time.monotonic()
    with pytest.raises(ServerCrashed) as info:
        launch([PY, MISBEHAVE, "exit", str(code)], ready=["never printed"], timeout_s=60)
    verdict = info.value.verdict
    assert (verdict.status, verdict.kind, verdict.exit_code) == ("crash", kind, code)
    assert verdict.detected_by == "exit"
    assert verdict.tail == ("loading something",)
    assert time.monotonic() - started < 20


def test_killed_by_signal() -> None:
    """Death by SIGKILL is reported as such, with the OOM-killer hint."""
    with pytest.raises(ServerCrashed) as info:
        launch([PY, MISBEHAVE, "signal", str(int(signal.SIGKILL))], ready=["x"], timeout_s=60)
    verdict = info.value.verdict
    assert verdict.exit_code == -9
    assert verdict.kind == "killed"
    assert "SIGKILL" in verdict.reason


def test_oom_then_hang_is_a_crash_not_a_timeout() -> None:
    """A fatal signature ends the wait although the process hangs on; the tree is stopped."""
    with pytest.raises(ServerCrashed) as info:
        launch(
            [PY, MISBEHAVE, "oom-hang"],
            engine="sglang",
            port=None,
            ready=["x"],
            timeout_s=60,
            health_url="http://127.0.0.1:9/health",
        )
    verdict = info.value.verdict
    assert verdict.kind == "oom"
    assert verdict.detected_by == "signature"
    assert verdict.matched_line is not None and "CUDA out of memory" in verdict.matched_line
    assert not alive(verdict.pid or 0)


def test_a_wrapper_line_is_reported_by_the_cause_that_follows_it() -> None:
    """SGLang's "Scheduler hit an exception" is followed by its cause: the verdict names it."""
    with pytest.raises(ServerCrashed) as info:
        launch(
            [PY, MISBEHAVE, "wrapper-then-oom"],
            engine="sglang",
            port=None,
            ready=["x"],
            timeout_s=60,
            health_url="http://127.0.0.1:9/health",
        )
    verdict = info.value.verdict
    assert verdict.kind == "oom"
    assert verdict.hint is not None and "mem-fraction-static" in verdict.hint
    assert not alive(verdict.pid or 0)


def test_harmless_traceback_is_not_a_crash(port: int) -> None:
    """A server that prints a traceback and carries on becomes READY."""
    with launch(
        [PY, MISBEHAVE, "traceback-ok", str(port)], ready=["generic server ready"], timeout_s=30
    ) as server:
        assert server.verdict.status == "ready"


def test_essential_child_exit_is_a_crash() -> None:
    """SGLang's scheduler dying while the parent lives is CRASH kind child-exit."""
    with pytest.raises(ServerCrashed) as info:
        launch(
            [PY, MISBEHAVE, "lose-child"],
            engine="sglang",
            health_url="http://127.0.0.1:9/health",
            timeout_s=60,
        )
    verdict = info.value.verdict
    assert (verdict.kind, verdict.detected_by) == ("child-exit", "child-exit")
    assert "scheduler" in verdict.reason


def test_stall_names_the_phase() -> None:
    """No output for --stall seconds is a TIMEOUT whose reason names the last phase."""
    with pytest.raises(ServerTimeout) as info:
        launch(
            [PY, MISBEHAVE, "stall", "Capture cuda graph begin. This can take minutes."],
            engine="sglang",
            health_url="http://127.0.0.1:9/health",
            timeout_s=60,
            stall_s=1.0,
            sample_s=0,  # without telemetry: an idle one is stuck (tests/gate/test_stuck_slow.py)
        )
    verdict = info.value.verdict
    assert verdict.reason.startswith("no progress for 1.0s during capture_cuda_graphs")
    assert (verdict.kind, verdict.detected_by) == ("stall", "stall")
    # after the stall at the soonest; how much later depends on the machine's load
    assert verdict.line().startswith("TIMEOUT after ") and verdict.elapsed_s >= 1.0
    assert info.value.exit_code == 124


def test_deadline_despite_chatter() -> None:
    """Output keeps the stall timer quiet but not the hard cap."""
    with pytest.raises(ServerTimeout) as info:
        launch(
            [PY, MISBEHAVE, "chatter"],
            engine="tgi",
            health_url="http://127.0.0.1:9/h",
            timeout_s=1.5,
            stall_s=1.0,
        )
    assert info.value.verdict.detected_by == "deadline"
    assert "during start_shards" in info.value.verdict.reason


def test_a_repeated_heartbeat_is_not_progress() -> None:
    """A line repeated with only its clock changing does not hold off the stall timer."""
    with pytest.raises(ServerTimeout) as info:
        launch(
            [PY, MISBEHAVE, "heartbeat"],
            engine="tgi",
            health_url="http://127.0.0.1:9/h",
            timeout_s=30,
            stall_s=1.0,
            sample_s=0,  # the plain stall (with telemetry an idle one is stuck)
        )
    assert info.value.verdict.reason.startswith("no progress for 1.0s during start_shards")


def test_keep_leaves_the_tree_for_inspection() -> None:
    """keep=True leaves a crashed server's tree running and tracked; stop ends it."""
    with pytest.raises(ServerCrashed) as info:
        launch([PY, MISBEHAVE, "oom-hang"], ready=["x"], keep=True, timeout_s=60, name="kept")
    pid = info.value.verdict.pid
    assert pid is not None and alive(pid)
    tracked = state.load("kept")
    assert tracked is not None
    report = stop_tree(
        pid=tracked.pid,
        pgid=tracked.pgid,
        roots=(tracked.keeper_pid or 0,),
        marker=tracked.marker,
        grace_s=2.0,
    )
    assert pid in report.killed and not alive(pid)


def test_stop_kills_processes_that_escaped_the_group(port: int, tmp_path: Path) -> None:
    """A grandchild that called setsid() is snapshotted and killed by stop()."""
    pidfile = tmp_path / "escapee"
    server = launch(
        [PY, MISBEHAVE, "escape", str(port), str(pidfile)],
        ready=["generic server ready"],
        timeout_s=30,
    )
    escapee = read_pid(pidfile)
    assert alive(escapee)
    report = server.stop(grace_s=1.0)
    assert escapee in report.killed
    assert not alive(escapee)


def test_port_taken_before_launch_starts_nothing(port: int) -> None:
    """A busy port is a usage error before anything starts."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))
        sock.listen()
        with pytest.raises(PortInUseError, match=f"port {port} is already in use"):
            launch([PY, FAKE, "sglang", str(port)], engine="sglang", port=port)
    assert state.list_tracked() == []


def test_an_essential_child_that_renames_itself_late_is_watched() -> None:
    """A child named sglang::scheduler only 0.5 s after it started, dying 2 s later: CRASH."""
    with pytest.raises(ServerCrashed) as info:
        launch(
            [PY, EDGES, "rename-child"],
            engine="sglang",
            health_url="http://127.0.0.1:9/health",
            timeout_s=20,
        )
    verdict = info.value.verdict
    assert (verdict.kind, verdict.detected_by) == ("child-exit", "child-exit")
    assert "sglang::scheduler_TP0" in verdict.reason
    assert not alive(verdict.pid or 0)
