"""Fixtures shared by the whole suite.

Every test runs with its own state folder (tracked servers) and is checked, after it
ends, for SQLite connections it left open and for processes it left behind:
descendants of the test process, and any process anywhere that carries this session's
marker in its environment (which catches servers that called setsid() and left our
process group and our tree).

The tests of CI's own steps (``real_engine``, ``ray``) are left out of every run whose
``-m`` does not name their marker, so ``pytest -m "not slow"`` leaves them out as a plain
``pytest`` does, and ``pytest -m ray tests/cluster`` runs them.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

MARKER_VAR = "SERVEGATE_TEST_MARKER"
# set once per session: a module that imports this file as ``tests.conftest`` must not
# mint a second marker (its processes would then escape the leak check)
MARKER = os.environ.get(MARKER_VAR) or uuid.uuid4().hex
os.environ[MARKER_VAR] = MARKER
OWN_STEP_MARKERS = ("real_engine", "ray")  # run only where -m names them (CI's own steps)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Deselect the tests of CI's own steps unless ``-m`` names their marker."""
    expression = config.getoption("markexpr") or ""
    named = {name for name in OWN_STEP_MARKERS if re.search(rf"\b{name}\b", expression)}
    kept: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    for item in items:
        own = {mark.name for mark in item.iter_markers()} & set(OWN_STEP_MARKERS)
        (dropped if own - named else kept).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


def free_port() -> int:
    """An ephemeral TCP port that was free a moment ago on 127.0.0.1."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def marked_processes() -> list[psutil.Process]:
    """Processes other than this one whose environment carries this session's marker."""
    me = os.getpid()
    found = []
    for proc in psutil.process_iter(["pid"]):
        if proc.pid == me:
            continue
        try:
            if proc.environ().get(MARKER_VAR) == MARKER:
                found.append(proc)
        except (psutil.Error, OSError):
            continue
    return found


def leftovers(grace_s: float = 3.0) -> list[str]:
    """Descriptions of processes this session left alive, after a short grace period."""
    deadline = time.monotonic() + grace_s
    while True:
        procs = {p.pid: p for p in psutil.Process().children(recursive=True)}
        procs.update({p.pid: p for p in marked_processes()})
        alive = []
        for proc in procs.values():
            try:
                if proc.status() != psutil.STATUS_ZOMBIE:
                    alive.append(f"{proc.pid} {' '.join(proc.cmdline())[:120]}")
            except psutil.Error:
                continue
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.05)


@pytest.fixture(autouse=True)
def _state_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test tracks its servers in a folder of its own."""
    path = tmp_path_factory.mktemp("state")
    monkeypatch.setenv("SERVEGATE_STATE_DIR", str(path))
    monkeypatch.setenv("SERVEGATE_HISTORY", str(path / "history.db"))  # never the user's
    return path


@pytest.fixture(autouse=True)
def _ssh_control_dir(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each test's ssh control sockets in a folder of its own, never the user's shared
    /tmp/servegate-ssh-UID (short: a socket path has ~100 bytes)."""
    path = tempfile.mkdtemp(prefix="sgc-")
    monkeypatch.setenv("SERVEGATE_SSH_CONTROL_DIR", path)
    yield
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(autouse=True)
def _no_leftover_processes() -> Iterator[None]:
    """Fail a test that leaves any process of its tree alive, then clean up after it."""
    yield
    alive = leftovers()
    if alive:
        for line in alive:
            with contextlib.suppress(OSError):
                os.kill(int(line.split()[0]), 9)
        pytest.fail("processes left running by this test:\n" + "\n".join(alive))


@pytest.fixture
def port() -> int:
    """A free ephemeral port."""
    return free_port()


@pytest.fixture(autouse=True)
def _sqlite_connections_closed(
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[list[sqlite3.Connection]]:
    """Record every connection opened during the test; fail the test if one stays open."""
    opened: list[sqlite3.Connection] = []
    real_connect = sqlite3.connect

    def tracking_connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        conn: sqlite3.Connection = real_connect(*args, **kwargs)
        opened.append(conn)
        return conn

    monkeypatch.setattr(sqlite3, "connect", tracking_connect)
    yield opened
    monkeypatch.undo()
    still_open = []
    for conn in opened:
        try:
            conn.execute("SELECT 1")
        except sqlite3.ProgrammingError:
            continue  # closed, as it should be
        still_open.append(conn)
        conn.close()
    assert not still_open, f"{len(still_open)} SQLite connection(s) left open"


def vllm_simulators() -> Iterator[Callable[..., str]]:
    """A factory of simulated vLLM servers for a fixture to yield from: ``make(*flags)``
    starts one on a free port and returns its base URL once the port accepts; all are
    stopped after."""
    procs: list[subprocess.Popen[bytes]] = []

    def make(*flags: str) -> str:
        port = free_port()
        proc = subprocess.Popen(
            [sys.executable, "-m", "servegate", "sim", "--engine", "vllm", "--port", str(port),
             *flags],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        procs.append(proc)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # wait for the event: the port accepts
            assert proc.poll() is None, "the simulator exited"
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)
        return f"http://127.0.0.1:{port}"

    yield make
    for proc in procs:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
