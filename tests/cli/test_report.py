"""``servegate report`` as a user runs it: a real process on a real database file."""

from __future__ import annotations

import json
import os
import pty
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from tests.report.campaign import build


def _servegate(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "servegate", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=120,
        check=False,
    )


def test_report_prints_the_newest_campaign_from_the_default_database(tmp_path: Path) -> None:
    """No arguments: servegate.db in the working directory, its newest campaign, on stdout."""
    build(tmp_path / "servegate.db", name="older", repeats=2, requests=10)
    build(tmp_path / "servegate.db", name="newest", repeats=2, requests=10)
    out = _servegate("report", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "newest: output throughput" in out.stdout
    assert "fast: 1.0" in out.stdout
    assert "older" not in out.stdout


def test_unknown_campaign_exits_2_listing_the_known_ones(tmp_path: Path) -> None:
    """A name not in the database is a usage error that lists what is there."""
    build(tmp_path / "runs.db", name="fusion", repeats=1, requests=5)
    out = _servegate("report", "--db", "runs.db", "fusoin", cwd=tmp_path)
    assert out.returncode == 2
    assert out.stderr.strip() == (
        "Error: no campaign 'fusoin' in runs.db; known campaigns: fusion."
    )
    assert out.stdout == ""


def test_missing_database_exits_2_and_creates_nothing(tmp_path: Path) -> None:
    """Reporting from a file that does not exist never creates an empty database."""
    out = _servegate("report", cwd=tmp_path)
    assert out.returncode == 2
    assert "no database at servegate.db" in out.stderr
    assert list(tmp_path.iterdir()) == []


def test_exports_go_to_files_and_one_may_go_to_stdout(tmp_path: Path) -> None:
    """--markdown prints markdown only; JSON, CSV and HTML land in their files."""
    build(tmp_path / "servegate.db", repeats=2, requests=10)
    out = _servegate(
        "report",
        "--markdown",
        "--json-file",
        "r.json",
        "--csv-file",
        "r.csv",
        "--html-file",
        "r.html",
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("# Campaign `demo`")
    assert "┃" not in out.stdout  # the terminal table stays out of the markdown
    assert json.loads((tmp_path / "r.json").read_text())["schema"] == "servegate.report/1"
    assert (tmp_path / "r.csv").read_text().startswith("campaign,variant,status,load,metric")
    assert (tmp_path / "r.html").read_text().startswith("<!DOCTYPE html>")
    assert "wrote r.html" in out.stderr


def test_two_exports_to_stdout_is_a_usage_error(tmp_path: Path) -> None:
    """Only one export can take stdout."""
    build(tmp_path / "servegate.db", repeats=1, requests=5)
    out = _servegate("report", "--json", "--csv", cwd=tmp_path)
    assert out.returncode == 2
    assert "only one output can go to stdout" in out.stderr


def test_check_takes_one_format_on_stdout_too(tmp_path: Path) -> None:
    """servegate check: --json and --markdown together are a usage error; --markdown alone
    prints the markdown summary only, and --json-file writes the result beside it."""
    build(tmp_path / "servegate.db", repeats=1, requests=5)
    both = _servegate("check", "--json", "--markdown", cwd=tmp_path)
    assert both.returncode == 2
    assert "only one output can go to stdout, not --json and --markdown" in both.stderr
    one = _servegate("check", "--markdown", "--json-file", "c.json", cwd=tmp_path)
    assert one.returncode in (0, 1), one.stderr
    assert one.stdout.startswith("#") and "┃" not in one.stdout
    assert json.loads((tmp_path / "c.json").read_text())["schema"].startswith("servegate.check")


def test_html_without_plotly_exits_2_naming_the_extra(tmp_path: Path) -> None:
    """With plotly hidden, --html-file fails before any work and names pip install."""
    build(tmp_path / "servegate.db", repeats=1, requests=5)
    hide = tmp_path / "hide"
    hide.mkdir()
    (hide / "sitecustomize.py").write_text(
        "import sys\nsys.modules['plotly'] = None\nsys.modules['plotly.graph_objects'] = None\n"
    )
    out = _servegate(
        "report", "--html-file", "r.html", cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(hide)}
    )
    assert out.returncode == 2
    assert "pip install 'servegate[html]'" in out.stderr
    assert out.stdout == ""
    assert not (tmp_path / "r.html").exists()


def test_a_database_from_a_newer_version_is_refused(tmp_path: Path) -> None:
    """Exit 2 with a message; the file keeps its version."""
    db = tmp_path / "servegate.db"
    build(db, repeats=1, requests=5)
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA user_version = 42")
    conn.close()
    out = _servegate("report", cwd=tmp_path)
    assert out.returncode == 2
    assert "newer servegate" in out.stderr
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 42
    finally:
        conn.close()


def _on_a_terminal(cwd: Path, env: dict[str, str], *, columns: int = 160) -> str:
    """Run ``servegate report`` with stdout on a pseudo-terminal ``columns`` wide; return
    what it printed."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "servegate", "report"],
        stdout=follower,
        stderr=subprocess.DEVNULL,
        cwd=cwd,
        env={**env, "COLUMNS": str(columns), "TERM": "xterm-256color"},
    )
    os.close(follower)  # the child holds the only copy: reading ends when it exits
    chunks = []
    try:
        while True:
            try:
                data = os.read(leader, 65536)
            except OSError:  # EIO: the terminal's other side is closed
                break
            if not data:
                break
            chunks.append(data)
    finally:
        os.close(leader)
        assert proc.wait(timeout=120) == 0
    return b"".join(chunks).decode()


def test_colour_on_a_terminal_and_none_with_no_color(tmp_path: Path) -> None:
    """On a terminal the calls are coloured; NO_COLOR turns colour off."""
    build(tmp_path / "servegate.db", repeats=2, requests=10)
    env = {k: v for k, v in os.environ.items() if k not in {"NO_COLOR", "FORCE_COLOR"}}
    coloured = _on_a_terminal(tmp_path, env)
    plain = _on_a_terminal(tmp_path, {**env, "NO_COLOR": "1"})
    assert "\x1b[32m" in coloured  # green: a better variant
    assert "fast: 1.0" in plain
    assert "\x1b[32m" not in plain


def test_at_80_columns_no_status_is_cut_and_hints_stand_whole(tmp_path: Path) -> None:
    """On a terminal 80 columns wide, no line of the tables is wider, each status stands
    whole in its cell (CRASH (oom)), every load point is shown, and the crash's hint is
    on a line of its own, whole, below the tables."""
    build(tmp_path / "servegate.db", repeats=2, requests=10)
    env = {k: v for k, v in os.environ.items() if k != "FORCE_COLOR"}
    shown = _on_a_terminal(tmp_path, {**env, "NO_COLOR": "1"}, columns=80)
    lines = re.sub(r"\x1b\[[0-9;]*m", "", shown).splitlines()  # bold and dim stay
    tables = [line for line in lines if line[:1] in set("┏┃┡│├└")]
    assert tables and max(len(line) for line in tables) <= 80, "\n".join(tables)
    assert any(re.match(r"│ oom +│ CRASH \(oom\) +│", line) for line in tables), tables
    heads = " ".join(line for line in tables if line.startswith("┃"))
    assert all(f" {load} " in heads for load in ("c=1", "c=4", "c=16")), heads
    hint = "lower --mem-fraction-static or batch size"
    assert f"oom: did not start: CRASH: CUDA out of memory (oom) - {hint}" in lines
    assert not any(hint in line for line in tables)


def _small_change(db: Path) -> None:
    """A campaign where 'tweak' is +0.6 % over the baseline, clear of noise."""
    from tests.report.starts import Campaign

    from servegate.store import Store

    with Store.open(db) as store:
        c = Campaign(store)
        c.measured("baseline", [[100.0, 100.02], [100.01, 99.99], [100.0, 100.01]])
        c.measured("tweak", [[100.6, 100.61], [100.59, 100.6], [100.62, 100.6]])


def test_min_effect_sets_the_smallest_change_called(tmp_path: Path) -> None:
    """+0.6 %: no meaningful difference by default (1 %), better with --min-effect 0.5%."""
    _small_change(tmp_path / "servegate.db")
    default = _servegate("report", cwd=tmp_path)
    lenient = _servegate("report", "--min-effect", "0.5%", "--json", cwd=tmp_path)
    assert default.returncode == 0, default.stderr
    assert "at c=4 (no meaningful difference)" in default.stdout
    doc = json.loads(lenient.stdout)
    assert doc["method"]["min_effect"] == 0.005
    assert {c["call"] for c in doc["comparisons"] if c["metric"] == "output_throughput"} == {
        "better"
    }


def test_a_bad_min_effect_exits_2_naming_the_fix(tmp_path: Path) -> None:
    """--min-effect must be a percentage from 0 to 100; nothing is read or written."""
    _small_change(tmp_path / "servegate.db")
    for value in ("fast", "-1", "150%"):
        out = _servegate("report", "--min-effect", value, cwd=tmp_path)
        assert out.returncode == 2
        assert out.stderr.strip() == (
            f"Error: --min-effect {value}: give a percentage from 0 to 100, e.g. --min-effect 2%."
        )
        assert out.stdout == ""


@pytest.mark.parametrize(
    ("command", "flag"),
    [
        ("report", "--html-file"),
        ("report", "--markdown-file"),
        ("report", "--json-file"),
        ("check", "--markdown-file"),
        ("check", "--json-file"),
    ],
)
def test_an_output_file_in_a_missing_folder_fails_before_anything_is_printed(
    tmp_path: Path, command: str, flag: str
) -> None:
    """--X-file nodir/FILE: one sentence naming the flag and the folder, exit 2, and
    nothing on stdout (the table is not printed first) nor written."""
    build(tmp_path / "servegate.db", repeats=2, requests=10)
    out = _servegate(command, flag, "nodir/out.x", cwd=tmp_path)
    assert (out.returncode, out.stdout) == (2, "")
    assert out.stderr == (
        f"Error: {flag} nodir/out.x: the folder nodir does not exist; create it or choose "
        "another path.\n"
    )
    assert [path.name for path in tmp_path.iterdir()] == ["servegate.db"]
