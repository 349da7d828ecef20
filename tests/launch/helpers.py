"""Paths and small helpers shared by the launcher's tests."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

TINY = str(Path(__file__).parent / "scripts" / "tiny_server.py")
PY = sys.executable


def free_port() -> int:
    """An ephemeral TCP port that was free a moment ago on 127.0.0.1."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def servegate(
    *args: str, timeout: float = 90.0, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m servegate ARGS`` to completion and capture its output."""
    return subprocess.run(
        [PY, "-m", "servegate", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env=env,
    )
