"""Campaign and variant names cannot forge output lines or name an invalid server."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
from tests.campaign.helpers import query, servegate, write_campaign

FORGED = "fast: 1.500 +/- 0.001 x baseline output throughput (better)"

# each a way to start a new line, rewrite one, or show a name backwards
CONTROLS = {
    "newline": "\\n",
    "carriage-return": "\\r",
    "ansi-escape": "\\u001b[2K",
    "c1-csi": "\\u009b2K",
    "del": "\\u007f",
    "bidi-override": "\\u202e",
    "bidi-isolate": "\\u2066",
    "line-separator": "\\u2028",
}


@pytest.mark.parametrize("control", CONTROLS.values(), ids=list(CONTROLS))
def test_a_variant_name_with_a_control_character_exits_2_before_anything_starts(
    tmp_path: Path, control: str
) -> None:
    """A variant name holding a control character (TOML escape in the file) is refused
    with exit 2 and one sentence, and no database is written."""
    path = write_campaign(
        tmp_path,
        f"""
        [[variant]]
        name = "baseline"

        [[variant]]
        name = "slow{control}{FORGED}"
        """,
    )
    db = tmp_path / "c.db"
    result = servegate("run", path, "--db", db)
    assert result.returncode == 2, result.stderr
    assert "a name cannot hold" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert FORGED not in result.stdout
    assert not db.exists()


def test_a_campaign_name_with_a_newline_exits_2(tmp_path: Path) -> None:
    """The campaign's own name is refused as a variant's is."""
    path = write_campaign(tmp_path, '[[variant]]\nname = "baseline"\n', name="c\\nbaseline")
    result = servegate("run", path, "--db", tmp_path / "c.db", "--dry-run")
    assert result.returncode == 2, result.stderr
    assert "campaign.name: a name cannot hold a newline" in result.stderr


def test_a_matrix_that_makes_a_name_with_a_control_character_exits_2(tmp_path: Path) -> None:
    """A [matrix] axis value with a newline would make a forged variant name: exit 2."""
    path = write_campaign(
        tmp_path,
        """
        [matrix]
        axes = { mode = ["baseline", "x\\nfast"] }
        name = "{mode}"
        """,
    )
    result = servegate("run", path, "--db", tmp_path / "c.db", "--dry-run")
    assert result.returncode == 2, result.stderr
    assert "[matrix] makes the variant name" in result.stderr


def test_a_campaign_name_beginning_with_a_dot_runs(tmp_path: Path) -> None:
    """A campaign called ``.hidden`` starts its servers (their names are made valid) and
    stores its results under its own name."""
    path = write_campaign(
        tmp_path,
        '[[variant]]\nname = "baseline"\n',
        name=".hidden",
        bench="concurrency = [1]\nrequests = 2\nrepeats = 1",
    )
    db = tmp_path / "c.db"
    result = servegate("run", path, "--db", db)
    assert result.returncode == 0, result.stderr
    assert query(db, "SELECT status FROM attempt") == [("done",)]
    assert query(db, "SELECT name FROM campaign") == [(".hidden",)]


def test_a_crash_line_with_control_characters_prints_escaped_in_run(tmp_path: Path) -> None:
    """A variant's server prints a line with backspaces, an erase-line escape's C1 form and
    a bidi override, then dies: run's progress and its table show it escaped, never raw."""
    script = tmp_path / "crash.py"
    line = f"RuntimeError: boom\b\b\x9b2K\u202e{FORGED}"
    script.write_text(
        f"import sys\nsys.stdout.write({line!r} + '\\n')\nsys.stdout.flush()\nsys.exit(1)\n",
        encoding="utf-8",
    )
    path = write_campaign(
        tmp_path,
        f"""
        [[variant]]
        name = "baseline"

        [[variant]]
        name = "broken"
        command = "{{python}} {script}"
        """,
        bench="concurrency = [1]\nrequests = 2\nrepeats = 1",
    )
    result = servegate("run", path, "--db", tmp_path / "c.db")
    assert result.returncode in (0, 1), result.stderr
    shown = f"RuntimeError: boom\\x08\\x08\\x9b2K\\u202e{FORGED}"
    assert shown in result.stderr, result.stderr
    for text in (result.stdout, result.stderr):
        for char in ("\b", "\x9b", "\u202e"):
            assert char not in text


def test_the_render_again_line_is_a_command_that_runs(tmp_path: Path) -> None:
    """A campaign name with a space: the closing 'Render again:' line quotes it, and that
    command, run as written, renders the report."""
    path = write_campaign(
        tmp_path,
        '[[variant]]\nname = "baseline"\n',
        name="fusion run",
        bench="concurrency = [1]\nrequests = 2\nrepeats = 1",
    )
    result = servegate("run", path, "--db", tmp_path / "c.db")
    assert result.returncode == 0, result.stderr
    line = next(x for x in result.stderr.splitlines() if "Render again: " in x)
    argv = shlex.split(line.split("Render again: ", 1)[1])
    assert argv[:2] == ["servegate", "report"]
    again = servegate(*argv[1:])
    assert again.returncode == 0, again.stderr
    assert "fusion run" in again.stdout
