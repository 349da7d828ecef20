"""Output on a full disk: one sentence and exit 2, never a traceback (Linux's /dev/full
answers every write with ENOSPC, as a full disk does)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.report.starts import Campaign

from servegate.store import CampaignStatus, Store

FULL = "/dev/full"
pytestmark = pytest.mark.skipif(not os.path.exists(FULL), reason="needs /dev/full")


@pytest.fixture
def results(tmp_path: Path) -> Path:
    """A stored campaign with one measured variant."""
    path = tmp_path / "r.db"
    with Store.open(path) as store:
        campaign = Campaign(store, "nightly", "base")
        for start in range(2):
            aid = campaign.start("base")
            for repeat in range(2):
                campaign.point(aid, "base", "c=4", start * 2 + repeat, throughput=100.0 + repeat)
            campaign.stop(aid)
        store.set_campaign_status(campaign.cid, CampaignStatus.DONE)
    return path


@pytest.mark.parametrize("args", [["report"], ["report", "--json"], ["report", "--markdown"]])
def test_stdout_on_a_full_disk_is_one_sentence(results: Path, args: list[str]) -> None:
    """``servegate report > file`` on a full disk: exit 2, the disk named (before: exit 3
    with a traceback)."""
    with open(FULL, "w", encoding="utf-8") as full:
        run = subprocess.run(
            [sys.executable, "-m", "servegate", *args, "--db", str(results)],
            stdout=full, stderr=subprocess.PIPE, text=True, timeout=120, check=False,
        )  # fmt: skip
    assert run.returncode == 2, run.stderr
    assert run.stderr == (
        "Error: cannot write the output: the disk is full (no space left on the device); "
        "free some space or write the output to another disk.\n"
    )
