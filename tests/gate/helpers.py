"""Paths and small helpers shared by the gate's tests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import psutil

SCRIPTS = Path(__file__).parent / "scripts"
FAKE = str(SCRIPTS / "fake_engine.py")
MISBEHAVE = str(SCRIPTS / "misbehave.py")
PY = sys.executable


def servegate(*args: str, timeout: float = 60.0, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    """Run ``python -m servegate ARGS`` and capture its output."""
    return subprocess.run(
        [PY, "-m", "servegate", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        **kwargs,
    )


def verdict_of(result: subprocess.CompletedProcess[str]) -> dict[str, object]:
    """The JSON verdict a ``--json`` command printed."""
    data: dict[str, object] = json.loads(result.stdout)
    return data


def alive(pid: int) -> bool:
    """True while ``pid`` runs (zombies count as gone)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def read_pid(path: Path) -> int:
    """A PID written to a file by a test server."""
    return int(path.read_text().strip())


def env_without(*names: str) -> dict[str, str]:
    """The environment minus some variables."""
    return {k: v for k, v in os.environ.items() if k not in names}
