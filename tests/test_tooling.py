"""The checks of scripts/check and CI (.ci/run): the same commands, on folders that exist."""

from __future__ import annotations

import shlex
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOOLS = ("ruff", "mypy")


def checks(script: str) -> list[list[str]]:
    """The ruff and mypy command lines of a shell script of the repository."""
    lines = (ROOT / script).read_text().splitlines()
    return [shlex.split(line) for line in lines if line.split(" ", 1)[0] in TOOLS]


def test_scripts_check_runs_the_lint_and_type_checks_ci_runs() -> None:
    """scripts/check runs CI's ruff and mypy commands, each one, in CI's order."""
    assert checks(".ci/run") == checks("scripts/check")
    assert ["mypy", "src", "tests"] in checks(".ci/run")


def test_every_folder_a_check_names_exists() -> None:
    """No check names a folder that is gone (scripts/check linted bench/, now benchmarks/)."""
    for script in ("scripts/check", ".ci/run"):
        for command in checks(script):
            paths = [arg for arg in command[1:] if not arg.startswith("-")]
            paths = [arg for arg in paths if arg not in ("check", "format")]
            missing = [arg for arg in paths if not (ROOT / arg).is_dir()]
            assert [] == missing, (script, command)
