"""A hostile or broken host: whatever it sends is data, never code, and ends in one
sentence (exit 2); a login banner is skipped with a warning; a hello that never comes is
waited for a bounded time; a full disk there is said as such."""

from __future__ import annotations

import base64
import contextlib
import os
import pickle
import shutil
import struct
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.campaign.helpers import write_campaign
from tests.remote.fake import fake_dir, fake_host, hello, servegate
from tests.remote.sshd import Remote

from servegate.remote import parse_host
from servegate.remote.client import Output, RemoteProtocolError, fetch, run_cli

# a request is read, then these lines answered (the hello first, for every connection)
ANSWER = "echo '{hello}'\nread request || exit 0\n{lines}\n"


def answer(*lines: str, first: str | None = None) -> str:
    said = "\n".join(f"echo '{line}'" for line in lines)
    return ANSWER.format(hello=first or hello(), lines=said)


def one_sentence(stderr: str) -> str:
    """The error line of a command that failed in one sentence (and nothing else)."""
    assert "Traceback" not in stderr, stderr
    errors = [line for line in stderr.splitlines() if line.startswith("Error: ")]
    assert len(errors) == 1, stderr
    return errors[0]


@pytest.mark.parametrize(
    ("line", "said"),
    [
        ('{"event":"exit","code":"zero"}', "field 'code' of event 'exit' must be an integer"),
        ("this is not JSON", "a line that is not JSON"),
        ('{"event":"run_job","id":"x"}', "an unknown event 'run_job'"),
        ('{"event":"out","text":"hi","more":1}', "event 'out' has an unknown field 'more'"),
    ],
)
def test_a_line_that_is_not_a_frame_is_exit_2_in_one_sentence(
    host: Remote, monkeypatch: pytest.MonkeyPatch, line: str, said: str
) -> None:
    """Whatever the agent sends after its hello, a frame it is not ends the command with
    exit 2 and one sentence that names the line's fault and the install command."""
    with fake_host(host, monkeypatch, answer(line)) as alias:
        done = servegate("ps", "--host", alias)
    assert done.returncode == 2, done.stderr
    error = one_sentence(done.stderr)
    assert said in error
    assert error.endswith(f"run servegate remote install {alias} (or check what runs there).")


def test_an_agent_of_another_protocol_names_the_install_command(
    host: Remote, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An older agent (this version, but a hello without a protocol): exit 2 naming
    servegate remote install HOST; nothing it says after its hello is read."""
    script = answer('{"event":"exit","code":0}', first=hello(protocol=None))
    with fake_host(host, monkeypatch, script) as alias:
        done = servegate("ps", "--host", alias)
    assert done.returncode == 2, done.stderr
    error = one_sentence(done.stderr)
    assert "(an older protocol)" in error
    assert error.endswith(f"run servegate remote install {alias}.")


def test_a_pickled_frame_from_the_host_is_never_run(
    host: Remote, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A host that answers a campaign's start with a pickle that would run a command here
    (as the frames of before were read): nothing runs, exit 2 in one sentence."""
    stamp = Path(tempfile.mkdtemp(prefix="servegate-pwned-")) / "ran"
    try:
        evil = pickle.dumps(_Run(f"touch {stamp}"))
        data = base64.b64encode(struct.pack("!I", len(evil)) + evil).decode()
        script = answer(f'{{"event":"frame","data":"{data}"}}', '{"event":"exit","code":0}')
        with fake_host(host, monkeypatch, script) as alias:
            variants = '[[variant]]\nname = "baseline"\n'
            path = write_campaign(tmp_path, variants, name="pwn", server_extra=f'host = "{alias}"')
            done = servegate("run", str(path), "--db", str(tmp_path / "c.db"))
        assert not stamp.exists(), "the host's pickle ran here"
        assert done.returncode == 2, done.stderr
        assert "an unknown event 'frame'" in one_sentence(done.stderr)
    finally:
        shutil.rmtree(stamp.parent, ignore_errors=True)


class _Run:
    """Unpickled, it runs a command (what a hostile host's frame did)."""

    def __init__(self, command: str) -> None:
        self.command = command

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return os.system, (self.command,)


def test_a_log_name_that_is_no_file_name_is_refused(
    host: Remote, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A host that sends a server log named '..' (or a path): one sentence, nothing
    written."""
    chunk = '{"event":"file","name":"..","first":true,"data":"aGk="}'
    script = answer(chunk, '{"event":"exit","code":0}')
    with (
        fake_host(host, monkeypatch, script) as alias,
        pytest.raises(RemoteProtocolError) as raised,
    ):
        fetch(parse_host(alias), "campaigns/x", {})
    assert "(event 'file': '..' is not a file name)" in str(raised.value)


def test_a_login_banner_is_skipped_with_a_warning(
    host: Remote, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Lines a login shell prints before the hello are skipped: the command works, and a
    warning names the shell's rc files."""
    script = f'echo "Welcome to gpu-1"\necho "last login: today"\nexec {host.python} "$@"\n'
    with fake_host(host, monkeypatch, script) as alias:
        done = servegate("ps", "--host", alias)
    assert done.returncode == 0, done.stderr
    assert "printed 2 line(s) before servegate's output (first: 'Welcome to gpu-1')" in (
        done.stderr
    )
    assert "~/.bashrc" in done.stderr


def test_the_library_says_nothing_of_a_banner_its_caller_hears_it(
    host: Remote, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """The remote client prints nothing itself: without a ``warn`` the banner's warning
    is dropped (stderr stays empty), with one it gets the sentence the CLI shows."""
    script = f'echo "Welcome to gpu-1"\nexec {host.python} "$@"\n'
    said: list[str] = []
    heard: list[str] = []
    with fake_host(host, monkeypatch, script) as alias:
        target = parse_host(alias)
        silent = Output(out=said.append, err=said.append)
        assert run_cli(target, "ps", [], output=silent) == 0
        assert capfd.readouterr().err == ""
        told = Output(out=said.append, err=said.append, warn=heard.append)
        assert run_cli(target, "ps", [], output=told) == 0
    assert len(heard) == 1
    assert heard[0].startswith(f"the login shell on {alias} printed 1 line(s) before")
    assert "~/.bashrc" in heard[0]


def test_remote_install_skips_a_banner_instead_of_blaming_python(host: Remote) -> None:
    """Lines printed before the host's Python answers (as a login shell's banner is)
    are skipped with a warning: the install goes on, --python is not blamed."""
    folder = fake_dir()
    try:
        python = folder / "python3"
        python.write_text('#!/bin/sh\necho "Welcome to gpu-1"\nexec python3 "$@"\n')
        python.chmod(0o755)
        done = servegate("remote", "install", host.alias, "--python", str(python))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    assert done.returncode == 0, done.stderr
    assert "printed 1 line(s) before servegate's output (first: 'Welcome to gpu-1')" in (
        done.stderr
    )
    assert "--python" not in done.stderr


def test_a_banner_without_end_is_exit_2_naming_the_rc_files(
    host: Remote, monkeypatch: pytest.MonkeyPatch
) -> None:
    """More than 64 lines before any hello: exit 2, the login shell named, not the
    install."""
    script = 'i=0\nwhile [ $i -lt 100 ]; do echo "motd line $i"; i=$((i+1)); done\n'
    with fake_host(host, monkeypatch, script) as alias:
        done = servegate("ps", "--host", alias)
    assert done.returncode == 2, done.stderr
    error = one_sentence(done.stderr)
    assert "the login shell on sgtest-fake printed more than 64 lines" in error
    assert "~/.bashrc" in error and "remote install" not in error


def test_a_hello_that_never_comes_is_waited_for_a_bounded_time(
    host: Remote, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A host whose agent never says hello: exit 2 after SERVEGATE_SSH_HELLO_S, naming
    that variable; nothing is left running on either side."""
    monkeypatch.setenv("SERVEGATE_SSH_HELLO_S", "2")
    with fake_host(host, monkeypatch, "exec cat > /dev/null\n") as alias:
        done = servegate("ps", "--host", alias)
    assert done.returncode == 2, done.stderr
    error = one_sentence(done.stderr)
    assert "did not answer within 2s" in error and "SERVEGATE_SSH_HELLO_S" in error


@contextlib.contextmanager
def full_disk(size: str) -> Iterator[Path]:
    """A tmpfs of ``size``, the remote user's to write (root only)."""
    if os.geteuid() != 0:
        pytest.skip("a small filesystem needs root (mount -t tmpfs)")
    folder = fake_dir()
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0777", "tmpfs", str(folder)], check=True
    )
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)
        shutil.rmtree(folder, ignore_errors=True)


def _fill(folder: Path) -> None:
    """Fill the filesystem of ``folder`` to its last byte."""
    with contextlib.suppress(OSError), open(folder / "filler", "wb") as stream:
        while True:
            stream.write(b"\0" * (1 << 16))
            stream.flush()


def test_a_full_disk_at_the_job_files_is_said_as_such(
    host: Remote, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No room on the host for a job's files: exit 2, one sentence naming the folder and
    the fix; no reconnecting, no 'runner ended early'."""
    with full_disk("256k") as folder:
        (folder / "jobs").mkdir()
        (folder / "jobs").chmod(0o777)
        script = f'exec {host.python} "$@"\n'
        with fake_host(host, monkeypatch, script, folder=folder) as alias:
            _fill(folder)
            done = servegate("launch", "--host", alias, "--", "true")
    assert done.returncode == 2, done.stderr
    error = one_sentence(done.stderr)
    assert f"no space left for servegate's job files in {folder}/jobs" in error
    assert "reconnecting" not in done.stderr and "ended early" not in done.stderr


def test_a_full_disk_during_install_leaves_no_copy(
    host: Remote, monkeypatch: pytest.MonkeyPatch
) -> None:
    """remote install on a host without room for the wheels: exit 2 naming the space
    it needs, and nothing of the copy left there (the disk is as free as before)."""
    with full_disk("2m") as folder:
        (folder / "venv").mkdir()
        with fake_host(host, monkeypatch, "exit 1\n", folder=folder) as alias:
            shutil.rmtree(folder / "venv")
            free = shutil.disk_usage(folder).free
            done = servegate("remote", "install", alias)
            left = sorted(p.name for p in folder.iterdir())
            after = shutil.disk_usage(folder).free
    assert done.returncode == 2, done.stderr
    error = one_sentence(done.stderr)
    assert f"no space left on {alias} in {folder}" in error and "df -h" in error
    assert "wheels" not in left and after == free


@pytest.mark.parametrize("kind", ["long", "file"])
def test_a_bad_control_dir_names_its_variable(
    host: Remote, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, kind: str
) -> None:
    """SERVEGATE_SSH_CONTROL_DIR too long for a socket, or a file: exit 2 naming it."""
    long = Path(tempfile.gettempdir()) / f"sgc-long-{uuid.uuid4().hex}-too-long"  # over 49 bytes
    if kind == "long":
        value = str(long)
    else:
        value = str(tmp_path / "a-file")
        Path(value).write_text("")
    with monkeypatch.context() as patched:
        patched.setenv("SERVEGATE_SSH_CONTROL_DIR", value)
        done = servegate("ps", "--host", host.alias)
    assert done.returncode == 2, done.stderr
    assert "SERVEGATE_SSH_CONTROL_DIR" in one_sentence(done.stderr)
    assert not long.exists()
