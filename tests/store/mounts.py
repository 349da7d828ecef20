"""Real filesystems for store failures: a tiny tmpfs (disk full) and a read-only bind mount.

Both need root (CI runs as root). Permission bits do not stop root, so a read-only
folder is a read-only mount, and it is checked to refuse a write before a test relies
on it. Every mount is undone when the test ends, lazily if a file is still open on it.
"""

from __future__ import annotations

import errno
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


def _mount(*args: str) -> None:
    try:
        subprocess.run(["mount", *args], check=True, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.CalledProcessError) as exc:
        detail = getattr(exc, "stderr", None) or str(exc)
        pytest.skip(f"cannot mount here (needs root and CAP_SYS_ADMIN): {detail.strip()}")


def _unmount(folder: Path) -> None:
    done = subprocess.run(["umount", str(folder)], capture_output=True, timeout=30, check=False)
    if done.returncode != 0:  # something still holds a file there: detach it now
        subprocess.run(["umount", "-l", str(folder)], capture_output=True, timeout=30, check=True)


@contextmanager
def tmpfs(folder: Path, *, size_kib: int) -> Iterator[Path]:
    """A fresh tmpfs of ``size_kib`` KiB mounted on ``folder`` (created)."""
    folder.mkdir(parents=True, exist_ok=True)
    _mount("-t", "tmpfs", "-o", f"size={size_kib}k,mode=0755", "servegate-test", str(folder))
    try:
        yield folder
    finally:
        _unmount(folder)


@contextmanager
def read_only_view(source: Path, folder: Path) -> Iterator[Path]:
    """``source`` seen read-only at ``folder`` (a bind mount), checked to refuse writes."""
    folder.mkdir(parents=True, exist_ok=True)
    _mount("--bind", str(source), str(folder))
    try:
        _mount("-o", "remount,bind,ro", str(folder))
        probe = folder / ".write-probe"
        try:
            probe.write_bytes(b"x")
        except OSError as exc:
            assert exc.errno == errno.EROFS, exc
        else:
            probe.unlink()
            pytest.fail(f"{folder} accepted a write after a read-only remount")
        yield folder
    finally:
        _unmount(folder)


def fill(folder: Path) -> Path:
    """Write a file into ``folder`` until its filesystem has no byte left; return it."""
    filler = folder / "filler"
    chunk = b"\0" * 65536
    with open(filler, "wb", buffering=0) as handle:
        for size in (65536, 4096, 512, 1):
            while True:
                try:
                    handle.write(chunk[:size])
                except OSError as exc:
                    assert exc.errno == errno.ENOSPC, exc
                    break
    probe = os.statvfs(folder)
    assert probe.f_bavail == 0, probe
    return filler
