"""The SSH host's venv for the tests, linked from a cache that test runs share (as root).

Each test run's user is new (``sshd.py``), so its venv would be made from nothing (every
wheel copied and installed) and deleted with its home after: on a disk mounted with
``discard``, deleting those 100 MB took 8 s. Linked from the cache instead, ``servegate
remote install`` finds the dependencies there and copies only servegate, as into a venv
kept between runs, and removing the home unlinks files instead of freeing them.

The cache (``CACHE``) holds one venv per key: this Python and servegate's dependencies,
by version. An entry is made from a run's freshly installed venv as hard links, made
root's and read-only for everyone else, and renamed into place whole: a run sees an
entry complete or not at all, and of two runs that make it at once, one keeps its own.
In a run's venv the folders are the user's and the files root's, so the run may replace
a file (pip, Python's bytecode) but never change one of the cache's. An entry no run
has linked for a week is removed.
"""

from __future__ import annotations

import hashlib
import os
import platform
import pwd
import secrets
import shutil
import subprocess
import time
from pathlib import Path

CACHE = Path("/var/tmp/servegate-remote-venvs")
UNUSED_S = 7 * 86400


def key() -> str:
    """The entry for this Python and servegate's dependencies (names and versions)."""
    from servegate.remote.build import dependencies

    wanted = sorted(f"{dist.metadata['Name']}=={dist.version}" for dist in dependencies())
    text = "\n".join([platform.python_version(), platform.machine(), *wanted])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _usable(root: Path, beside: Path) -> bool:
    """Whether ``root`` is root's alone and on ``beside``'s filesystem (hard links)."""
    try:
        root.mkdir(mode=0o755, exist_ok=True)
        stat = root.stat()
        return stat.st_uid == 0 and not stat.st_mode & 0o022 and stat.st_dev == beside.stat().st_dev
    except OSError:
        return False


def link(venv: Path, uid: int, *, root: Path = CACHE, name: str = "") -> bool:
    """The cached venv linked at ``venv`` (a new folder of the user ``uid``, as are the
    folders in it); False where the cache has none."""
    gid = pwd.getpwuid(uid).pw_gid
    venv.parent.mkdir(parents=True, exist_ok=True)
    os.chown(venv.parent, uid, gid)
    entry = root / (name or key())
    if not (_usable(root, venv.parent) and entry.is_dir()):
        return False
    done = subprocess.run(["cp", "-al", str(entry), str(venv)], capture_output=True, check=False)
    if done.returncode != 0:  # removed meanwhile, unused, by another run
        shutil.rmtree(venv, ignore_errors=True)
        return False
    for folder, _, _ in os.walk(venv):
        os.chown(folder, uid, gid)
    os.utime(entry)  # used now
    return True


def keep(venv: Path, *, root: Path = CACHE, name: str = "") -> None:
    """Add the freshly installed ``venv`` to the cache, unless an entry of its key is there."""
    entry = root / (name or key())
    if not _usable(root, venv) or entry.exists():
        return
    building = root / f".{entry.name}-{os.getpid()}-{secrets.token_hex(2)}"
    subprocess.run(["cp", "-al", str(venv), str(building)], check=True, capture_output=True)
    for folder, dirs, files in os.walk(building):
        os.chown(folder, 0, 0)
        os.chmod(folder, 0o755)
        for path in (os.path.join(folder, name) for name in [*dirs, *files]):
            os.lchown(path, 0, 0)
            if not os.path.islink(path) and os.path.isfile(path):
                os.chmod(path, os.stat(path).st_mode & 0o755)
    try:
        os.rename(building, entry)
    except OSError:  # another run's entry came first
        shutil.rmtree(building, ignore_errors=True)
    _prune(root)


def _prune(root: Path) -> None:
    """Remove the entries (and the unfinished ones) no run has used for ``UNUSED_S``."""
    now = time.time()
    for entry in root.iterdir():
        try:
            unused = now - entry.stat().st_mtime > UNUSED_S
        except OSError:
            continue
        if unused:
            gone = root / f".gone-{secrets.token_hex(4)}"
            try:
                entry.rename(gone)  # out of sight at once, then removed
            except OSError:
                continue
            shutil.rmtree(gone, ignore_errors=True)
