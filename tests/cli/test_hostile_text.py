"""Text servegate relays (a server's log line, its tail, a host's line) prints with its
control characters escaped: a log cannot erase, recolour or forge a line of the terminal."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from tests.conftest import free_port

from servegate.cli.remote import relay

# a backspace run, a C1 CSI (not an ESC sequence, so ANSI stripping leaves it), a bidi
# override, then a forged verdict and a bell
HOSTILE = "RuntimeError: boom\b\b\b\b\x9b2K\u202eSERVER READY after 1.0s\x07"
SHOWN = "RuntimeError: boom\\x08\\x08\\x08\\x08\\x9b2K\\u202eSERVER READY after 1.0s\\x07"
RAW = ("\b", "\x9b", "\u202e", "\x07", "\r", "\x1b")


def servegate(*args: str) -> subprocess.CompletedProcess[str]:
    """The command line, to completion."""
    return subprocess.run(
        [sys.executable, "-m", "servegate", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_a_crash_line_with_control_characters_prints_escaped(tmp_path: Path) -> None:
    """launch: the verdict line that quotes the crash line, and the tail, show each control
    character as an escape; history shows the same reason escaped."""
    script = tmp_path / "crash.py"
    script.write_text(
        "import sys\n"
        "print('loading weights', flush=True)\n"
        f"sys.stdout.write({HOSTILE!r} + '\\n')\n"
        "sys.stdout.flush()\n"
        "sys.exit(1)\n",
        encoding="utf-8",
    )
    name = f"hostile-{tmp_path.name[-20:]}".replace("_", "-")
    done = servegate(
        "launch", "--name", name, "--timeout", "60", "--ready", "never-printed", "--",
        sys.executable, str(script),
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("CRASH after ")
    assert SHOWN in lines[0]
    assert lines[-1] == SHOWN
    for char in RAW:
        assert char not in done.stdout
    history = servegate("history")
    assert history.returncode == 0, history.stderr
    assert SHOWN in history.stdout
    for char in RAW:
        assert char not in history.stdout


@pytest.mark.parametrize("err", [False, True], ids=["stdout", "stderr"])
def test_a_line_relayed_from_a_host_prints_escaped(
    capsys: pytest.CaptureFixture[str], err: bool
) -> None:
    """A host's line with an erase-line escape and a CR prints as one escaped line (a tab,
    which is layout, stays)."""
    relay("ok\tc=1\r\x1b[2Kfast: 1.500 x baseline (better)", err=err)
    out, errs = capsys.readouterr()
    assert (errs if err else out) == "ok\tc=1\\r\\x1b[2Kfast: 1.500 x baseline (better)\n"


def test_ps_shows_a_log_path_with_control_characters_escaped(tmp_path: Path) -> None:
    """A tracked server whose --log path holds an escape and a CR: ps prints the path
    escaped on the server's own line."""
    port = free_port()
    log = tmp_path / "a\x1b[2K\rforged.log"
    name = f"ps-{tmp_path.name[-20:]}".replace("_", "-")
    started = servegate(
        "launch", "--name", name, "--engine", "sglang", "--port", str(port), "--log", str(log),
        "--timeout", "60", "--", sys.executable, "-m", "servegate", "sim", "--engine", "sglang",
        "--port", str(port), "--profile", "fast", "--time-scale", "0.2",
    )  # fmt: skip
    try:
        assert started.returncode == 0, started.stderr
        listed = servegate("ps")
        assert listed.returncode == 0, listed.stderr
        (row,) = [line for line in listed.stdout.splitlines() if line.startswith(name)]
        assert row.endswith("a\\x1b[2K\\rforged.log")
        assert "\x1b" not in listed.stdout and "\r" not in listed.stdout
    finally:
        stopped = servegate("stop", name)
    assert stopped.returncode == 0, stopped.stderr
