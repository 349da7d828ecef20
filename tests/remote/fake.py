"""A fake agent behind the real sshd: a Host alias whose servegate folder holds a
``venv/bin/python`` that is a shell script, so a test says what the host answers."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from tests.remote.sshd import ALIAS, Remote

from servegate._version import __version__
from servegate.remote.build import build_id
from servegate.remote.codec import PROTOCOL

FAKE_ALIAS = "sgtest-fake"


def hello(**changes: object) -> str:
    """This servegate's hello line, with ``changes`` (None: the key left out)."""
    import json

    data: dict[str, object] = {
        "event": "hello",
        "protocol": PROTOCOL,
        "version": __version__,
        "build": build_id(),
        "python": "3",
        "machine": "x86_64",
        "dir": "/nonexistent",
    }
    data.update(changes)
    return json.dumps({k: v for k, v in data.items() if v is not None})


def fake_dir() -> Path:
    """A folder the remote user can read, outside pytest's (whose modes other sessions
    reset), removed by the caller."""
    folder = Path(tempfile.mkdtemp(prefix="servegate-fake-"))
    folder.chmod(0o755)
    return folder


@contextlib.contextmanager
def fake_host(
    host: Remote, monkeypatch: pytest.MonkeyPatch, script: str, *, folder: Path | None = None
) -> Iterator[str]:
    """``FAKE_ALIAS``: the test host, where ``script`` (sh) runs as servegate's agent; the
    ssh config with that alias in ``SERVEGATE_SSH_CONFIG`` meanwhile."""
    own = folder is None
    base = fake_dir() if folder is None else folder
    bin_dir = base / "venv" / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    agent = bin_dir / "python"
    agent.write_text("#!/bin/sh\n" + script)
    for path in (base / "venv", bin_dir, agent):
        path.chmod(0o755)
    blocks = host.config.read_text().split("\n\n")
    block = next(b for b in blocks if b.startswith(f"Host {ALIAS} "))
    fake = block.replace(f"Host {ALIAS} 127.0.0.1", f"Host {FAKE_ALIAS}").replace(
        f"SERVEGATE_REMOTE_DIR={host.remote_dir}", f"SERVEGATE_REMOTE_DIR={base}"
    )
    config = Path(tempfile.mkdtemp(prefix="sgf-")) / "ssh_config"
    config.write_text(fake.rstrip("\n") + "\n\n" + host.config.read_text())
    monkeypatch.setenv("SERVEGATE_SSH_CONFIG", str(config))
    try:
        yield FAKE_ALIAS
    finally:
        monkeypatch.setenv("SERVEGATE_SSH_CONFIG", str(host.config))  # the masters' closer
        shutil.rmtree(config.parent, ignore_errors=True)
        _wait_agents_gone(base)
        if own:
            shutil.rmtree(base, ignore_errors=True)


def _wait_agents_gone(base: Path, timeout_s: float = 30.0) -> None:
    """Wait until no process runs with ``base`` as its servegate folder (an agent still
    ending after its last line), so that nothing writes there once it is removed."""
    wanted = f"SERVEGATE_REMOTE_DIR={base}"
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        busy = False
        for proc in psutil.process_iter():
            with contextlib.suppress(psutil.Error):
                env = proc.environ()
                if f"SERVEGATE_REMOTE_DIR={env.get('SERVEGATE_REMOTE_DIR')}" == wanted:
                    busy = proc.status() != psutil.STATUS_ZOMBIE
            if busy:
                break
        if not busy:
            return
        time.sleep(0.05)


def servegate(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``servegate ARGS`` here, with this process's environment."""
    import sys

    return subprocess.run(
        [sys.executable, "-m", "servegate", *args],
        capture_output=True,
        text=True,
        env=dict(os.environ),
        timeout=timeout,
        check=False,
    )
