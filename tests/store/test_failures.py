"""Store failures are one-line messages: a full disk, a damaged file, a read-only folder."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from tests.campaign.helpers import query, servegate, wait_for_points, write_campaign
from tests.conftest import leftovers

from servegate.store import AttemptStatus, CampaignStatus, Store

from .data import make_result
from .mounts import fill, read_only_view, tmpfs

TWO_VARIANTS = """
[[variant]]
name = "baseline"

[[variant]]
name = "b"
args = "--itl-ms 6"
"""


def _stored_campaign(path: Path, *, points: int = 2) -> None:
    """A database holding campaign 'c' with ``points`` measured points of its baseline."""
    rng = np.random.default_rng(5)
    with Store.open(path) as store:
        cid = store.campaign("c", "[campaign]\n", "baseline")
        aid = store.start_attempt(
            cid,
            variant="baseline",
            server_key="k",
            command=["srv"],
            env={},
            host="local",
            versions={},
            git_commit=None,
        )
        for repeat in range(points):
            store.record_point(
                aid,
                variant="baseline",
                load="c=4",
                repeat=repeat,
                result=make_result(rng, throughput=50.0),
            )
        store.finish_attempt(aid, AttemptStatus.DONE)
        store.set_campaign_status(cid, CampaignStatus.DONE)


def _one_error_line(out: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in out.stderr, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert lines[0].startswith("Error: "), out.stderr
    return lines[0]


def test_disk_full_during_a_run_keeps_the_points_closes_the_campaign_and_exits_3(
    tmp_path: Path,
) -> None:
    """When the disk holding the database fills up mid-campaign, the run stops its server,
    keeps every point it measured, leaves the campaign interrupted and exits 3 with one
    Error line saying how to continue."""
    path = write_campaign(
        tmp_path, TWO_VARIANTS, bench="concurrency = [1]\nrequests = 6\nrepeats = 4"
    )
    with tmpfs(tmp_path / "disk", size_kib=4096) as disk:
        db = disk / "c.db"
        runner = subprocess.Popen(
            [sys.executable, "-m", "servegate", "run", str(path), "--db", str(db)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        with runner:
            wait_for_points(db, 1)
            fill(disk)
            _, stderr = runner.communicate(timeout=120)
        assert leftovers(grace_s=5) == []
        kept = int(query(db, "SELECT count(*) FROM point")[0][0])  # type: ignore[call-overload]
        report = servegate("report", "--db", db, "t", "--json")
    assert runner.returncode == 3, stderr
    assert "Traceback" not in stderr
    last = stderr.strip().splitlines()[-1]
    assert last.startswith("Error: ")
    assert "full" in last
    assert f"{kept} measurement(s) kept" in last
    assert "--resume" in last
    assert 1 <= kept < 8
    assert report.returncode == 0, report.stderr
    assert json.loads(report.stdout)["campaign"]["status"] == "interrupted"


@pytest.mark.parametrize(
    ("offset", "length"),
    [(16, 84), (0, 100)],
    ids=["header-after-magic", "whole-header"],
)
def test_a_damaged_header_is_named_by_run_and_report(
    tmp_path: Path, offset: int, length: int
) -> None:
    """Garbage over a servegate database's header: run and report exit 2 with
    '... is damaged: ...; restore it or use a new --db', and the file is not touched."""
    db = tmp_path / "c.db"
    _stored_campaign(db)
    with open(db, "r+b") as handle:
        handle.seek(offset)
        handle.write(bytes(range(37, 37 + length)))
    before = db.read_bytes()
    campaign = write_campaign(tmp_path, TWO_VARIANTS)
    for out in (servegate("run", campaign, "--db", db), servegate("report", "--db", db)):
        assert out.returncode == 2, out.stderr
        line = _one_error_line(out)
        assert f"{db} is damaged: " in line
        assert "restore it or use a new --db" in line
    assert db.read_bytes() == before


def test_a_damaged_page_is_named_when_it_is_read(tmp_path: Path) -> None:
    """A page of stored samples overwritten with garbage: report exits 2 naming the file
    as damaged, with no traceback."""
    db = tmp_path / "c.db"
    _stored_campaign(db, points=6)
    size = db.stat().st_size
    with open(db, "r+b") as handle:
        handle.seek(4096)  # every page after the first (the schema) is garbage
        handle.write(bytes((i * 7 + 3) % 256 for i in range(size - 4096)))
    out = servegate("report", "--db", db)
    assert out.returncode == 2, out.stderr
    line = _one_error_line(out)
    assert f"{db} is damaged: " in line
    assert "restore it or use a new --db" in line


def test_a_read_only_folder_is_reported_from_and_refused_by_run(tmp_path: Path) -> None:
    """In a read-only folder, report reads the database; run exits 2 naming the folder,
    for an existing database and for a new one, and creates nothing there."""
    source = tmp_path / "results"
    source.mkdir()
    _stored_campaign(source / "c.db")
    assert sorted(os.listdir(source)) == ["c.db"]  # closed cleanly: no -wal, no -shm
    campaign = write_campaign(tmp_path, TWO_VARIANTS)
    with read_only_view(source, tmp_path / "ro") as view:
        report = servegate("report", "--db", view / "c.db")
        existing = servegate("run", campaign, "--db", view / "c.db")
        new = servegate("run", campaign, "--db", view / "new.db")
        listing = sorted(os.listdir(view))
    assert report.returncode == 0, report.stderr
    assert "baseline" in report.stdout
    for out in (existing, new):
        assert out.returncode == 2, out.stderr
        line = _one_error_line(out)
        assert f"folder {view}" in line
        assert "read-only" in line.lower()
    assert listing == ["c.db"]


@pytest.mark.parametrize("kind", ["empty file", "empty database"])
def test_a_file_without_results_is_named_by_report_and_check(tmp_path: Path, kind: str) -> None:
    """An empty file, or a SQLite file with no tables: report and check exit 2 with one
    sentence, and the file is not touched."""
    db = tmp_path / "empty.db"
    if kind == "empty file":
        db.write_bytes(b"")
    else:
        sqlite3.connect(db).close()
    before = db.read_bytes()
    for out in (servegate("report", "--db", db), servegate("check", "--db", db)):
        assert out.returncode == 2, out.stderr
        assert f"{db} holds no servegate results" in _one_error_line(out)
    assert db.read_bytes() == before
