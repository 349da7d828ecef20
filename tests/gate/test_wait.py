"""``wait``: gating a server someone else started, from its log, PID or URL."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import datetime
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


def test_wait_on_log_pid_and_port(
    port: int, tmp_path: Path, procs: list[subprocess.Popen[bytes]]
) -> None:
    """A nohup'ed SGLang-like server is READY from its log plus /health; wait kills nothing."""
    log = tmp_path / "server.log"
    pid = _nohup([PY, FAKE, "sglang", str(port), "--delay", "0.02"], log, procs)
    verdict = wait(log_path=str(log), pid=pid, engine="sglang", port=port, timeout_s=30)
    assert verdict.status == "ready"
    assert "load_weights" in [p.name for p in verdict.phases]
    assert alive(pid)


def test_wait_url_only(port: int, tmp_path: Path, procs: list[subprocess.Popen[bytes]]) -> None:
    """With only --url, the profile's probe path decides."""
    _nohup([PY, FAKE, "tgi", str(port)], tmp_path / "x.log", procs)
    verdict = wait(url=f"http://127.0.0.1:{port}", engine="tgi", timeout_s=30)
    assert (verdict.status, verdict.detected_by) == ("ready", "probe")


def test_wait_sees_the_exit_of_a_pid(tmp_path: Path, procs: list[subprocess.Popen[bytes]]) -> None:
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


def test_timeout_line_carries_its_hint(tmp_path: Path) -> None:
    """A TIMEOUT line ends with its hint, as a CRASH line does."""
    log = tmp_path / "silent.log"
    log.write_bytes(b"Load weight begin. avail mem=50 GB\n")
    with pytest.raises(ServerTimeout) as info:
        wait(log_path=str(log), engine="sglang", ready=["never"], timeout_s=30, stall_s=0.5)
    verdict = info.value.verdict
    assert verdict.hint is not None and "raise --stall" in verdict.hint
    assert verdict.line() == f"TIMEOUT after {verdict.elapsed_s:.1f}s: {verdict.reason} - " + (
        verdict.hint
    )


def _sglang_backlog(log: Path, t0: float) -> None:
    """An SGLang log of a start that began at ``t0`` and is over: stamps, no live reading."""

    def at(offset: float, text: str) -> str:
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t0 + offset))
        return f"[{stamp} TP0] {text}\n"

    log.write_text(
        at(0, "server_args=ServerArgs(model_path='/models/m', port=30000)")
        + at(1, "Init torch distributed begin.")
        + at(3, "Init torch distributed ends. elapsed=2.0 s, mem usage=0.09 GB")
        + at(4, "Load weight begin. avail mem=50.69 GB")
        + at(14, "Load weight end. elapsed=10.0 s, type=LlamaForCausalLM, avail mem=34.9 GB")
        + at(15, "Capture cuda graph begin. This can take up to several minutes.")
        + at(22, "Capture cuda graph end. Time elapsed: 7.0 s")
        + at(23, "INFO:     Uvicorn running on http://127.0.0.1:30000 (Press CTRL+C to quit)")
        + at(30, "The server is fired up and ready to roll!")
    )


def test_wait_on_a_server_already_up_times_phases_by_the_log_stamps(tmp_path: Path) -> None:
    """Read all at once, an SGLang backlog's phases keep the lengths its own stamps show."""
    log = tmp_path / "up.log"
    t0 = int(time.time()) - 300
    _sglang_backlog(log, t0)
    verdict = wait(log_path=str(log), engine="sglang", timeout_s=30)
    spans = {phase.name: phase for phase in verdict.phases}
    lengths = {name: round((span.end_s or 0.0) - span.start_s, 3) for name, span in spans.items()}
    assert lengths == {
        "parse_args": 1.0,
        "init_distributed": 2.0,
        "load_weights": 10.0,
        "capture_cuda_graphs": 7.0,
        "warmup": 7.0,  # open until the ready line's own stamp
    }
    # without --pid the clock starts with the gate: the backlog lies before it
    started = datetime.fromisoformat(verdict.started_at).timestamp()
    assert spans["load_weights"].start_s == pytest.approx(t0 + 4 - started, abs=0.01)


def test_live_lines_are_timed_when_read_whatever_their_stamps(port: int, tmp_path: Path) -> None:
    """Lines read as they are written keep the reading time (their stamps are a year off)."""
    log = tmp_path / "live.log"
    procs: list[subprocess.Popen[bytes]] = []
    try:
        pid = _nohup([PY, FAKE, "sglang", str(port), "--delay", "0.02"], log, procs)
        verdict = wait(log_path=str(log), pid=pid, engine="sglang", port=port, timeout_s=30)
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()
    assert verdict.phases and all(0.0 <= p.start_s <= verdict.elapsed_s for p in verdict.phases)
