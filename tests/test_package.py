"""The package's public face: exports, entry points, help text."""

from __future__ import annotations

import subprocess
import sys

import servegate
from servegate.cli import COMMANDS


def test_all_is_sorted_and_importable() -> None:
    """__all__ is sorted and every name in it exists."""
    assert list(servegate.__all__) == sorted(servegate.__all__)
    for name in servegate.__all__:
        assert hasattr(servegate, name), name


def test_every_command_has_help_with_an_example() -> None:
    """Each command's --help exits 0 and ends with a runnable example."""
    for name in COMMANDS:
        out = subprocess.run(
            [sys.executable, "-m", "servegate", name, "--help"],
            capture_output=True,
            text=True,
            check=False,
        )
        assert out.returncode == 0, (name, out.stderr)
        assert "Example" in out.stdout, name
        assert "servegate " + name in out.stdout, name


def test_unknown_command_exits_2() -> None:
    """An unknown command is a usage error: exit 2."""
    out = subprocess.run(
        [sys.executable, "-m", "servegate", "no-such-command"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 2
