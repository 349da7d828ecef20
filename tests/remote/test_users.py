"""The SSH host's user: one of each test run's own as root, removed after the run, and a
killed run's removed by the next run's ``start`` (``sshd.reap_users``)."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
from pathlib import Path

import psutil
import pytest
from tests.conftest import MARKER
from tests.remote import sshd

from servegate._proc import start_ticks

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="makes users (useradd): root only")
ROOT = Path(__file__).resolve().parents[2]
RUN = """
import sys
from pathlib import Path
from tests.remote import sshd
remote = sshd.start(Path(sys.argv[1]), "a-killed-run")
print(remote.user, remote.daemon_pid, remote.old_dir, flush=True)
sys.stdin.read()
"""


def killed_run(folder: Path) -> tuple[pwd.struct_passwd, psutil.Process, Path]:
    """The user, the sshd daemon and the folder of the fake older servegate of a run
    killed (SIGKILL) after its sshd started."""
    run = subprocess.Popen([sys.executable, "-c", RUN, str(folder)], stdin=subprocess.PIPE,
                           stdout=subprocess.PIPE, text=True, cwd=ROOT)  # fmt: skip
    assert run.stdin is not None and run.stdout is not None
    user, daemon, old = run.stdout.readline().split()
    run.kill()
    run.wait(timeout=30)
    run.stdin.close()
    run.stdout.close()
    return pwd.getpwnam(user), psutil.Process(int(daemon)), Path(old)


def test_a_killed_runs_user_is_removed_and_a_running_runs_kept(tmp_path: Path) -> None:
    """The user of a run killed before its teardown is removed with its home, its
    processes and its sshd daemon; the user of a run still running (this one) is kept."""
    dead, daemon, old = killed_run(tmp_path / "ssh")
    assert daemon.is_running()
    live = sshd.add_user(sshd.run_user(os.getpid(), start_ticks(os.getpid())))
    left = subprocess.Popen(
        ["cat"], stdin=subprocess.PIPE, user=dead.pw_uid, group=dead.pw_gid, cwd="/"
    )
    running = psutil.Process(left.pid)
    try:
        removed = sshd.reap_users()
        assert dead.pw_name in removed
        assert live.pw_name not in removed
        assert sshd.ended(running)
        assert sshd.ended(daemon)
        with pytest.raises(KeyError):
            pwd.getpwnam(dead.pw_name)
        assert not Path(dead.pw_dir).exists()
        assert pwd.getpwnam(live.pw_name).pw_uid == live.pw_uid
        assert Path(live.pw_dir).is_dir()
    finally:
        left.kill()
        left.wait(timeout=30)
        assert left.stdin is not None
        left.stdin.close()
        sshd.remove_user(live.pw_name, live.pw_uid)
        sshd.remove_user(dead.pw_name, dead.pw_uid)
        shutil.rmtree(old)  # the killed run's own, in /tmp
    with pytest.raises(KeyError):
        pwd.getpwnam(live.pw_name)


def test_each_start_has_its_own_user_and_stop_removes_it(tmp_path: Path) -> None:
    """Two sshd servers started at once (as two test runs would) log in two users of this
    run, with their own homes and ports; each stop removes its user, home and daemon."""
    first = sshd.start(tmp_path / "first", MARKER)
    try:
        second = sshd.start(tmp_path / "second", MARKER)
        sshd.stop(second)
    finally:
        sshd.stop(first)
    assert first.user != second.user
    assert first.home != second.home
    assert first.port != second.port
    for remote in (first, second):
        assert remote.user.startswith(f"{sshd.USER_PREFIX}{os.getpid()}-")
        assert len(remote.user) <= 32  # Linux's limit on a user name
        with pytest.raises(KeyError):
            pwd.getpwnam(remote.user)
        assert not remote.home.exists()
        assert not psutil.pid_exists(remote.daemon_pid)
