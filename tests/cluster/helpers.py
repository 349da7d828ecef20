"""Campaign files on the simulator for the cluster tests, and reading their results."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from tests.campaign.helpers import query

SIM = "{python} -m servegate sim --engine sglang --port {port} --profile fast --jitter 0.02"

# each variant's decode speed: fast is clearly better than the baseline, slow clearly worse
VARIANTS = {"baseline": "", "fast": "--itl-ms 2", "slow": "--itl-ms 20"}


def write_campaign(
    folder: Path,
    *,
    name: str = "ray",
    variants: dict[str, str] | None = None,
    startup_s: float = 2.0,
    repeats: int = 2,
    requests: int = 8,
    extra_server: str = "",
    ray: str | None = None,
) -> Path:
    """A campaign of simulator variants (``name -> args``), one GPU per server."""
    text = textwrap.dedent(
        f"""\
        [campaign]
        name = "{name}"
        baseline = "baseline"

        [server]
        engine = "sglang"
        command = "{SIM} --startup {startup_s}"
        port = "auto"
        timeout_s = 120
        stop_grace_s = 5
        release_timeout_s = 10
        gpus = 1
        {extra_server}

        [bench]
        warmup = 1
        input_len = 32
        output_len = 8
        concurrency = [1, 4]
        requests = {requests}
        repeats = {repeats}
        """
    )
    if ray is not None:
        text += f'\n[cluster]\nray = "{ray}"\n'
    for variant, args in (variants or VARIANTS).items():
        text += f'\n[[variant]]\nname = "{variant}"\nargs = "{args}"\n'
    path = folder / f"{name}.toml"
    path.write_text(text, encoding="utf-8")
    return path


def servegate(*args: str | Path, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    """Run the servegate command line to completion."""
    return subprocess.run(
        [sys.executable, "-m", "servegate", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def report(db: Path, name: str) -> dict[str, Any]:
    """``servegate report --json`` of the campaign."""
    done = servegate("report", "--db", db, name, "--json", timeout=120)
    assert done.returncode == 0, done.stderr
    data: dict[str, Any] = json.loads(done.stdout)
    return data


def calls(data: dict[str, Any], metric: str) -> dict[tuple[str, str, str], str]:
    """(variant, reference, load) -> the call on ``metric``."""
    return {
        (c["variant"], c["reference"], c["load"]): c["call"]
        for c in data["comparisons"]
        if c["metric"] == metric
    }


def attempts(db: Path) -> list[dict[str, Any]]:
    """Every attempt with its variant, status, node, GPU model, start and times."""
    rows = query(
        db,
        "SELECT a.id, v.name, a.status, a.node, a.gpu_model, a.start, a.started_at, "
        "a.ended_at, d.decided_at FROM attempt a JOIN variant v ON v.id = a.variant_id "
        "LEFT JOIN verdict d ON d.attempt_id = a.id ORDER BY a.id",
    )
    keys = ("id", "variant", "status", "node", "gpu_model", "start", "started", "ended", "ready")
    return [dict(zip(keys, row, strict=True)) for row in rows]


def points(db: Path) -> set[tuple[str, str, int]]:
    """The stored (variant, load, repeat) measurements."""
    rows = query(
        db, "SELECT v.name, p.load, p.repeat FROM point p JOIN variant v ON v.id = p.variant_id"
    )
    return {(str(v), str(load), int(str(r))) for v, load, r in rows}
