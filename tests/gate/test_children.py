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


# a role process that forks a helper (which inherits its command line, as torch.compile's
# workers inherit VLLM::Worker) and starts a child of another role (as vLLM's engine core
# starts its workers); ``go`` appears once all three run
_FORKER = """
import os, subprocess, sys, time
go = sys.argv[1]
if os.fork() == 0:
    time.sleep(60)
    os._exit(0)
other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "role::" + "other"])
open(go, "w").close()
other.wait()
"""


def test_a_helper_forked_by_an_essential_child_is_not_essential(tmp_path: Path) -> None:
    """The fork of a role::core process is its helper; a child of another role counts."""
    go = tmp_path / "go"
    code = (
        "import subprocess, sys; "
        f"c = subprocess.Popen([sys.executable, '-c', {_FORKER!r}, {str(go)!r}, 'role::core']);"
        " c.wait()"
    )
    proc = subprocess.Popen([PY, "-c", code])
    watch = ChildWatch(proc.pid, [r"role::core", r"role::other"])
    try:
        deadline = time.monotonic() + 30
        while not go.exists():
            assert time.monotonic() < deadline, "the role processes never started"
            time.sleep(0.02)
        # three descendants carry a role name: the core, its fork, the other role
        named = [c for c in _children(proc.pid) if "role::" in " ".join(c.cmdline())]
        assert len(named) == 3
        found = watch.scan()
        assert sorted(child.label for child in found) == ["role::core", "role::other"]
        core = next(child for child in found if child.label == "role::core")
        assert psutil.Process(core.pid).ppid() == proc.pid  # the core itself, not its fork
        assert watch.scan() == []
    finally:
        watch.close()
        for child in _children(proc.pid):
            child.kill()
        proc.kill()
        proc.wait()
