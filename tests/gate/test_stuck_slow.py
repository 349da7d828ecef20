"""Stuck or slow: the gate looks at the telemetry before a silent log becomes a TIMEOUT.

The gate runs on real silent processes; the telemetry is constructed here (busy until a
moment, then idle) so that each decision is reached on purpose. The end-to-end cases,
with the sampler and the simulator, are at the end of this file.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from servegate.gate.decide import Gate, GateSources
from servegate.gate.options import GateOptions
from servegate.telemetry.model import ProcSample, Snapshot

HUNG = str(Path(__file__).parents[1] / "diag" / "scripts" / "hung_tree.py")


class FakeTelemetry:
    """Snapshots every 0.1 s since ``zero``: one process at 100 % CPU until ``busy_s``."""

    def __init__(self, zero: float, busy_s: float | None) -> None:
        self.zero = zero
        self.busy_s = busy_s

    def snapshots(self) -> list[Snapshot]:
        now = time.monotonic() - self.zero
        out = []
        for i in range(int(now / 0.1) + 1):
            t = i * 0.1
            busy = self.busy_s is None or t < self.busy_s
            out.append(
                Snapshot(
                    t_s=t,
                    cpu_pct=100.0 if busy else 0.2,
                    rss_bytes=1,
                    threads=1,
                    processes=1,
                    read_bps=0.0,
                    write_bps=0.0,
                    net_rx_bps=0.0,
                    procs=(
                        ProcSample(
                            pid=1,
                            name="compile",
                            cpu_pct=100.0 if busy else 0.2,
                            rss_bytes=1,
                            threads=1,
                            state="R" if busy else "S",
                        ),
                    ),
                )
            )
        return out


@pytest.fixture
def hung() -> Iterator[int]:
    """A silent, idle process tree (hung in wait_for_nccl_peers); its main PID."""
    proc = subprocess.Popen(
        [sys.executable, HUNG], stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().startswith("READY")
        yield proc.pid
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


def gate(
    pid: int,
    *,
    busy_s: float | str | None,
    stall_s: float = 1.0,
    timeout_s: float = 60.0,
    log_path: str | None = None,
    ready: tuple[str, ...] = ("never printed",),
) -> tuple[Gate, list[str]]:
    """A gate on ``pid`` with fake telemetry (``busy_s="none"``: no telemetry at all)."""
    notes: list[str] = []
    zero = time.monotonic()
    telemetry = FakeTelemetry(zero, busy_s if not isinstance(busy_s, str) else None)
    # no sampler of the gate's own: the fake telemetry, or none at all
    options = GateOptions(ready=ready, timeout_s=timeout_s, stall_s=stall_s, sample_s=0)
    sources = GateSources(
        pid=pid,
        log_path=log_path,
        started_mono=zero,
        snapshots=None if busy_s == "none" else telemetry.snapshots,
        on_note=notes.append,
    )
    return Gate(options.resolve(), sources), notes


def test_busy_then_idle_is_slow_then_stuck_with_the_hung_function(hung: int) -> None:
    g, notes = gate(hung, busy_s=3.0)
    verdict = g.run()
    assert (verdict.status, verdict.kind, verdict.detected_by) == ("timeout", "stuck", "stall")
    # while it burned CPU it was kept waiting, and the user was told
    assert notes and notes[0].startswith("no output for 1 s before any known phase; slow")
    assert notes[0].endswith("still working: 1 process at 100 % CPU")
    # stopped only once idle for the stall period, after the busy spell
    assert verdict.elapsed_s > 3.0
    diagnosis = verdict.diagnosis
    assert diagnosis is not None and diagnosis.state == "stuck"
    assert diagnosis.activity is not None and not diagnosis.activity.busy
    assert diagnosis.stacks is not None
    assert diagnosis.stacks.summary == "3 of 5 processes in wait_for_nccl_peers"
    assert "stuck before any known phase: no output for" in verdict.reason
    assert verdict.reason.endswith("stacks: 3 of 5 processes in wait_for_nccl_peers")
    data = verdict.to_json()["diagnosis"]
    assert data["state"] == "stuck" and data["stacks"]["top"] == "wait_for_nccl_peers"


def test_idle_from_the_start_is_stuck_at_the_stall(hung: int) -> None:
    g, notes = gate(hung, busy_s=0.0)
    verdict = g.run()
    assert verdict.kind == "stuck" and not notes
    assert verdict.diagnosis is not None
    assert verdict.diagnosis.activity is not None
    assert verdict.diagnosis.activity.evidence.startswith("idle: CPU 0.2 %")


def test_without_telemetry_a_stall_is_a_timeout_as_before_with_stacks(hung: int) -> None:
    g, notes = gate(hung, busy_s="none")
    verdict = g.run()
    assert (verdict.kind, verdict.detected_by) == ("stall", "stall")
    assert verdict.reason.startswith("no progress for 1.0s before any known phase")
    assert verdict.diagnosis is not None and verdict.diagnosis.state is None
    assert verdict.diagnosis.stacks is not None
    assert verdict.diagnosis.stacks.top == "wait_for_nccl_peers"
    assert not notes


def test_busy_at_the_deadline_says_still_working(hung: int) -> None:
    g, notes = gate(hung, busy_s=None, timeout_s=2.5)
    verdict = g.run()
    assert (verdict.kind, verdict.detected_by) == ("deadline", "deadline")
    assert "; still working: 1 process at 100 % CPU" in verdict.reason
    assert verdict.hint is not None and verdict.hint.startswith("it was still working")
    assert verdict.diagnosis is not None and verdict.diagnosis.state == "slow"
    assert verdict.diagnosis.stacks is not None
    assert notes  # it was kept waiting past the stall limit first


def test_slow_then_ready_is_ready_with_the_slow_spell_kept(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.touch()  # a quiet log (a missing one is a note of its own: waiting for it)
    done = tmp_path / "go"
    code = (
        "import pathlib,sys,time\n"
        f"while not pathlib.Path({str(done)!r}).exists(): time.sleep(0.05)\n"
        f"open({str(log)!r}, 'a').write('compiled; ready now\\n')\n"
        "time.sleep(60)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code])
    try:
        g, notes = gate(proc.pid, busy_s=None, log_path=str(log), ready=("ready now",))

        def release(text: str) -> None:
            notes.append(text)
            if "slow" in text:
                done.touch()  # the "compile" ends once the gate has said it is slow

        g.sources.on_note = release
        verdict = g.run()
    finally:
        proc.kill()
        proc.wait()
    assert verdict.status == "ready"
    assert notes and "slow, still working: 1 process at 100 % CPU" in notes[0]
    assert verdict.diagnosis is not None and verdict.diagnosis.state == "slow"
    assert verdict.diagnosis.stacks is None  # READY takes no dump


# -- end to end: the simulator, the sampler, launch and dump as processes ----------------

SIM = [sys.executable, "-m", "servegate", "sim", "--engine", "sglang", "--startup", "1"]


def servegate(*args: str, timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "servegate", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def launch_sim(port: int, *sim_args: str, name: str, stall: str = "2") -> tuple[int, dict]:  # type: ignore[type-arg]
    import json

    done = servegate(
        "launch", "--name", name, "--engine", "sglang", "--json", "--stall", stall,
        "--sample", "0.25", "--timeout", "120", "--",
        *SIM, "--port", str(port), *sim_args,
    )  # fmt: skip
    return done.returncode, {**json.loads(done.stdout), "stderr": done.stderr}


@pytest.mark.slow
def test_silent_cpu_compile_longer_than_stall_is_kept_waiting_and_ready(port: int) -> None:
    code, verdict = launch_sim(
        port, "--phase", "jit_compile=6", "--work", "jit_compile=cpu", name="compile"
    )
    try:
        assert code == 0, verdict
        assert verdict["status"] == "ready"
        slow = [line for line in verdict["stderr"].splitlines() if "slow, still working" in line]
        assert slow and slow[0].startswith("no output for 2 s after init_attention_backend")
        assert "% CPU" in slow[0]
        assert verdict["diagnosis"]["state"] == "slow"
        assert verdict["diagnosis"]["activity"]["bound"] == "cpu"
        # every phase sampled says what it was bound by (the silent compile runs between
        # the simulator's logged phases, so which phase holds it is not asserted here)
        sampled = [p for p in verdict["phases"] if p["bound"] is not None]
        assert sampled, verdict["phases"]
        assert {p["bound"] for p in sampled} <= {"cpu", "disk", "network", "gpu", "idle"}
        assert all(p["bound_evidence"] for p in sampled)
    finally:
        assert servegate("stop", "compile").returncode == 0


@pytest.mark.slow
def test_silent_download_from_disk_is_slow_not_stuck(port: int) -> None:
    code, verdict = launch_sim(
        port, "--phase", "download=6", "--work", "download=disk", name="download"
    )
    try:
        assert code == 0, verdict
        slow = [line for line in verdict["stderr"].splitlines() if "slow, still working" in line]
        assert slow and "from disk" in slow[0], verdict["stderr"]
        assert verdict["diagnosis"]["activity"]["bound"] == "disk"
    finally:
        assert servegate("stop", "download").returncode == 0


def test_idle_hang_is_stopped_early_as_stuck_with_the_hung_function(port: int) -> None:
    code, verdict = launch_sim(port, "--fail", "hang", "--fail-at", "kv_cache", name="hung")
    assert code == 124, verdict
    assert (verdict["kind"], verdict["detected_by"]) == ("stuck", "stall")  # not the deadline
    assert verdict["reason"].startswith("stuck after load_weights: no output for 2.0s and idle")
    stacks = verdict["diagnosis"]["stacks"]
    assert stacks["top"] == "wait_for_nccl_peers"
    assert stacks["summary"] == "2 of 3 processes in wait_for_nccl_peers"
    assert "sim/lifecycle.py" in stacks["top_frame"]  # the simulator module that hangs
    assert verdict["reason"].endswith("stacks: 2 of 3 processes in wait_for_nccl_peers")
    assert servegate("ps").stdout == ""  # stopped after the verdict


def test_dump_a_running_server(port: int) -> None:
    import json

    code, verdict = launch_sim(port, name="running")
    try:
        assert code == 0, verdict
        main = verdict["pid"]
        done = servegate("dump", "running", "--json")
        assert done.returncode == 0, done.stderr
        data = json.loads(done.stdout)
        assert data["name"] == "running" and data["note"] is None
        pids = {p["pid"]: p for p in data["processes"]}
        assert main in pids and len(pids) == 3  # the server, its scheduler, its detokenizer
        assert all(p["python"] and p["threads"] for p in pids.values())
        assert data["summary"].startswith(f"{data['summary'].split()[0]} of 3 processes in ")
        text = servegate("dump", "running")
        assert text.returncode == 0
        assert text.stdout.splitlines()[0] == data["summary"]
        assert f"process {main} " in text.stdout
    finally:
        assert servegate("stop", "running").returncode == 0
    gone = servegate("dump", "running")
    assert gone.returncode == 2 and "no running server named 'running'" in gone.stderr


def test_sim_work_bad_input_is_one_sentence_exit_2() -> None:
    for args, words in (
        (["--work", "nope=cpu"], "--work nope=cpu: sglang has no such phase"),
        (["--work", "jit_compile=gpu"], "--work jit_compile=gpu: unknown kind; choose one of"),
        (["--work", "jit_compile"], "--work jit_compile: write PHASE=KIND"),
    ):
        done = servegate("sim", *args)
        assert done.returncode == 2, done.stderr
        assert words in done.stderr
