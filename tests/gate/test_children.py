"""Essential children: found by name, also when they take that name after they started."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from servegate.gate.children import ChildWatch

from .helpers import PY

# waits for a go file, then execs itself under a new command line (same PID and start
# time), as setproctitle() looks from outside; then lives until killed. The new name is
# built, so that this code itself does not carry it.
_RENAMER = """
import os, sys, time
go = sys.argv[1]
while not os.path.exists(go):
    time.sleep(0.01)
os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(60)", "role::" + "worker"])
"""


class _Clock:
    """A hand-driven monotonic clock."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def parent(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], Path]]:
    """A parent process whose only child renames itself once ``go`` exists."""
    go = tmp_path / "go"
    code = (
        "import subprocess, sys; "
        f"c = subprocess.Popen([sys.executable, '-c', {_RENAMER!r}, {str(go)!r}]); c.wait()"
    )
    proc = subprocess.Popen([PY, "-c", code])
    yield proc, go
    for child in _children(proc.pid):
        child.kill()
    proc.kill()
    proc.wait()


def _children(pid: int) -> list[psutil.Process]:
    try:
        return list(psutil.Process(pid).children(recursive=True))
    except psutil.Error:
        return []


def _wait_renamed(pid: int) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if any("role::worker" in " ".join(c.cmdline()) for c in _children(pid)):
            return
        time.sleep(0.02)
    raise AssertionError("the child never renamed itself")


def _wait_child(pid: int) -> None:
    deadline = time.monotonic() + 20
    while not _children(pid):
        assert time.monotonic() < deadline, "no child started"
        time.sleep(0.02)


def test_a_child_renamed_after_the_first_scan_is_found(
    parent: tuple[subprocess.Popen[bytes], Path],
) -> None:
    """Unmatched at first, the child is looked at again and found once it takes its name."""
    proc, go = parent
    clock = _Clock()
    watch = ChildWatch(proc.pid, [r"role::worker"], window_s=60.0, clock=clock)
    try:
        _wait_child(proc.pid)
        assert watch.scan() == []
        go.touch()
        _wait_renamed(proc.pid)
        clock.now += 30.0
        found = watch.scan()
        assert [child.label for child in found] == ["role::worker"]
        assert watch.scan() == []  # found once
    finally:
        watch.close()


def test_a_child_renamed_after_the_window_is_left_alone(
    parent: tuple[subprocess.Popen[bytes], Path],
) -> None:
    """Past the window an unmatched descendant is no longer looked at (it is no worker)."""
    proc, go = parent
    clock = _Clock()
    watch = ChildWatch(proc.pid, [r"role::worker"], window_s=60.0, clock=clock)
    try:
        _wait_child(proc.pid)
        assert watch.scan() == []
        go.touch()
        _wait_renamed(proc.pid)
        clock.now += 61.0
        assert watch.scan() == []
    finally:
        watch.close()
