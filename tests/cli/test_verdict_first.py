"""The verdict line reaches the user before the start is recorded, and nothing after it.

The startup record (the start history in SQLite) is made to block: the test holds the
history's write lock, so the command's write waits (SQLite's busy wait) until the test
lets go. The READY line must arrive while the lock is held, and the start must still be
recorded once it is released.
"""

from __future__ import annotations

import io
import queue
import sqlite3
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from tests.gate.helpers import PY, servegate

from servegate.launch import state
from servegate.startup.history import history_path, opened
from servegate.startup.status import StatusLine

DEADLINE_S = 60.0


@contextmanager
def history_locked() -> Iterator[None]:
    """Hold the start history's write lock (readers still read) until the block ends."""
    with opened():
        pass  # the schema exists: opening it later needs no write
    conn = sqlite3.connect(history_path(), isolation_level=None)
    try:
        conn.execute("BEGIN IMMEDIATE")
        yield
        conn.execute("ROLLBACK")
    finally:
        conn.close()


def recorded(via: str) -> int:
    """How many starts the history holds, made by ``via`` (launch or wait)."""
    with opened(create=False) as history:
        return sum(1 for row in history.starts() if row.via == via)


def lines_of(proc: subprocess.Popen[str]) -> queue.Queue[str]:
    """A queue that receives each line of ``proc``'s stdout, then '' at its end."""
    lines: queue.Queue[str] = queue.Queue()

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)
        lines.put("")

    threading.Thread(target=read, daemon=True).start()
    return lines


def finish(proc: subprocess.Popen[str], lines: queue.Queue[str]) -> str:
    """Wait for ``proc`` and for the end of its stdout (read by ``lines_of``); its stderr
    (a few lines, which fit in the pipe), and its pipes closed."""
    proc.wait(timeout=DEADLINE_S)
    while lines.get(timeout=DEADLINE_S):
        pass
    err = proc.stderr.read() if proc.stderr is not None else "(on stdout)"
    for stream in (proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()
    return err


def sim(port: int, startup: float = 0.5) -> list[str]:
    """A simulated SGLang that is READY ``startup`` seconds after it starts."""
    return [
        PY, "-m", "servegate", "sim", "--engine", "sglang", "--startup", str(startup),
        "--port", str(port),
    ]  # fmt: skip


def ready_line(lines: queue.Queue[str]) -> str:
    """The first line that starts with SERVER READY (or the last one before the end)."""
    while True:
        line = lines.get(timeout=DEADLINE_S)
        if not line or line.startswith("SERVER READY after "):
            return line


def started_until_ready(
    argv: list[str], *, merged: bool
) -> tuple[subprocess.Popen[str], queue.Queue[str], str]:
    """``servegate ARGV`` started, read up to its SERVER READY line (killed if that read
    fails); ``merged``: its stderr on its stdout."""
    proc = subprocess.Popen(
        [PY, "-m", "servegate", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT if merged else subprocess.PIPE,
        text=True,
    )
    lines = lines_of(proc)
    try:
        return proc, lines, ready_line(lines)
    except BaseException:
        proc.kill()
        proc.wait()
        raise


@pytest.mark.parametrize("stderr", ["apart", "on stdout"])
def test_launch_prints_ready_before_the_startup_record(port: int, stderr: str) -> None:
    """launch prints SERVER READY while the start history's write is still blocked; the
    start is recorded once the write can go on (exit 0, one row). With stderr apart the
    keeper writes the line; with stderr on stdout (phase lines there) launch does."""
    gate = ["--engine", "sglang", "--port", str(port), "--name", "first"]
    with history_locked():
        argv = ["launch", *gate, "--", *sim(port)]
        proc, lines, line = started_until_ready(argv, merged=stderr != "apart")
    err = finish(proc, lines)
    assert servegate("stop", "first").returncode == 0
    assert line.startswith("SERVER READY after "), line + err
    assert proc.returncode == 0, err
    assert recorded("launch") == 1, err  # before: READY came once the write gave up


def test_the_keeper_lets_go_of_launchs_stdout(port: int) -> None:
    """The keeper writes the READY line on launch's stdout and closes its copy: the
    stdout ends when launch exits, though the keeper and the server run on."""
    gate = ["--engine", "sglang", "--port", str(port), "--name", "kept"]
    proc = subprocess.Popen(
        [PY, "-m", "servegate", "launch", *gate, "--", *sim(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines = lines_of(proc)
    try:
        first = ready_line(lines)
        err = finish(proc, lines)  # the end of its stdout, or queue.Empty at the deadline
        tracked = state.load("kept")
        assert tracked is not None and tracked.alive()  # the keeper and server run on
    finally:
        stopped = servegate("stop", "kept")
    assert first.startswith("SERVER READY after "), err
    assert (proc.returncode, stopped.returncode) == (0, 0)


def test_wait_prints_ready_before_the_startup_record(port: int, tmp_path: Path) -> None:
    """wait prints SERVER READY while the start history's write is still blocked; the
    start is recorded once the write can go on."""
    log = tmp_path / "server.log"
    with log.open("wb") as out:
        server = subprocess.Popen(sim(port), stdout=out, stderr=subprocess.STDOUT)
    try:
        gate = ["--engine", "sglang", "--port", str(port), "--log", str(log)]
        with history_locked():
            argv = ["wait", *gate, "--pid", str(server.pid)]
            proc, lines, line = started_until_ready(argv, merged=False)
        err = finish(proc, lines)
    finally:
        server.terminate()
        server.wait(timeout=DEADLINE_S)
    assert line.startswith("SERVER READY after "), line + err
    assert proc.returncode == 0, err
    assert recorded("wait") == 1, err


def test_launch_prints_no_phase_line_after_the_verdict(port: int) -> None:
    """With stderr on stdout, the phase lines all come before the READY line. The
    server takes 3 s, six of the status line's periods, so that it has phases to print
    before READY on a busy machine too (with 0.5 s, one period, a loaded run printed
    none: the test proved nothing then)."""
    gate = ["--engine", "sglang", "--port", str(port), "--name", "order"]
    result = subprocess.run(
        [PY, "-m", "servegate", "launch", *gate, "--", *sim(port, startup=3.0)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=DEADLINE_S,
        check=False,
    )
    assert servegate("stop", "order").returncode == 0
    assert result.returncode == 0, result.stdout
    lines = result.stdout.splitlines()
    ready = next(i for i, line in enumerate(lines) if line.startswith("SERVER READY after "))
    assert [line for line in lines[:ready] if line.startswith("phase ")] != []
    assert [line for line in lines[ready:] if line.startswith("phase ")] == []


def test_status_line_writes_nothing_once_stopped() -> None:
    """A status line stopped while its thread is between a read and a write writes nothing
    more: the thread's next drawing (called here in its stead) is dropped."""
    out = io.StringIO()
    line = StatusLine(engine="sglang", eta=None, stream=out, live=False)
    line._watcher.feed(b"[2026-01-01 00:00:00 TP0] Load weight begin. avail mem=50 GB\n", 1.0)
    assert line._watcher.phases.spans() != ()  # a phase the next drawing would announce
    line.stop()
    line._show()  # what the thread would do next, had it not looked at the stop yet
    assert (out.getvalue(), line.lines) == ("", [])


def test_status_line_clears_itself_on_a_terminal() -> None:
    """On a terminal, stop() clears the drawn status line, and then nothing is drawn."""
    out = io.StringIO()
    line = StatusLine(engine="sglang", eta=None, stream=out, live=True)
    line._show()
    line.stop()
    line._show()
    assert out.getvalue().count("starting") == 1
    assert out.getvalue().endswith("\r\x1b[K")
