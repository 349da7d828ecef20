"""Time of ``servegate demo``, where it goes, and how fast a campaign stops and resumes.

1. ``servegate demo`` end to end: wall time, the runner's own CPU, and a breakdown from
   the database (startups, benchmarking, stops, and the rest: the runner's overhead).
2. Ctrl-C: seconds from SIGINT to the runner's exit (server stopped, results printed).
3. ``--resume`` of a finished campaign: the fixed cost of a run that has nothing to do.

    python benchmarks/campaign_demo.py
"""

from __future__ import annotations

import os
import platform
import resource
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

SERVEGATE = [sys.executable, "-m", "servegate"]


def _seconds(a: str, b: str) -> float:
    return (datetime.fromisoformat(b) - datetime.fromisoformat(a)).total_seconds()


def demo(folder: Path) -> None:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    out = subprocess.run(
        [*SERVEGATE, "demo", "--dir", str(folder)], capture_output=True, text=True, check=False
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert out.returncode == 0, out.stderr
    conn = sqlite3.connect(folder / "servegate.db")
    try:
        attempts = conn.execute(
            "SELECT a.started_at, a.ended_at, a.stop_duration_s, d.elapsed_s, d.status "
            "FROM attempt a LEFT JOIN verdict d ON d.attempt_id = a.id"
        ).fetchall()
        points = conn.execute("SELECT count(*) FROM point").fetchone()[0]
    finally:
        conn.close()
    in_attempts = sum(_seconds(a, b) for a, b, *_ in attempts if b)
    startup = sum(e or 0.0 for *_, e, _ in attempts)
    stops = sum(s or 0.0 for _, _, s, _, _ in attempts)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    print(f"demo wall time: {wall:.1f} s; CPU of all processes: {cpu:.1f} s")
    print(f"  {len(attempts)} server starts, {points} points")
    print(f"  startups (to verdict): {startup:.1f} s; stops: {stops:.1f} s")
    print(f"  benchmarking and preflight inside attempts: {in_attempts - startup - stops:.1f} s")
    print(f"  outside attempts (imports, store, report, HTML): {wall - in_attempts:.1f} s")


def interrupt_latency(folder: Path) -> None:
    campaign = folder / "demo.toml"
    db = folder / "interrupt.db"
    runner = subprocess.Popen(
        [*SERVEGATE, "run", str(campaign), "--db", str(db)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    with runner:
        while True:
            time.sleep(0.05)
            if not db.exists():
                continue
            try:
                conn = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True)
                try:
                    count = conn.execute("SELECT count(*) FROM point").fetchone()[0]
                finally:
                    conn.close()
            except sqlite3.OperationalError:
                continue
            if count:
                break
        start = time.perf_counter()
        runner.send_signal(signal.SIGINT)
        runner.wait()
    print(
        f"Ctrl-C to exit (mid-point; server stopped, table printed): "
        f"{time.perf_counter() - start:.2f} s, exit code {runner.returncode}"
    )


def resume_cost(folder: Path) -> None:
    start = time.perf_counter()
    out = subprocess.run(
        [
            *SERVEGATE,
            "run",
            str(folder / "demo.toml"),
            "--db",
            str(folder / "servegate.db"),
            "--resume",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    print(
        f"--resume of the finished demo (nothing to measure): {time.perf_counter() - start:.2f} s"
    )


def main() -> None:
    print(
        f"machine: {platform.platform()}, {os.cpu_count()} CPUs, Python {platform.python_version()}"
    )
    print(f"load average before: {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "demo"
        demo(folder)
        resume_cost(folder)
        interrupt_latency(folder)
    print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
