"""The recording from the gate's start to the verdict, through launch, wait and the CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from servegate.errors import ServerCrashed
from servegate.gate import wait
from servegate.gate.verdict import Verdict
from servegate.launch import launch

PY = sys.executable


def _sim(port: int, *extra: str) -> list[str]:
    return [PY, "-m", "servegate", "sim", "--engine", "sglang", "--port", str(port), *extra]


def _check_series(verdict: Verdict) -> None:
    assert verdict.telemetry is not None
    snaps = verdict.snapshots
    assert snaps, "no snapshots"
    times = [s.t_s for s in snaps]
    assert times == sorted(times)
    # one clock for both: the last sample follows the verdict by one read, not a period;
    # the bound only catches a series on another clock (a loaded machine may be slow)
    assert 0 <= times[0] and times[-1] <= verdict.elapsed_s + 60.0
    assert max(s.processes for s in snaps) >= 1
    assert verdict.telemetry.samples >= len(snaps)
    assert verdict.telemetry.peak_rss_bytes == max(s.rss_bytes for s in snaps) > 0
    assert verdict.telemetry.cpu_s > 0
    assert verdict.to_json()["telemetry"] == verdict.telemetry.to_json()
    assert "snapshots" not in verdict.to_json()  # the series goes to the store, not the JSON


def test_launch_carries_the_series(port: int) -> None:
    """launch(): the keeper's series reaches the verdict, with the summary in its JSON."""
    with launch(_sim(port, "--startup", "1.5"), engine="sglang", port=port, sample_s=0.1) as srv:
        verdict = srv.verdict
        assert verdict.status == "ready"
        _check_series(verdict)
        # the sim's main process was in the tree, by PID
        assert any(p.pid == srv.pid for s in verdict.snapshots for p in s.procs)
        assert Verdict.from_json(verdict.to_json()).telemetry == verdict.telemetry


def test_crash_carries_the_series(port: int) -> None:
    """A CRASH verdict (on the exception) carries the recording up to the crash."""
    with pytest.raises(ServerCrashed) as info:
        launch(
            _sim(port, "--startup", "1.5", "--fail", "oom", "--fail-at", "capture_cuda_graphs"),
            engine="sglang",
            port=port,
            sample_s=0.1,
        )
    _check_series(info.value.verdict)


def test_sample_zero_records_nothing(port: int) -> None:
    """--sample 0: no telemetry in the verdict, no series."""
    with launch(_sim(port, "--startup", "0.5"), engine="sglang", port=port, sample_s=0) as srv:
        assert srv.verdict.telemetry is None
        assert srv.verdict.snapshots == ()
        assert srv.verdict.to_json()["telemetry"] is None


def test_wait_samples_the_pid(port: int, tmp_path: Path) -> None:
    """wait(pid=...): the server someone else started is sampled in this process."""
    log = tmp_path / "server.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            _sim(port, "--startup", "1.5"), stdout=out, stderr=subprocess.STDOUT
        )
    try:
        verdict = wait(log_path=str(log), pid=proc.pid, engine="sglang", port=port, sample_s=0.1)
        _check_series(verdict)
        assert any(p.pid == proc.pid for s in verdict.snapshots for p in s.procs)
    finally:
        proc.kill()
        proc.wait()


def test_cli_launch_json_and_bad_sample(port: int, tmp_path: Path) -> None:
    """servegate launch --sample: the JSON verdict has telemetry; a bad value is exit 2."""
    run = subprocess.run(
        [PY, "-m", "servegate", "launch", "--engine", "sglang", "--port", str(port), "--json",
         "--sample", "0.2", "--log", str(tmp_path / "s.log"), "--name", "tele", "--",
         *_sim(port, "--startup", "1")],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    try:
        assert run.returncode == 0, run.stderr
        telemetry = json.loads(run.stdout)["telemetry"]
        assert telemetry["samples"] >= 1 and telemetry["period_s"] == 0.2
        assert telemetry["peak_processes"] >= 1
    finally:
        subprocess.run([PY, "-m", "servegate", "stop", "tele"], capture_output=True, check=False)
    bad = subprocess.run(
        [PY, "-m", "servegate", "launch", "--sample", "-1", "--port", str(port), "--", "true"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert bad.returncode == 2
    assert "--sample must be 0 (no telemetry) or at least" in bad.stderr
