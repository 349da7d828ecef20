"""Names stored before control characters were refused print escaped, never as a line.

An older servegate accepted a variant name such as ``slow\\nfast: 1.500 ... (better)``;
its databases still hold them. Every format renders such a name on its own line and
cell: report (terminal, markdown, CSV, HTML, JSON), check and the GitHub step summary.
"""

from __future__ import annotations

import csv
import io
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from .campaign import build

FORGED = "fast: 1.500 +/- 0.001 x baseline output throughput (better)"
# a newline, a CR, an ANSI erase-line, a C1 CSI, a bidi override, a table pipe, backticks
HOSTILE = f"slow\n{FORGED}\r\x1b[2K\x9b2K\u202e|`x`"
NODE = "gpu-1\x1b[2K\rgpu-2"  # a cluster node's name, as Ray reported it
TAIL = "RuntimeError: boom\x1b]0;pwned\x07\r" + FORGED


@pytest.fixture(scope="module")
def old_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The constructed campaign with its 'fast' variant renamed to HOSTILE, a control
    sequence in the crashed variant's stored log tail and in every start's node name, as
    an older version could store."""
    path = tmp_path_factory.mktemp("names") / "old.db"
    build(path)
    conn = sqlite3.connect(path)
    try:
        with conn:
            conn.execute("UPDATE variant SET name = ? WHERE name = 'fast'", (HOSTILE,))
            conn.execute("UPDATE attempt SET node = ?", (NODE,))
            for attempt_id, text in conn.execute("SELECT attempt_id, json FROM verdict"):
                verdict = json.loads(text)
                if verdict.get("tail"):
                    verdict["tail"] = [*verdict["tail"], TAIL]
                    conn.execute(
                        "UPDATE verdict SET json = ? WHERE attempt_id = ?",
                        (json.dumps(verdict), attempt_id),
                    )
    finally:
        conn.close()
    return path


def servegate(
    *args: str | Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """The command line, to completion."""
    return subprocess.run(
        [sys.executable, "-m", "servegate", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "NO_COLOR": "1", "COLUMNS": "400", **(env or {})},
    )


def _no_forgery(text: str) -> None:
    """No line starts with the forged result; no raw control character is left."""
    assert not any(line.lstrip("│|- ").startswith(FORGED) for line in text.splitlines())
    for char in ("\r", "\x1b", "\x9b", "\u202e", "\x07"):
        assert char not in text


def test_report_on_the_terminal_shows_an_old_name_escaped(old_db: Path) -> None:
    """The console table and closing lines show ``slow\\nfast...`` on one line."""
    result = servegate("report", "--db", old_db)
    assert result.returncode == 0, result.stderr
    assert "slow\\nfast: 1.500" in result.stdout
    assert "gpu-1\\x1b[2K\\rgpu-2" in result.stdout
    _no_forgery(result.stdout)


def test_report_markdown_keeps_an_old_name_in_its_cell(old_db: Path) -> None:
    """In markdown the name is one line, its ``|`` and backticks escaped, and a log tail
    cannot close its code fence."""
    result = servegate("report", "--db", old_db, "--markdown")
    assert result.returncode == 0, result.stderr
    _no_forgery(result.stdout)
    rows = [line for line in result.stdout.splitlines() if line.startswith("| slow")]
    assert rows
    for row in rows:
        assert "\\|\\`x\\`" in row
        header = next(
            line for line in result.stdout.splitlines() if line.startswith("| variant | status")
        )
        if row.count(" | ") > 2 and "ok" in row:
            assert row.replace("\\|", "").count("|") == header.count("|")
    assert "RuntimeError: boom\\x1b]0;pwned\\x07\\r" + FORGED in result.stdout  # in its fence


def test_report_csv_keeps_one_row_per_record(old_db: Path, tmp_path: Path) -> None:
    """A CR in an old name never splits a CSV row: every row has the header's width."""
    out = tmp_path / "r.csv"
    result = servegate("report", "--db", old_db, "--csv-file", out)
    assert result.returncode == 0, result.stderr
    text = out.read_text(encoding="utf-8")
    assert "\r" not in text.replace("\r\n", "\n")
    rows = list(csv.reader(io.StringIO(text)))
    assert len({len(row) for row in rows}) == 1
    assert any(cell.startswith("slow\\nfast") for row in rows for cell in row)


def test_report_html_and_json_hold_no_control_character(old_db: Path, tmp_path: Path) -> None:
    """The HTML page and the JSON document show the escaped name."""
    page, doc = tmp_path / "r.html", tmp_path / "r.json"
    result = servegate("report", "--db", old_db, "--html-file", page, "--json-file", doc)
    assert result.returncode == 0, result.stderr
    html = page.read_text(encoding="utf-8")
    assert "\x1b" not in html and "\u202e" not in html
    assert "slow\\nfast" in html
    assert "slow\\\\nfast" in doc.read_text(encoding="utf-8")  # JSON: a backslash, then n


def test_check_and_the_step_summary_show_an_old_name_escaped(old_db: Path, tmp_path: Path) -> None:
    """check's table, its markdown and the GitHub step summary: one line per name."""
    summary = tmp_path / "summary.md"
    env = {"GITHUB_STEP_SUMMARY": str(summary)}
    result = servegate("check", "--db", old_db, env=env)
    assert result.returncode in (0, 1), result.stderr
    _no_forgery(result.stdout)
    assert "slow\\nfast: 1.500" in result.stdout
    text = summary.read_text(encoding="utf-8")
    _no_forgery(text)
    assert "slow\\\\nfast: 1.500" in text
