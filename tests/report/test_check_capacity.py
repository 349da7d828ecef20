"""``servegate check`` on the capacity under the SLO (``find_max`` campaigns): a
confident drop past ``--max-regression capacity=...`` is a regression; an A/A pair is
not called."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.campaign.helpers import servegate, write_campaign

BENCH = """\
requests = 16
find_max = "concurrency"
max_concurrency = 64
restarts = 3
[slo]
tpot_mean = "38ms\""""

VARIANTS = """\
[[variant]]
name = "baseline"
args = "--itl-ms 20 --batch-slowdown 0.1"
[[variant]]
name = "same"
args = "--itl-ms 20 --batch-slowdown 0.1"
env = { SERVEGATE_AA = "1" }
[[variant]]
name = "slower"
args = "--itl-ms 30 --batch-slowdown 0.1"
"""


@pytest.mark.slow
@pytest.mark.timeout(400)  # nine starts of a capacity search each
def test_a_capacity_drop_is_a_regression_and_an_a_a_pair_is_not(tmp_path: Path) -> None:
    """On the simulator (--itl-ms 20 --batch-slowdown 0.1: TPOT 20 ms x (1 + 0.1 (c - 1))
    <= 38 ms to c=10; with --itl-ms 30 to c=3, a drop of about 70 %; each user adds 2 ms
    of TPOT, so a busy machine's own delays of a few ms move the capacity by a user or
    two, not by half, as they did with 0.3 ms a user): with three starts a side the
    slower variant's capacity is a regression past 5 % (exit 1), and the A/A variant (the
    baseline's command, a server of its own) is not called. (Two starts a side, Student's
    t with one degree of freedom, left -63 % [-88.6, +7.6] uncalled beside two
    CPU-burning processes.)"""
    path = write_campaign(tmp_path, VARIANTS, bench=BENCH)
    path.write_text(path.read_text().replace("output_len = 4", "output_len = 8"))
    db = tmp_path / "c.db"
    run = servegate("run", path, "--db", db, timeout=400)
    assert run.returncode == 0, run.stderr
    out = tmp_path / "check.json"
    check = servegate(
        "check", "t", "--db", db, "--max-regression", "capacity=5%", "--json-file", out
    )
    assert check.returncode == 1, check.stdout + check.stderr
    result = json.loads(out.read_text())
    rows = {v["variant"]: v["checks"] for v in result["variants"]}
    (slower,) = rows["slower"]
    (same,) = rows["same"]
    assert slower["metric"] == same["metric"] == "capacity"
    assert slower["result"] == "regression"
    assert slower["change_high"] < -0.05
    assert slower["starts_baseline"] == slower["starts_candidate"] == 3
    assert same["result"] != "regression"
    assert "capacity" in check.stdout and "REGRESSION" in check.stdout
