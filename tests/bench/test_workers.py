"""Worker processes live and die with the bench: Ctrl-C, SIGTERM and SIGKILL of the parent."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator

import psutil
import pytest

DEADLINE_S = 30.0


def _requests_served(url: str) -> int:
    with urllib.request.urlopen(url + "/stats", timeout=5) as resp:
        return int(json.loads(resp.read())["requests"])


def _wait_for(what: str, check: Callable[[], bool]) -> None:
    """Poll ``check`` until it holds; fail the test after a generous deadline."""
    deadline = time.monotonic() + DEADLINE_S
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"waited {DEADLINE_S:g} s for {what}")
        time.sleep(0.05)


def _workers(pid: int) -> list[psutil.Process]:
    try:
        children = psutil.Process(pid).children()
    except psutil.NoSuchProcess:
        return []
    return [c for c in children if "worker_main" in " ".join(c.cmdline())]


def _gone(proc: psutil.Process) -> bool:
    try:
        return proc.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


@pytest.fixture
def loading_bench(
    sse_server: Callable[..., str],
) -> Iterator[tuple[subprocess.Popen[str], list[psutil.Process]]]:
    """``servegate bench --workers 2`` loading a server, with both workers sending."""
    url = sse_server("--ttft-ms", "2", "--itl-ms", "2")
    cmd = [sys.executable, "-m", "servegate", "bench", "--url", url, "--concurrency", "4",
           "--workers", "2", "--duration", "300", "--input-len", "4", "--output-len", "20",
           "--metrics-url", ""]  # fmt: skip
    # a session of its own: a signal to its group is what a terminal's Ctrl-C sends
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    workers: list[psutil.Process] = []
    try:
        _wait_for("two workers", lambda: len(_workers(proc.pid)) == 2)
        workers = _workers(proc.pid)
        _wait_for("the workers to load the server", lambda: _requests_served(url) > 40)
        yield proc, workers
    finally:
        for p in [psutil.Process(proc.pid), *workers] if proc.poll() is None else workers:
            with contextlib.suppress(psutil.Error):
                p.kill()
        proc.communicate(timeout=DEADLINE_S)


def _ends_with_workers(
    proc: subprocess.Popen[str], workers: list[psutil.Process]
) -> tuple[int, str]:
    """Wait for the bench and then its workers to end; its exit code and stderr."""
    code = proc.wait(timeout=DEADLINE_S)
    _wait_for("the workers to end", lambda: all(_gone(w) for w in workers))
    assert proc.stderr is not None
    return code, proc.stderr.read()  # complete: every holder of the pipe has ended


def test_ctrl_c_ends_workers_with_one_line(
    loading_bench: tuple[subprocess.Popen[str], list[psutil.Process]],
) -> None:
    """Ctrl-C (SIGINT to the whole group): exit 130, one line on stderr, no worker left."""
    proc, workers = loading_bench
    os.killpg(proc.pid, signal.SIGINT)
    code, err = _ends_with_workers(proc, workers)
    assert code == 130
    assert [line for line in err.splitlines() if line.strip()] == ["Error: interrupted."]


def test_sigterm_ends_workers_with_one_line(
    loading_bench: tuple[subprocess.Popen[str], list[psutil.Process]],
) -> None:
    """SIGTERM to the bench alone: exit 143, one line on stderr, no worker left."""
    proc, workers = loading_bench
    proc.terminate()
    code, err = _ends_with_workers(proc, workers)
    assert code == 128 + signal.SIGTERM
    assert [line for line in err.splitlines() if line.strip()] == ["Error: terminated."]


def test_sigkill_ends_workers(
    loading_bench: tuple[subprocess.Popen[str], list[psutil.Process]],
) -> None:
    """SIGKILL of the bench, which can run no code: its workers end anyway."""
    proc, workers = loading_bench
    proc.kill()
    code, _ = _ends_with_workers(proc, workers)
    assert code == -signal.SIGKILL
