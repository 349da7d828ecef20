"""The agent's job records (``PID START``): which process a job's runner or command is."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from servegate.remote import agent


def test_a_record_names_its_process_while_it_runs_and_not_after(tmp_path: Path) -> None:
    """Alive while the process runs; not once it has ended; not when torn or missing."""
    proc = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                            stdin=subprocess.PIPE)  # fmt: skip
    record = tmp_path / "job.pid"
    try:
        agent._write_record(record, proc.pid)
        assert int(record.read_text().split()[0]) == proc.pid
        assert agent._alive(record)
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=30)
    assert not agent._alive(record)
    record.write_text("")
    assert not agent._alive(record)
    record.unlink()
    assert not agent._alive(record)
