"""A real streaming server per test: tests/bench/sse_server.py on an ephemeral port."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from tests.conftest import free_port

SERVER = Path(__file__).with_name("sse_server.py")


def start_server(*args: str) -> tuple[subprocess.Popen[str], str]:
    """Start the test server with ``args`` and return it with its base URL once it listens."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, str(SERVER), "--port", str(port), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.startswith("listening"), line
    return proc, f"http://127.0.0.1:{port}"


def stop_server(proc: subprocess.Popen[str]) -> None:
    """Stop a test server and reap it."""
    if proc.poll() is None:
        proc.terminate()
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    if proc.stdout is not None:
        proc.stdout.close()


@pytest.fixture
def sse_server() -> Iterator[Callable[..., str]]:
    """A factory: ``sse_server("--ttft-ms", "20")`` -> base URL; every server is stopped."""
    procs: list[subprocess.Popen[str]] = []

    def make(*args: str) -> str:
        proc, url = start_server(*args)
        procs.append(proc)
        return url

    yield make
    for proc in procs:
        stop_server(proc)
