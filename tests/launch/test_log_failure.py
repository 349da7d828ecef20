"""A log that cannot be written never costs the server its life: the keeper drains on."""

from __future__ import annotations

import contextlib
import json
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from servegate.launch import state

from .helpers import PY, TINY, free_port, servegate

FLOOD_KB = 3 * 1024  # three times the keeper's 1 MiB pipe: the server blocks unless drained


@pytest.fixture
def tiny_fs(tmp_path: Path) -> Iterator[Path]:
    """A real 64 KiB tmpfs: writes past 64 KiB fail with ENOSPC (needs root to mount)."""
    mount = tmp_path / "full"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k,mode=0755", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a 64 KiB tmpfs (needs root): {done.stderr.strip()}")
    try:
        yield mount
    finally:
        # lazy: a keeper that is still closing its log must not keep the mount busy
        subprocess.run(["umount", "-l", str(mount)], check=False)


def wait_for(predicate: object, timeout_s: float = 60.0) -> None:
    """Wait until ``predicate()`` is true, or fail after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while not predicate():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError(f"still false after {timeout_s}s: {predicate}")
        time.sleep(0.05)


def test_full_log_filesystem_after_ready_keeps_the_server(tiny_fs: Path, tmp_path: Path) -> None:
    """After READY the log's filesystem fills up: the server lives on and answers, its
    output keeps being drained (3 MiB dropped and counted), ps shows the problem and
    stop reports it."""
    port = free_port()
    marker = tmp_path / "flooded"
    log = tiny_fs / "server.log"
    launched = servegate(
        "launch", "--name", "full", "--ready", "tiny server ready", "--port", str(port),
        "--log", str(log), "--timeout", "60",
        "--", PY, TINY, "flood", str(port), str(FLOOD_KB), str(marker),
    )  # fmt: skip
    assert launched.returncode == 0, launched.stderr
    try:
        tracked = state.load("full")
        assert tracked is not None
        # the marker is written only after all 3 MiB went through the 1 MiB pipe
        wait_for(lambda: marker.exists() or not tracked.alive())
        assert tracked.alive(), "the server was killed when its log filled up"
        # the count of dropped bytes is brought up to date within a second
        expected = FLOOD_KB * 1024 - 64 * 1024
        wait_for(lambda: (t := state.load("full")) is not None and t.log_dropped_bytes >= expected)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10) as response:
            assert response.status == 200
        assert log.read_bytes().startswith(b"tiny server ready\n")  # what fitted, verbatim

        listing = json.loads(servegate("ps", "--json").stdout)
        assert [entry["name"] for entry in listing] == ["full"]
        entry = listing[0]
        assert entry["log_error"] == "No space left on device (ENOSPC)"
        assert entry["state"].startswith("running; log write failed")
        assert "log write failed: No space left on device" in servegate("ps").stdout
    finally:
        stopped = servegate("stop", "full")
    assert stopped.returncode == 0, stopped.stderr
    assert "log write failed: No space left on device (ENOSPC)" in stopped.stdout
    assert "bytes of output dropped" in stopped.stdout
    with contextlib.suppress(OSError):
        urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2)
        pytest.fail("the server still answers after stop")
