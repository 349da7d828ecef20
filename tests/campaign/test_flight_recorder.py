"""The flight recorder in campaigns: each start's telemetry stored with its attempt and
in the start history, start ETAs and time left in the progress, preflight waits that
name what holds the port, and the live "slow, still working" note."""

from __future__ import annotations

import io
import json
import os
import socket
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from tests.campaign.helpers import query, servegate, write_campaign

from servegate.campaign.preflight import process_tree, run_preflight
from servegate.launch import launch
from servegate.startup.status import StatusLine, describe_resources
from servegate.telemetry.model import GpuSample, Snapshot

VARIANTS = """
[[variant]]
name = "baseline"

[[variant]]
name = "faster"
args = "--itl-ms 2"

[[variant]]
name = "oom"
args = "--fail oom --fail-at load_weights"
"""


def history_rows() -> list[sqlite3.Row]:
    """The start history's rows (the test's own file: SERVEGATE_HISTORY)."""
    conn = sqlite3.connect(os.environ["SERVEGATE_HISTORY"])
    conn.row_factory = sqlite3.Row
    try:
        return list(conn.execute("SELECT * FROM starts ORDER BY id"))
    finally:
        conn.close()


def standing(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("campaign: ")]


def test_campaign_stores_telemetry_writes_history_and_shows_etas(tmp_path: Path) -> None:
    """Every start (READY or CRASH) keeps its series, which reaches the verdict's moment;
    each start joins the history with its telemetry; a second run shows the ETAs."""
    path = write_campaign(tmp_path, VARIANTS, bench="concurrency = [1]\nrequests = 4")
    db = tmp_path / "c.db"
    out = servegate("run", path, "--db", db)
    assert out.returncode == 0, out.stderr
    attempts = query(
        db,
        "SELECT a.id, v.name, d.status, d.elapsed_s, d.json FROM attempt a "
        "JOIN variant v ON v.id = a.variant_id JOIN verdict d ON d.attempt_id = a.id "
        "ORDER BY a.id",
    )
    assert [(name, status) for _, name, status, _, _ in attempts] == [
        ("baseline", "ready"),
        ("faster", "ready"),
        ("oom", "crash"),
    ]
    unsampled = set()  # a start that crashed before the sampler's first read of it
    for aid, name, status, elapsed_s, verdict_json in attempts:
        series = query(
            db, "SELECT idx, t_s, processes FROM attempt_telemetry WHERE attempt_id = ?", aid
        )
        if not series and status == "crash":
            # on a loaded machine the sampler's thread may first run after a crash within
            # the first second: then nothing was sampled, and the verdict says so
            telemetry = json.loads(str(verdict_json)).get("telemetry")
            assert telemetry is None or telemetry["samples"] == 0, (name, telemetry)
            unsampled.add(name)
            continue
        # the first sample at the start and one more after the verdict, at least
        assert len(series) >= 2, (name, series)
        assert [row[0] for row in series] == list(range(len(series)))
        assert max(float(str(row[1])) for row in series) >= float(str(elapsed_s)), (name, series)
        assert any(int(str(row[2])) >= 1 for row in series)
        # the summary counts the sample taken after the verdict as well
        assert json.loads(str(verdict_json))["telemetry"]["samples"] == len(series)

    rows = history_rows()
    assert [(r["via"], r["status"]) for r in rows] == [
        ("campaign", "ready"),
        ("campaign", "ready"),
        ("campaign", "crash"),
    ]
    assert unsampled <= {"oom"}, unsampled  # the READY starts are always sampled
    for row, (_, name, _, _, _) in zip(rows, attempts, strict=True):
        if name in unsampled:
            continue
        telemetry = json.loads(row["telemetry"])
        assert telemetry["samples"] >= 2
        # a server that lives to READY is sampled alive; one that crashes at once may be
        # gone before any sample reads it on a loaded machine
        assert telemetry["peak_rss_bytes"] > 0 or row["status"] != "ready"
        assert "{port}" in row["command"]
    assert standing(out.stderr)[0] == (
        "campaign: 0/3 starts done, 0/3 variants done; time left known once a start is measured"
    )
    assert "(ETA " not in out.stderr  # no history yet

    again = servegate("run", path, "--db", tmp_path / "second.db")
    assert again.returncode == 0, again.stderr
    launching = [line for line in again.stderr.splitlines() if ": launching " in line]
    assert len(launching) == 3, again.stderr
    for line in launching[:2]:  # the READY configurations have a past start each
        assert "from 1 past start(s))" in line and "(ETA " in line, line
    assert "(ETA " not in launching[2]  # a crash gives no ETA
    lines = standing(again.stderr)
    assert [line.split(";")[0] for line in lines] == [
        "campaign: 0/3 starts done, 0/3 variants done",
        "campaign: 1/3 starts done, 1/3 variants done",
        "campaign: 2/3 starts done, 2/3 variants done",
    ]
    assert lines[1].split("; ")[1].startswith("about ") and lines[1].endswith(" left")
    assert len(history_rows()) == 6


@pytest.mark.slow
def test_slow_note_reaches_the_campaign_progress(tmp_path: Path) -> None:
    """A silent compile that burns a core past stall_s is slow: the campaign says so
    and the start goes on to READY."""
    path = write_campaign(
        tmp_path,
        """
        [[variant]]
        name = "baseline"
        args = "--phase jit_compile=50 --work jit_compile=cpu"
        """,
        # the compile child has seconds to start burning on a busy machine (1 s samples)
        server_extra="stall_s = 4",
        bench="concurrency = [1]\nrequests = 2",
    )
    out = servegate("run", path, "--db", tmp_path / "c.db", timeout=120)
    assert out.returncode == 0, out.stderr
    slow = [line for line in out.stderr.splitlines() if "slow, still working" in line]
    assert slow and slow[0].startswith("[1/1] baseline: no output for "), out.stderr
    assert "% CPU" in slow[0]


def test_preflight_port_wait_names_the_holder_and_the_time(tmp_path: Path) -> None:
    """The previous server still holds the port: the wait says which port, the PID that
    holds it, the time waited and the limit; the port freed, the check passes."""
    script = textwrap.dedent(
        """
        import socket, sys
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        s.listen()
        print(s.getsockname()[1], flush=True)
        sys.stdin.read()
        """
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdin is not None
        port = int(holder.stdout.readline())
        previous = process_tree(holder.pid)
        said: list[str] = []

        def on_wait(text: str) -> None:
            said.append(text)
            if holder.poll() is None:
                holder.kill()  # the previous server's stop ends: the port is released
                holder.wait()

        report = run_preflight(port=port, previous=previous, timeout_s=60.0, on_wait=on_wait)
    finally:
        if holder.poll() is None:
            holder.kill()
        holder.wait()
        for stream in (holder.stdin, holder.stdout):
            if stream is not None:
                stream.close()
    assert report.ok, report.reason()
    assert said, "the preflight waited without saying so"
    first = said[0]
    assert first.startswith("waiting for 1 process(es) of the previous server to exit"), first
    assert f"release port {port} (held by PID {holder.pid} (python" in first, first
    assert first.endswith("s of up to 60s")
    waited = first.rsplit(": ", 1)[1].split("s of", 1)[0]
    assert float(waited) >= 0.0
    with socket.socket() as sock:  # and it is free now
        sock.bind(("127.0.0.1", port))


def _sim(port: int, *extra: str) -> list[str]:
    sim = [sys.executable, "-m", "servegate", "sim", "--engine", "sglang"]
    return [*sim, "--port", str(port), *extra]


def test_launch_status_events_feed_the_live_status_line(port: int) -> None:
    """The keeper sends each sample while the server starts (no per-process detail); the
    live status line shows the tree's CPU and RSS from the newest; the series ends with a
    sample taken after the verdict."""
    seen: list[Snapshot] = []
    with launch(
        _sim(port, "--startup", "1.5"),
        engine="sglang",
        port=port,
        sample_s=0.1,
        on_status=seen.append,
    ) as server:
        verdict = server.verdict
    assert seen, "no status event while it started"
    assert all(s.procs == () for s in seen)
    assert max(s.processes for s in seen) >= 1 and max(s.rss_bytes for s in seen) > 0
    times = [s.t_s for s in seen]
    assert times == sorted(times)
    assert verdict.snapshots[-1].t_s >= verdict.elapsed_s > times[-1]
    assert verdict.telemetry is not None and verdict.telemetry.samples >= len(seen) + 1

    out = io.StringIO()
    line = StatusLine(engine="sglang", eta=None, stream=out, live=True)
    line.resources(seen[-1])
    line.follow(None, time.time())
    try:
        for _ in range(200):  # the first drawing is at once; wait for it, however slow
            if "RSS" in out.getvalue():
                break
            time.sleep(0.05)
    finally:
        line.stop()
    drawn = out.getvalue()
    assert f"| CPU {seen[-1].cpu_pct:.0f}% | RSS " in drawn, drawn
    assert "GPU" not in drawn  # no GPU in this snapshot, no GPU memory shown


def test_resources_show_gpu_memory_where_there_is_a_gpu() -> None:
    """CPU, RSS and, with GPUs, their memory in use summed."""
    gpu = GpuSample(
        index=0,
        name="NVIDIA H200",
        mem_used_bytes=3 * 2**30,
        mem_tree_bytes=2**30,
        mem_total_bytes=141 * 2**30,
        util_pct=40.0,
        power_w=None,
    )
    snap = Snapshot(
        t_s=1.0,
        cpu_pct=97.6,
        rss_bytes=1536 * 2**20,
        threads=10,
        processes=2,
        read_bps=0.0,
        write_bps=0.0,
        net_rx_bps=0.0,
        gpus=(gpu, gpu),
    )
    assert describe_resources(snap) == ["CPU 98%", "RSS 1.5G", "GPU 6.0G"]
    assert describe_resources(None) == []


def test_plain_launch_history_row_carries_telemetry(port: int) -> None:
    """servegate launch: the start's history row has its telemetry summary."""
    done = servegate(
        "launch", "--name", "hist", "--engine", "sglang", "--json", "--sample", "0.2",
        "--timeout", "60", "--", *_sim(port, "--startup", "0.5"),
    )  # fmt: skip
    try:
        assert done.returncode == 0, done.stderr
        verdict = json.loads(done.stdout)
    finally:
        assert servegate("stop", "hist").returncode == 0
    (row,) = history_rows()
    assert row["via"] == "launch"
    telemetry = json.loads(row["telemetry"])
    assert telemetry["samples"] >= 2 and telemetry["peak_rss_bytes"] > 0
    assert telemetry == verdict["telemetry"]
