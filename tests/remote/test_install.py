"""``servegate remote install`` and the version check of every connection."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from tests.remote.sshd import EMPTY_ALIAS, OLD_ALIAS, OLD_VERSION, Remote

from servegate._version import __version__
from servegate.remote.client import RemoteVersionError, connect
from servegate.remote.codec import PROTOCOL
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
    """The venv on the host runs the build that was installed; a second install copies
    only servegate and pip (the dependencies there are the same versions), and the host
    then runs the second install's build."""
    first = hello_of(host)
    assert (first["event"], first["version"]) == ("hello", __version__)
    assert first["build"] == host.installed_build
    again = servegate(host, "remote", "install", host.url, "--json")
    assert again.returncode == 0, again.stderr
    done = json.loads(again.stdout)
    assert sorted(name.split("-")[0] for name in done["copied"]) == ["pip", "servegate"]
    assert hello_of(host)["build"] == done["build"]


def hello_of(host: Remote) -> dict[str, str]:
    """The first line the agent of the host's venv prints."""
    hello = subprocess.run(
        [host.python, "-m", "servegate.remote.agent"],
        input="",
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return dict(json.loads(hello.stdout.splitlines()[0]))


def test_missing_servegate_names_the_install_command(host: Remote) -> None:
    """A host without servegate: exit 2, and the one command that fixes it."""
    with pytest.raises(RemoteVersionError) as raised:
        connect(parse_host(EMPTY_ALIAS))
    assert raised.value.exit_code == 2
    assert str(raised.value) == (
        f"servegate is not installed on {EMPTY_ALIAS}: run servegate remote install {EMPTY_ALIAS}."
    )


def test_an_unknown_host_key_is_exit_2_with_its_fingerprint(host: Remote) -> None:
    """Never accepted silently: exit 2, the host's fingerprint, how to accept it; the
    known_hosts file is left as it was."""
    listed = subprocess.run(
        ["ssh-keygen", "-l", "-f", str(host.host_key_pub)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    fingerprint = listed[1]
    assert fingerprint.startswith("SHA256:")
    done = subprocess.run(
        [sys.executable, "-m", "servegate", "remote", "install", host.url],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=host.env(SERVEGATE_SSH_CONFIG=str(host.unknown_config)),
    )
    assert done.returncode == 2, done.stderr
    assert f"the host key of {host.url} is not known (ssh-ed25519 key {fingerprint})" in done.stderr
    assert f"ssh -p {host.port} {host.user}@127.0.0.1 true (answer yes)" in done.stderr
    assert (host.folder / "empty_known_hosts").read_text() == ""


def test_a_python_that_does_not_run_there_names_python(host: Remote) -> None:
    """--python naming nothing on the host: exit 2, one sentence naming --python."""
    done = servegate(host, "remote", "install", host.alias, "--python", "no-such-python3")
    assert done.returncode == 2, done.stderr
    assert "no-such-python3 did not run on sgtest (" in done.stderr
    minor = f"{sys.version_info.major}.{sys.version_info.minor}"
    assert done.stderr.rstrip().endswith(f"pass --python with the path of a Python {minor} there.")


def test_another_version_there_names_the_install_command(host: Remote) -> None:
    """A host whose servegate is another version: exit 2, both versions, the fix."""
    with pytest.raises(RemoteVersionError) as raised:
        connect(parse_host(OLD_ALIAS))
    assert raised.value.exit_code == 2
    assert str(raised.value) == (
        f"{OLD_ALIAS} runs servegate {OLD_VERSION} (an older protocol), this is {__version__} "
        f"(protocol {PROTOCOL}): run servegate remote install {OLD_ALIAS}."
    )
