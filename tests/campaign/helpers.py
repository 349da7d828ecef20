"""Campaign files on the simulator, and reading a campaign database back."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

SIM = (
    "{python} -m servegate sim --engine sglang --port {port} --profile fast "
    "--time-scale 0.2 --jitter 0.02"
)


def write_campaign(
    folder: Path,
    variants: str,
    *,
    name: str = "t",
    baseline: str = "baseline",
    server_extra: str = "",
    bench: str = "concurrency = [1, 4]\nrequests = 6\nrepeats = 2",
) -> Path:
    """A campaign file on the fast simulator with tiny load points; returns its path."""
    text = textwrap.dedent(
        """\
        [campaign]
        name = "{name}"
        baseline = "{baseline}"

        [server]
        engine = "sglang"
        command = "{sim}"
        port = "auto"
        timeout_s = 30
        stop_grace_s = 5
        release_timeout_s = 10
        {server_extra}

        [bench]
        warmup = 1
        input_len = 32
        output_len = 4
        {bench}

        """
    ).format(
        name=name,
        baseline=baseline,
        sim=SIM,
        server_extra=server_extra,
        bench=bench,
    )
    path = folder / f"{name}.toml"
    path.write_text(text + textwrap.dedent(variants), encoding="utf-8")
    return path


def servegate(*args: str | Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Run the servegate command line to completion."""
    return subprocess.run(
        [sys.executable, "-m", "servegate", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def query(db: Path, sql: str, *params: object) -> list[tuple[object, ...]]:
    """Rows of a read-only query on the campaign database (closed at once)."""
    conn = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True, timeout=10)
    try:
        return list(conn.execute(sql, params))
    finally:
        conn.close()


def wait_for_points(db: Path, count: int, timeout: float = 30) -> int:
    """Wait until the database holds at least ``count`` points; return how many."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if db.exists():
            try:
                found = int(str(query(db, "SELECT count(*) FROM point")[0][0]))
            except sqlite3.OperationalError:
                found = 0
            if found >= count:
                return found
        time.sleep(0.05)
    raise AssertionError(f"fewer than {count} points in {db} after {timeout}s")
