"""What a campaign records about its code: tools that print bytes that are not UTF-8."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from servegate.campaign.provenance import git_commit


def _git(folder: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(folder), *args], check=True, capture_output=True)


def test_a_dirty_checkout_with_a_latin1_file_name(tmp_path: Path) -> None:
    """git prints a Latin-1 file name raw (core.quotePath off): still ``COMMIT+dirty``."""
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "config", "core.quotePath", "false")
    name = os.path.join(os.fsencode(tmp_path), b"caf\xe9.txt")
    with open(name, "wb") as handle:
        handle.write(b"one\n")
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "one")
    with open(name, "ab") as handle:
        handle.write(b"two\n")
    head = subprocess.run(
        ["git", "-C", str(tmp_path), "rev-parse", "HEAD"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert git_commit(tmp_path) == f"{head}+dirty"
