"""A real OpenSSH server on 127.0.0.1, with servegate installed behind it.

Session-scoped: ``sshd`` (Debian's openssh-server) on a free port with generated host
and user keys, a known_hosts and an ssh config of its own (the real ~/.ssh is never
read); as root it logs in an unprivileged user with a home of its own
(``servegate-test``, created once), otherwise the current user. ``servegate remote
install`` installs servegate there once per session.

Every test then runs with ``SERVEGATE_SSH_CONFIG`` pointing at that config, and is
checked afterwards on the remote side too: the control masters are closed, and no
process of the test user may be left (as root); the remote sessions carry this test
session's marker (``SetEnv``), so the suite's own leak check sees their processes too.
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest
from tests.conftest import MARKER, MARKER_VAR, free_port

SSHD = "/usr/sbin/sshd"
TEST_USER = "servegate-test"
ALIAS = "sgtest"  # a Host alias of the test's ssh config
EMPTY_ALIAS = "sgtest-empty"  # the same host, with no servegate installed


@dataclass(frozen=True)
class Remote:
    """The test's SSH host: how to reach it, and where servegate lives there."""

    alias: str
    url: str  # ssh://user@127.0.0.1:PORT
    port: int
    user: str
    uid: int
    folder: Path  # keys, configs, logs
    config: Path  # the ssh config (SERVEGATE_SSH_CONFIG)
    unknown_config: Path  # the same with an empty known_hosts
    python: str  # the venv's python on the host (servegate importable)
    host_key_pub: Path
    daemon_pid: int

    def env(self, **extra: str) -> dict[str, str]:
        """This process's environment for a servegate command that talks to the host."""
        return {**os.environ, "SERVEGATE_SSH_CONFIG": str(self.config), **extra}

    def sessions(self) -> list[psutil.Process]:
        """The sshd processes serving connections now (children of the daemon)."""
        try:
            return psutil.Process(self.daemon_pid).children()
        except psutil.Error:
            return []


def _user() -> tuple[str, int, Path]:
    """The remote user: servegate-test (created once) as root, else the current user."""
    if os.geteuid() != 0:
        entry = pwd.getpwuid(os.geteuid())
        return entry.pw_name, entry.pw_uid, Path(entry.pw_dir)
    try:
        entry = pwd.getpwnam(TEST_USER)
    except KeyError:
        subprocess.run(
            ["useradd", "--create-home", "--shell", "/bin/sh", "--password", "*", TEST_USER],
            check=True,
            capture_output=True,
        )
        entry = pwd.getpwnam(TEST_USER)
    return entry.pw_name, entry.pw_uid, Path(entry.pw_dir)


def _keygen(path: Path) -> None:
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)],
        check=True,
        capture_output=True,
    )


def _chown_tree(path: Path, uid: int) -> None:
    for root, dirs, files in os.walk(path):
        for name in [*dirs, *files]:
            os.chown(os.path.join(root, name), uid, uid)
    os.chown(path, uid, uid)


def _wait_listening(port: int, deadline_s: float) -> None:
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        for conn in psutil.net_connections("tcp4"):
            if conn.laddr and conn.laddr.port == port and conn.status == psutil.CONN_LISTEN:
                return
        time.sleep(0.05)
    raise RuntimeError(f"sshd did not listen on {port}")


@pytest.fixture(scope="session")
def remote(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Remote]:
    """sshd on 127.0.0.1 with servegate installed for the remote user."""
    if not os.access(SSHD, os.X_OK):
        pytest.fail(f"{SSHD} is missing: apt-get install openssh-server (.ci/run does)")
    folder = tmp_path_factory.mktemp("ssh", numbered=True)
    user, uid, home = _user()
    port = free_port()
    _keygen(folder / "host_key")
    _keygen(folder / "user_key")
    if os.geteuid() == 0:
        dot_ssh = home / ".ssh"
        dot_ssh.mkdir(mode=0o700, exist_ok=True)
        keys = dot_ssh / "authorized_keys"
        shutil.copy(folder / "user_key.pub", keys)
        keys.chmod(0o600)
        _chown_tree(dot_ssh, uid)
        remote_dir = home / ".servegate"
        remote_env = f"SERVEGATE_STATE_DIR={home}/.local/state/servegate-test"
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
    else:
        keys = folder / "authorized_keys"
        shutil.copy(folder / "user_key.pub", keys)
        remote_dir = folder / "remote"
        remote_env = f"SERVEGATE_REMOTE_DIR={remote_dir} SERVEGATE_STATE_DIR={folder}/state"
    (folder / "sshd_config").write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {folder}/host_key\n"
        f"PidFile {folder}/sshd.pid\nAuthorizedKeysFile {keys}\n"
        "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\n"
        f"StrictModes {'yes' if os.geteuid() == 0 else 'no'}\nAllowUsers {user}\n"
        "AcceptEnv SERVEGATE_*\nMaxSessions 64\nMaxStartups 64\nPrintMotd no\n"
        "PermitUserEnvironment no\n"
    )
    host_key = (folder / "host_key.pub").read_text().split()
    (folder / "known_hosts").write_text(f"[127.0.0.1]:{port} {host_key[0]} {host_key[1]}\n")
    (folder / "empty_known_hosts").write_text("")
    common = (
        f"  HostName 127.0.0.1\n  Port {port}\n  User {user}\n"
        f"  IdentityFile {folder}/user_key\n  IdentitiesOnly yes\n  IdentityAgent none\n"
        "  GlobalKnownHostsFile /dev/null\n"
        f"  SetEnv {MARKER_VAR}={MARKER} {remote_env}\n"
    )
    empty_env = f"SERVEGATE_REMOTE_DIR={folder}/nothing-here"
    for name, known in (("ssh_config", "known_hosts"), ("unknown_config", "empty_known_hosts")):
        (folder / name).write_text(
            f"Host {EMPTY_ALIAS}\n{common.replace('SetEnv ', f'SetEnv {empty_env} ')}"
            f"  UserKnownHostsFile {folder}/{known}\n\n"
            f"Host {ALIAS} 127.0.0.1\n{common}  UserKnownHostsFile {folder}/{known}\n"
        )
    clean_env = {k: v for k, v in os.environ.items() if k != MARKER_VAR}
    subprocess.run(
        [SSHD, "-f", str(folder / "sshd_config"), "-E", str(folder / "sshd.log")],
        check=True,
        env=clean_env,  # the daemon outlives each test: it must not carry the marker
    )
    _wait_listening(port, 10.0)
    daemon_pid = int((folder / "sshd.pid").read_text())
    config = folder / "ssh_config"
    env = {**os.environ, "SERVEGATE_SSH_CONFIG": str(config)}
    env["SERVEGATE_SSH_CONTROL_DIR"] = str(folder / "c")
    try:
        done = subprocess.run(
            [sys.executable, "-m", "servegate", "remote", "install", ALIAS, "--json"],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        installed = json.loads(done.stdout)
        _close_masters(env)
        yield Remote(
            alias=ALIAS,
            url=f"ssh://{user}@127.0.0.1:{port}",
            port=port,
            user=user,
            uid=uid,
            folder=folder,
            config=config,
            unknown_config=folder / "unknown_config",
            python=f"{installed['path']}/bin/python",
            host_key_pub=folder / "host_key.pub",
            daemon_pid=daemon_pid,
        )
    finally:
        _close_masters(env)
        with contextlib.suppress(OSError):
            os.kill(daemon_pid, signal.SIGTERM)
        psutil.wait_procs([p for p in _pids([daemon_pid])], timeout=5)


def _pids(pids: list[int]) -> list[psutil.Process]:
    found = []
    for pid in pids:
        with contextlib.suppress(psutil.Error):
            found.append(psutil.Process(pid))
    return found


def _close_masters(env: dict[str, str]) -> None:
    subprocess.run(
        [sys.executable, "-c", "from servegate.remote.transport import close_masters as c; c()"],
        env=env,
        check=True,
        timeout=30,
    )


def remote_leftovers(remote: Remote, grace_s: float = 5.0) -> list[str]:
    """Processes of the remote user still running (root only: that user is the test's),
    after the control masters are closed and a short grace period."""
    if os.geteuid() != 0:
        return []
    deadline = time.monotonic() + grace_s
    while True:
        alive = []
        for proc in psutil.process_iter(["pid", "uids", "cmdline", "status"]):
            uids = proc.info["uids"]
            if uids is None or uids.real != remote.uid:
                continue
            if proc.info["status"] == psutil.STATUS_ZOMBIE:
                continue
            alive.append(f"{proc.pid} {' '.join(proc.info['cmdline'] or [])[:120]}")
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.05)


@pytest.fixture
def host(remote: Remote, monkeypatch: pytest.MonkeyPatch) -> Iterator[Remote]:
    """The remote host for one test; afterwards nothing of it may run on either side."""
    monkeypatch.setenv("SERVEGATE_SSH_CONFIG", str(remote.config))
    control = tempfile.mkdtemp(prefix="sgc-")  # short: a socket path has ~100 bytes
    monkeypatch.setenv("SERVEGATE_SSH_CONTROL_DIR", control)
    yield remote
    _close_masters({**os.environ})
    shutil.rmtree(control, ignore_errors=True)
    alive = remote_leftovers(remote)
    if alive:
        for line in alive:
            with contextlib.suppress(OSError):
                os.kill(int(line.split()[0]), signal.SIGKILL)
        pytest.fail("processes left running on the remote side:\n" + "\n".join(alive))
