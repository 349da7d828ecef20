"""The agent's job records (``PID START``): which process a job's runner or command is."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from servegate.remote import agent


def test_a_record_names_its_process_while_it_runs_and_not_after(tmp_path: Path) -> None:
    """Alive while the process runs; not as a zombie, nor once reaped."""
    proc = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                            stdin=subprocess.PIPE)  # fmt: skip
    record = tmp_path / "job.pid"
    try:
        agent._write_record(record, proc.pid)
        pid, started = record.read_text().split()
        assert int(pid) == proc.pid and started.isdigit()
        assert agent._alive(record)
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=30)
    assert not agent._alive(record)


def test_a_reused_pid_is_not_the_recorded_process(tmp_path: Path) -> None:
    """The same PID with another start (the PID reused by a later process) is not it."""
    record = tmp_path / "job.pid"
    agent._write_record(record, 1)
    pid, started = record.read_text().split()
    assert agent._alive(record)
    record.write_text(f"{pid} {int(started) + 1}")
    assert not agent._alive(record)


def test_a_missing_or_torn_record_is_not_alive(tmp_path: Path) -> None:
    """No file, an empty one, or one of the old ``PID CREATE_TIME`` form: not alive."""
    record = tmp_path / "job.pid"
    assert not agent._alive(record)
    record.write_text("")
    assert not agent._alive(record)
    record.write_text("1 1796294116.42")
    assert not agent._alive(record)
