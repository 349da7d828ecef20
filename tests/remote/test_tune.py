"""servegate tune with its servers on the SSH host: the study and the store here, each
trial a start there; Ctrl-C and --resume measure no finished trial twice."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from tests.campaign.test_tune import CAMPAIGN
from tests.remote.helpers import run
from tests.remote.sshd import Remote

from servegate.store import Store

pytest.importorskip("optuna")


def _write(tmp_path: Path, host: Remote) -> Path:
    text = CAMPAIGN.format(requests=400, extra="--itl-ms 20", cache="")
    text = text.replace('env = { FLASHINFER_WORKSPACE_BASE = "" }', f'host = "{host.alias}"')
    assert f'host = "{host.alias}"' in text
    path = tmp_path / "search.toml"
    path.write_text(text.replace("{python}", host.python))
    return path


def _events(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_tune_on_the_host_interrupted_and_resumed_measures_no_trial_twice(
    host: Remote, tmp_path: Path
) -> None:
    """Ctrl-C after the first trials: exit 130 with the host's server stopped; --resume
    goes on to the budget with every trial's start on the host, redoing only the one in
    flight, and nothing of it is left running there."""
    path = _write(tmp_path, host)
    db = tmp_path / "t.db"
    log = tmp_path / "trials.jsonl"
    argv = [sys.executable, "-m", "servegate", "tune", str(path), "--db", str(db)]
    argv += ["--max-trials", "4", "--events-file", str(log), "-q"]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=host.env(), cwd=tmp_path)  # fmt: skip
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:  # until the baseline and one trial ended
            if log.exists() and len(log.read_text().splitlines()) >= 2:
                break
            assert proc.poll() is None, proc.communicate()[1][-3000:]
            time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err[-3000:]
    before = _events(log)
    assert len(before) >= 2
    assert run(host, "cli", "ps")[:2] == (0, [])  # the trial in flight was stopped there
    again = subprocess.run([*argv, "--resume"], capture_output=True, text=True, timeout=600,
                           check=False, env=host.env(), cwd=tmp_path)  # fmt: skip
    assert again.returncode == 0, again.stderr[-3000:]
    after = _events(log)[len(before) :]
    assert max(int(str(t["trial"])) for t in after) == 4
    with Store.open(db) as store:
        info = store.find_campaign("tune-sim")
        assert info is not None
        attempts = store.attempts(info.id)
        hosts = {a.host for a in attempts}
    assert hosts == {host.alias}, hosts  # every start ran on the host
    ended = Counter(a.variant for a in attempts if str(a.status) in ("done", "crash", "timeout"))
    assert ended and max(ended.values()) == 1, ended  # nothing measured to the end twice
    for trial in before:
        assert sum(1 for a in attempts if a.variant == trial["variant"]) == 1, trial
    assert run(host, "cli", "ps")[:2] == (0, [])
