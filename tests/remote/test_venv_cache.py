"""The venv cache that test runs share (``venv_cache``): a run's user cannot change it."""

from __future__ import annotations

import os
import pwd
import secrets
import shutil
import subprocess
from pathlib import Path

import pytest
from tests.remote import sshd, venv_cache

from servegate._proc import start_ticks

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="makes users (useradd): root only")


def test_a_linked_venv_cannot_change_the_cache() -> None:
    """A test user's venv linked from the cache: the user cannot write into a cached file,
    may replace one in its own venv (as pip does), and removing the user leaves the
    cache's files as they were."""
    user = sshd.add_user(sshd.run_user(os.getpid(), start_ticks(os.getpid())))
    home = Path(user.pw_dir)
    if os.stat(home).st_dev != os.stat(venv_cache.CACHE.parent).st_dev:
        sshd.remove_user(user.pw_name, user.pw_uid)
        pytest.skip(f"{venv_cache.CACHE.parent} and {home} are two filesystems: no cache")
    name = f"test-{secrets.token_hex(4)}"
    entry = venv_cache.CACHE / name
    try:
        made = home / "made"
        (made / "lib").mkdir(parents=True)
        (made / "lib" / "mod.py").write_text("cached\n")
        venv_cache.keep(made, name=name)
        assert (entry / "lib" / "mod.py").stat().st_uid == 0
        venv = home / ".servegate" / "venv"
        assert venv_cache.link(venv, user.pw_uid, name=name)
        assert (venv / "lib").stat().st_uid == user.pw_uid

        def as_user(line: str) -> int:
            return subprocess.run(
                ["sh", "-c", line], user=user.pw_uid, group=user.pw_gid, cwd=venv,
                capture_output=True, check=False, timeout=30,
            ).returncode  # fmt: skip

        assert as_user("echo changed >> lib/mod.py") != 0
        assert as_user("echo replaced > lib/new && mv lib/new lib/mod.py") == 0
        assert (venv / "lib" / "mod.py").read_text() == "replaced\n"
        assert (entry / "lib" / "mod.py").read_text() == "cached\n"
        sshd.remove_user(user.pw_name, user.pw_uid)
        with pytest.raises(KeyError):
            pwd.getpwnam(user.pw_name)
        assert (entry / "lib" / "mod.py").read_text() == "cached\n"
    finally:
        sshd.remove_user(user.pw_name, user.pw_uid)
        shutil.rmtree(entry, ignore_errors=True)
