"""``wait``: gating a server someone else started, from its log, PID or URL."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from servegate.errors import ServerCrashed, ServerTimeout, UsageError
from servegate.gate import wait

from .helpers import FAKE, PY, alive


@pytest.fixture
def procs() -> Iterator[list[subprocess.Popen[bytes]]]:
    """Processes a test starts itself (nohup-style); killed at the end."""
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for proc in started:
        proc.kill()
        proc.wait()


def _nohup(args: list[str], log: Path, procs: list[subprocess.Popen[bytes]]) -> int:
    with log.open("wb") as out:
        proc = subprocess.Popen(
            args, stdout=out, stderr=subprocess.STDOUT, env={"PYTHONUNBUFFERED": "1", **_env()}
        )
    procs.append(proc)
    return proc.pid


def _env() -> dict[str, str]:
    return dict(os.environ)


def test_wait_on_log_pid_and_port(port: int, tmp_path: Path, procs: list) -> None:
    """A nohup'ed SGLang-like server is READY from its log plus /health; wait kills nothing."""
    log = tmp_path / "server.log"
    pid = _nohup([PY, FAKE, "sglang", str(port), "--delay", "0.02"], log, procs)
    verdict = wait(log_path=str(log), pid=pid, engine="sglang", port=port, timeout_s=30)
    assert verdict.status == "ready"
    assert "load_weights" in [p.name for p in verdict.phases]
    assert alive(pid)


def test_wait_url_only(port: int, tmp_path: Path, procs: list) -> None:
    """With only --url, the profile's probe path decides."""
    _nohup([PY, FAKE, "tgi", str(port)], tmp_path / "x.log", procs)
    verdict = wait(url=f"http://127.0.0.1:{port}", engine="tgi", timeout_s=30)
    assert (verdict.status, verdict.detected_by) == ("ready", "probe")


def test_wait_sees_the_exit_of_a_pid(tmp_path: Path, procs: list) -> None:
    """A watched PID that exits is a CRASH, with the last traceback line as the reason."""
    log = tmp_path / "c.log"
    pid = _nohup(
        [PY, "-c", "import time; time.sleep(0.3); raise ValueError('bad flag')"], log, procs
    )
    with pytest.raises(ServerCrashed) as info:
        wait(log_path=str(log), pid=pid, ready=["never"], timeout_s=30)
    verdict = info.value.verdict
    assert verdict.detected_by == "exit"
    assert verdict.matched_line == "ValueError: bad flag"
    assert "ValueError: bad flag" in verdict.reason


def test_wait_follows_truncation(tmp_path: Path) -> None:
    """A ready line written after the log was truncated in place is still seen."""
    log = tmp_path / "trunc.log"
    log.write_bytes(b"old run line\n" * 1000)

    def writer() -> None:
        time.sleep(0.3)
        log.write_bytes(b"fresh start\n")
        time.sleep(0.2)
        with log.open("ab") as f:
            f.write(b"generic server ready\n")

    thread = threading.Thread(target=writer)
    thread.start()
    verdict = wait(log_path=str(log), ready=["generic server ready"], timeout_s=10)
    thread.join()
    assert verdict.status == "ready"


def test_wait_stall_on_a_silent_log(tmp_path: Path) -> None:
    """A log that stops growing is a TIMEOUT after --stall seconds."""
    log = tmp_path / "silent.log"
    log.write_bytes(b"Load weight begin. avail mem=50 GB\n")
    with pytest.raises(ServerTimeout) as info:
        wait(
            log_path=str(log),
            engine="sglang",
            health_url="http://127.0.0.1:9/health",
            timeout_s=30,
            stall_s=0.5,
        )
    assert info.value.verdict.reason.startswith("no progress for 0.5s during load_weights")


def test_wait_bad_input() -> None:
    """Nothing to watch, a missing PID or a missing log folder are usage errors."""
    with pytest.raises(UsageError, match="--log FILE, --pid PID or --url URL"):
        wait()
    with pytest.raises(UsageError, match="no process has PID"):
        wait(pid=2**22 + 12345, ready=["x"])
    with pytest.raises(UsageError, match="does not exist"):
        wait(log_path="/no/such/folder/x.log", ready=["x"])
    assert sys.executable
