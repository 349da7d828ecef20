"""Real process trees for the sampler's tests, always taken down whole."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from servegate.telemetry import Sampler, Snapshot

TREE = str(Path(__file__).parent / "scripts" / "tree.py")


@contextlib.contextmanager
def tree(*args: str, stdin: bool = False) -> Iterator[subprocess.Popen[str]]:
    """``tree.py ARGS`` as a session leader; the whole session is killed at the end."""
    proc = subprocess.Popen(
        [sys.executable, TREE, *args],
        stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        yield proc
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                stream.close()


def wait_for(
    sampler: Sampler, test: Callable[[Snapshot], bool], timeout_s: float = 60.0
) -> Snapshot:
    """The first new snapshot that passes ``test``; AssertionError with the last one if none."""
    deadline = time.monotonic() + timeout_s
    seen = float("-inf")
    last: Snapshot | None = None
    while time.monotonic() < deadline:
        latest = sampler.latest()
        if latest is not None and latest.t_s > seen:
            seen, last = latest.t_s, latest
            if test(latest):
                return latest
        time.sleep(0.02)
    raise AssertionError(f"no snapshot passed within {timeout_s}s; last: {last}")
