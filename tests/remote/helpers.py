"""Processes whose output lines a test waits for, and the servers they start."""

from __future__ import annotations

import contextlib
import queue
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import psutil
from tests.remote.sshd import Remote

DRIVE = str(Path(__file__).parent / "drive.py")


class Lines:
    """A running process; its stdout and stderr lines as they come."""

    def __init__(self, argv: Sequence[str], env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            list(argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
        )
        self.out: list[str] = []
        self.err: list[str] = []
        self._new: queue.Queue[None] = queue.Queue()
        self._threads = [
            threading.Thread(target=self._read, args=(stream, kept), daemon=True)
            for stream, kept in ((self.proc.stdout, self.out), (self.proc.stderr, self.err))
        ]
        for thread in self._threads:
            thread.start()

    def _read(self, stream: object, kept: list[str]) -> None:
        for line in stream:  # type: ignore[attr-defined]
            kept.append(line.rstrip("\n"))
            self._new.put(None)
        self._new.put(None)

    def wait_for(self, pattern: str, *, stream: str = "err", timeout: float = 60.0) -> str:
        """The first line of ``stream`` matching ``pattern``, waiting up to ``timeout``."""
        regex = re.compile(pattern)
        kept = self.err if stream == "err" else self.out
        deadline = time.monotonic() + timeout
        while True:
            for line in list(kept):
                if regex.search(line):
                    return line
            left = deadline - time.monotonic()
            if left <= 0 or (self.proc.poll() is not None and self._new.empty()):
                raise AssertionError(
                    f"no {stream} line matching {pattern!r}:\nout: {self.out}\nerr: {self.err}"
                )
            try:
                self._new.get(timeout=min(left, 0.5))
            except queue.Empty:
                continue

    def finish(self, timeout: float = 120.0) -> int:
        """Its exit code, once its output is read (and its pipes closed)."""
        code = self.proc.wait(timeout=timeout)
        for thread in self._threads:
            thread.join(timeout=30)
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()
        return code


def drive(remote: Remote, mode: str, command: str, *args: str) -> Lines:
    """``drive.py MODE ALIAS COMMAND ARGS`` as a running process."""
    return Lines([sys.executable, DRIVE, mode, remote.alias, command, *args], remote.env())


def run(remote: Remote, mode: str, command: str, *args: str) -> tuple[int, list[str], list[str]]:
    """``drive.py`` to its end: exit code, stdout lines, stderr lines."""
    done = subprocess.run(
        [sys.executable, DRIVE, mode, remote.alias, command, *args],
        capture_output=True,
        text=True,
        env=remote.env(),
        timeout=120,
        check=False,
    )
    return done.returncode, done.stdout.splitlines(), done.stderr.splitlines()


def sim(remote: Remote, port: int, *extra: str) -> list[str]:
    """The simulator's command line on the host (its venv's python)."""
    return [remote.python, "-m", "servegate", "sim", "--port", str(port), *extra]


def serving(port: int) -> list[psutil.Process]:
    """The processes listening on ``port`` (any user)."""
    found = []
    for conn in psutil.net_connections("tcp"):
        listening = conn.laddr and conn.laddr.port == port and conn.status == psutil.CONN_LISTEN
        if listening and conn.pid is not None:
            found.append(psutil.Process(conn.pid))
    return found


def simulators(port: int) -> list[psutil.Process]:
    """The simulator processes started for ``port`` (any user), bound or not yet."""
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        cmd = proc.info["cmdline"] or []
        if "sim" in cmd and "--port" in cmd and str(port) in cmd and "launch" not in cmd:
            found.append(proc)
    return found


@contextlib.contextmanager
def simulator_here(port: int, startup: str) -> Iterator[subprocess.Popen[bytes]]:
    """A simulator started on this side (the host is this machine too), stopped after."""
    server = subprocess.Popen(
        [sys.executable, "-m", "servegate", "sim", "--port", str(port), "--startup", startup],
        stdout=subprocess.DEVNULL,
    )
    try:
        yield server
    finally:
        server.terminate()
        server.wait(timeout=30)
