"""``servegate remote install`` and the version check of every connection."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from tests.remote.sshd import EMPTY_ALIAS, Remote

from servegate._version import __version__
from servegate.remote.build import build_id
from servegate.remote.client import RemoteVersionError, connect
from servegate.remote.hosts import parse_host


def servegate(
    remote: Remote, *args: str, timeout: float = 120.0
) -> subprocess.CompletedProcess[str]:
    """``python -m servegate ARGS`` with the test's ssh config."""
    return subprocess.run(
        [sys.executable, "-m", "servegate", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env=remote.env(),
    )


def test_install_puts_this_build_there(host: Remote) -> None:
    """The venv on the host runs this very build; a second install copies only servegate
    and pip (the dependencies there are the same versions)."""
    hello = subprocess.run(
        [host.python, "-m", "servegate.remote.agent"],
        input="",
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    first = json.loads(hello.stdout.splitlines()[0])
    assert (first["event"], first["version"], first["build"]) == ("hello", __version__, build_id())
    again = servegate(host, "remote", "install", host.url, "--json")
    assert again.returncode == 0, again.stderr
    done = json.loads(again.stdout)
    assert done["build"] == build_id()
    assert sorted(name.split("-")[0] for name in done["copied"]) == ["pip", "servegate"]


def test_missing_servegate_names_the_install_command(host: Remote) -> None:
    """A host without servegate: exit 2, and the one command that fixes it."""
    with pytest.raises(RemoteVersionError) as raised:
        connect(parse_host(EMPTY_ALIAS))
    assert raised.value.exit_code == 2
    assert str(raised.value) == (
        f"servegate is not installed on {EMPTY_ALIAS}: run servegate remote install {EMPTY_ALIAS}."
    )
