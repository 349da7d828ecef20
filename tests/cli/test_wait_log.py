"""``servegate wait --log FILE`` on a log that is not there (yet): said, not silent."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.gate.helpers import PY, servegate


def test_wait_on_a_missing_log_says_so_at_once_and_in_the_timeout(tmp_path: Path) -> None:
    """A --log that does not exist: a progress line says wait is waiting for it to
    appear (naming the path), and the TIMEOUT's reason says it never appeared."""
    typo = tmp_path / "typo.log"
    result = servegate(
        "wait", "--log", str(typo), "--ready", "ready", "--timeout", "1", "--sample", "0"
    )
    assert result.returncode == 124, result.stderr
    assert f"waiting for the log to appear: {typo}" in result.stderr.splitlines()
    verdict = result.stdout.splitlines()[0]
    assert verdict.startswith("TIMEOUT after ")
    assert f"the log {typo} never appeared: check the --log path" in verdict
    assert not typo.exists()


def test_a_log_that_appears_late_is_followed_and_not_blamed(tmp_path: Path) -> None:
    """A log created after wait began is followed from its start: READY, and neither the
    progress line nor the verdict blames the path once it exists."""
    log = tmp_path / "late.log"
    with subprocess.Popen(
        [PY, "-m", "servegate", "wait", "--log", str(log), "--ready", "serving now",
         "--timeout", "60", "--sample", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:  # fmt: skip
        assert proc.stderr is not None and proc.stdout is not None
        first = proc.stderr.readline()  # said before the log exists, so before we write it
        assert first == f"waiting for the log to appear: {log}\n"
        log.write_text("loading\nserving now\n")
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert out.startswith("SERVER READY after ")
    assert "never appeared" not in out + err
