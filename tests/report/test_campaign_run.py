"""The report of a real campaign run: the runner's own failure and workload records."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from servegate.report import build_report, render_csv
from servegate.store import Store

CAMPAIGN = """\
[campaign]
name = "honest"
baseline = "baseline"

[server]
engine = "sglang"
command = "{python} -m servegate sim --engine sglang --port {port} --profile fast --time-scale 0.2"
port = "auto"
timeout_s = 30
stop_grace_s = 5
release_timeout_s = 10

[bench]
warmup = 1
input_len = 32
output_len = 4
concurrency = [2]
requests = 6
repeats = 2

[[variant]]
name = "baseline"

[[variant]]
name = "long"
description = "benchmark-only: longer prompts on the baseline's server"
bench = { input_len = 64 }

[[variant]]
name = "broken"
description = "every completion fails, so its benchmark cannot start"
args = "--error-rate 1"

[[variant]]
name = "fusion-long"
args = "--itl-ms 8"
bench = { input_len = 64 }
"""


@pytest.mark.slow
def test_a_real_run_is_reported_honestly(tmp_path: Path) -> None:
    """broken is failed and uncompared; fusion-long is compared with long; long has no startup."""
    (tmp_path / "c.toml").write_text(textwrap.dedent(CAMPAIGN), encoding="utf-8")
    run = subprocess.run(
        [sys.executable, "-m", "servegate", "run", "c.toml", "--db", "r.db"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert "broken: FAILED, not compared: could not benchmark broken" in run.stdout
    with Store.open(tmp_path / "r.db") as store:
        report = build_report(store, "honest")
    rows = {row.name: row for row in report.variants}
    assert (rows["broken"].status, rows["broken"].reason) == (
        "failed",
        "could not benchmark broken",
    )
    assert rows["baseline"].status == "done"
    assert rows["long"].on_baseline_server and rows["long"].reference is None
    comp = report.get("fusion-long", "c=2", "output_throughput")
    assert comp is not None and comp.reference == "long"
    assert {c.variant for c in report.comparisons} == {"fusion-long"}
    assert {c.variant for c in report.startup} == {"fusion-long"}
    broken = [r for r in render_csv(report).splitlines() if r.startswith("honest,broken,")]
    assert "honest,broken,failed,,,,,,,,,,,,,,,0,could not benchmark broken,failed" in broken
    assert all(line.endswith(",not compared") for line in broken[1:])  # its startup
