"""A simulated engine as a real child process, with its log collected line by line."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import threading
import time
from types import TracebackType


class Sim:
    """``python -m servegate sim ARGS --port PORT``; stdout split on ``\\r`` and ``\\n``."""

    def __init__(self, port: int, *args: str, env: dict[str, str] | None = None) -> None:
        self.port = port
        self.env = None if env is None else {**os.environ, **env}
        self.url = f"http://127.0.0.1:{port}"
        self.argv = [sys.executable, "-m", "servegate", "sim", "--port", str(port), *args]
        self.lines: list[tuple[float, str]] = []
        self.raw = bytearray()
        self.proc: subprocess.Popen[bytes] | None = None
        self.started = 0.0
        self._cond = threading.Condition()
        self._eof = False

    def __enter__(self) -> Sim:
        self.started = time.monotonic()
        self.proc = subprocess.Popen(
            self.argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=self.env
        )
        threading.Thread(target=self._read, daemon=True).start()
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        pending = b""
        while True:
            data = os.read(self.proc.stdout.fileno(), 65536)
            if not data:
                break
            with self._cond:
                self.raw += data
                pending += data
                parts = re.split(rb"[\r\n]", pending)
                pending = parts.pop()
                now = time.monotonic() - self.started
                for part in parts:
                    if part:
                        self.lines.append((now, part.decode()))
                self._cond.notify_all()
        with self._cond:
            if pending:
                self.lines.append((time.monotonic() - self.started, pending.decode()))
            self._eof = True
            self._cond.notify_all()

    def text(self) -> list[str]:
        """The lines printed so far."""
        with self._cond:
            return [line for _, line in self.lines]

    def wait_line(self, pattern: str, timeout: float = 10.0) -> float:
        """Seconds since start when a line matching ``pattern`` appeared."""
        regex = re.compile(pattern)
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for at, line in self.lines:
                    if regex.search(line):
                        return at
                left = deadline - time.monotonic()
                if left <= 0 or self._eof:
                    raise AssertionError(
                        f"no line matching {pattern!r}; log:\n"
                        + "\n".join(line for _, line in self.lines[-40:])
                    )
                self._cond.wait(left)

    def wait_exit(self, timeout: float = 10.0) -> int:
        """The exit code (negative: killed by that signal)."""
        assert self.proc is not None
        code = self.proc.wait(timeout=timeout)
        with self._cond:
            self._cond.wait_for(lambda: self._eof, timeout=2)
        return code

    def alive(self) -> bool:
        """Whether the main process still runs."""
        assert self.proc is not None
        return self.proc.poll() is None

    def stderr(self) -> str:
        """What the process wrote to stderr (after it exited)."""
        assert self.proc is not None and self.proc.stderr is not None
        return self.proc.stderr.read().decode()

    def stop(self) -> None:
        """SIGTERM, then SIGKILL; the process and its children are gone afterwards."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()


def wait_http(url: str, timeout: float = 10.0, status: int = 200) -> float:
    """Poll ``url`` until it answers ``status``; the seconds it took."""
    import urllib.error
    import urllib.request

    start = time.monotonic()
    while time.monotonic() - start < timeout:
        try:
            with urllib.request.urlopen(url, timeout=2) as resp:
                if resp.status == status:
                    return time.monotonic() - start
        except urllib.error.HTTPError as exc:
            if exc.code == status:
                return time.monotonic() - start
        except OSError:
            pass
        time.sleep(0.02)
    raise AssertionError(f"{url} did not answer {status} within {timeout} s")


def get(url: str, data: bytes | None = None) -> tuple[int, bytes]:
    """One HTTP request: (status, body); a refused connection raises OSError."""
    import urllib.error
    import urllib.request

    req = urllib.request.Request(url, data=data, headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()
