"""A real OpenSSH server on 127.0.0.1 for tests and benchmarks, and the remote side's check.

``start(folder, marker)`` runs ``sshd`` (Debian's openssh-server) on a free port with
generated host and user keys, a known_hosts and an ssh config of its own in ``folder``
(the real ~/.ssh is never read). As root it logs in an unprivileged user made for this
run (``sgt-PID-TICKS-XXXX``: the PID and start, in clock ticks since boot, of the process
that made it, which is the test run), with a home of its own that ``stop`` removes with
the user; otherwise the current user. Two test runs at once (two checkouts, or a
developer's run beside CI's) so share no user, key, home or process. A run killed before
its teardown leaves its user and daemon behind: the next ``start`` on the machine removes
every such user whose run has ended, with its processes and sshd (``reap_users``). The
sessions get ``marker`` in their environment (``SetEnv``), so the processes they start
can be found. As root the venv there is linked from a cache runs share (``venv_cache``).
"""

from __future__ import annotations

import contextlib
import os
import pwd
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import psutil
from tests.remote import venv_cache

from servegate._proc import start_ticks

SSHD = "/usr/sbin/sshd"
USER_PREFIX = "sgt-"  # a test run's own user: sgt-PID-TICKS-XXXX (32 characters at most)
_RUN_USER = re.compile(re.escape(USER_PREFIX) + r"(\d+)-(\d+)-[0-9a-f]{4}")
ALIAS = "sgtest"  # a Host alias of the generated ssh config
EMPTY_ALIAS = "sgtest-empty"  # the same host, where servegate is not installed
OLD_ALIAS = "sgtest-old"  # the same host, where an older servegate answers
OLD_VERSION = "0.0.1"
MARKER_VAR = "SERVEGATE_TEST_MARKER"


@dataclass(frozen=True)
class Remote:
    """The SSH host: how to reach it, and where servegate lives there."""

    alias: str
    url: str  # ssh://user@127.0.0.1:PORT
    port: int
    user: str
    uid: int
    home: Path
    folder: Path  # keys, configs, logs
    config: Path  # the ssh config (SERVEGATE_SSH_CONFIG)
    unknown_config: Path  # the same with an empty known_hosts
    host_key_pub: Path
    daemon_pid: int
    remote_dir: Path  # SERVEGATE_REMOTE_DIR there
    old_dir: Path  # where an older servegate answers (OLD_ALIAS)
    installed_build: str = ""  # the build servegate remote install put there

    @property
    def python(self) -> str:
        """The venv's python on the host (servegate importable), once installed."""
        return str(self.remote_dir / "venv" / "bin" / "python")

    def env(self, **extra: str) -> dict[str, str]:
        """This process's environment for a servegate command that talks to the host."""
        return {**os.environ, "SERVEGATE_SSH_CONFIG": str(self.config), **extra}

    def drop_connections(self) -> None:
        """Kill the sshd processes serving every connection (not the commands they run),
        as a network failure would end them, and wait until they are gone."""
        sessions = self.sessions()
        assert sessions, "no connection to drop"
        for session in reversed(sessions):  # the unprivileged children first
            with contextlib.suppress(psutil.Error):
                session.kill()
        psutil.wait_procs(sessions, timeout=10)

    def sessions(self) -> list[psutil.Process]:
        """The sshd processes serving connections now: the daemon's children (the
        privileged monitors) and theirs that are sshd too (``user@notty``); not the
        commands the sessions run."""
        found = []
        try:
            monitors = psutil.Process(self.daemon_pid).children()
        except psutil.Error:
            return []
        for monitor in monitors:
            found.append(monitor)
            with contextlib.suppress(psutil.Error):
                found += [c for c in monitor.children() if c.name() == "sshd"]
        return found

    def shared_folder(self, name: str) -> Path:
        """A folder both sides can write (scripts, stamps)."""
        path = self.folder.parent / f"{self.folder.name}-{name}"
        path.mkdir(exist_ok=True)
        path.chmod(0o777)
        _traversable(path)
        return path


def _traversable(path: Path) -> None:
    """Let the remote user enter the folders above ``path`` (not list them), up to /tmp."""
    for parent in path.parents:
        if parent in (Path("/tmp"), Path("/")):
            return
        parent.chmod(parent.stat().st_mode | 0o011)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _user() -> tuple[str, int, Path]:
    """The remote user: one made for this run as root (see ``run_user``), else the
    current user."""
    if os.geteuid() != 0:
        entry = pwd.getpwuid(os.geteuid())
        return entry.pw_name, entry.pw_uid, Path(entry.pw_dir)
    reap_users()
    entry = add_user(run_user(os.getpid(), start_ticks(os.getpid())))
    return entry.pw_name, entry.pw_uid, Path(entry.pw_dir)


def add_user(name: str) -> pwd.struct_passwd:
    """A new user ``name`` with a home of its own and no password (keys only)."""
    subprocess.run(
        ["useradd", "--create-home", "--shell", "/bin/sh", "--password", "*", name],
        check=True,
        capture_output=True,
    )
    return pwd.getpwnam(name)


def run_user(pid: int, ticks: int) -> str:
    """A new user name for the run of process ``pid`` that started ``ticks`` clock ticks
    after boot: the owner is in the name, so a killed run's user can be told from a live
    one's by the process table alone."""
    return f"{USER_PREFIX}{pid}-{ticks}-{secrets.token_hex(2)}"


def _owner_alive(pid: int, ticks: int) -> bool:
    try:
        return start_ticks(pid) == ticks and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except (OSError, ValueError, psutil.Error):
        return False


def reap_users() -> list[str]:
    """Remove the test users whose run has ended (killed before its teardown), with their
    processes, homes and sshd daemons; their names. Users of running runs, and every
    other user, are left alone."""
    removed = []
    for entry in pwd.getpwall():
        owner = _RUN_USER.fullmatch(entry.pw_name)
        if owner and not _owner_alive(int(owner[1]), int(owner[2])):
            _stop_daemons_of(entry.pw_name)
            remove_user(entry.pw_name, entry.pw_uid)
            removed.append(entry.pw_name)
    return removed


def _stop_daemons_of(user: str) -> None:
    """Stop the sshd daemons (root's) whose config lets only ``user`` in."""
    found = []
    for proc in psutil.process_iter(["name", "cmdline"]):
        argv = proc.info["cmdline"] or []
        if proc.info["name"] != "sshd" or "-f" not in argv[:-1]:
            continue
        try:
            config = Path(argv[argv.index("-f") + 1]).read_text()
        except OSError:
            continue
        if f"\nAllowUsers {user}\n" in config:
            with contextlib.suppress(psutil.Error):
                proc.terminate()
                found.append(proc)
    wait_ended(found, 10.0)


def ended(proc: psutil.Process) -> bool:
    """Whether ``proc`` has ended: gone, or a zombie that its parent (init, for a daemon
    or an orphan) has yet to reap."""
    try:
        return proc.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True
    except psutil.Error:
        return False


def wait_ended(procs: list[psutil.Process], timeout_s: float) -> None:
    """Wait up to ``timeout_s`` until every one of ``procs`` has ended."""
    deadline = time.monotonic() + timeout_s
    while not all(ended(proc) for proc in procs) and time.monotonic() < deadline:
        time.sleep(0.02)


def remove_user(name: str, uid: int) -> None:
    """Kill every process of the user ``name``, then remove it and its home (``userdel``);
    a user a concurrent reaper removed first is fine."""
    deadline = time.monotonic() + 30.0
    while True:
        procs = []
        for proc in psutil.process_iter(["uids"]):
            uids = proc.info["uids"]
            if uids is not None and uid in (uids.real, uids.effective):
                with contextlib.suppress(psutil.Error):
                    proc.kill()
                    procs.append(proc)
        wait_ended(procs, 10.0)
        done = subprocess.run(
            ["userdel", "--remove", name], capture_output=True, text=True, check=False
        )
        if done.returncode in (0, 6):  # removed; no such user (a concurrent reaper's)
            return
        if time.monotonic() > deadline:  # 8: a process of it still runs (forked meanwhile)
            raise RuntimeError(f"userdel {name} failed ({done.returncode}): {done.stderr}")
        time.sleep(0.1)


def _keygen(path: Path) -> None:
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)],
        check=True,
        capture_output=True,
    )


def _wait_listening(port: int, deadline_s: float) -> None:
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError(f"sshd did not listen on port {port}")


def start(folder: Path, marker: str) -> Remote:
    """Start sshd with everything it needs in ``folder``; see the module's docstring."""
    if not os.access(SSHD, os.X_OK):
        raise RuntimeError(f"{SSHD} is missing: apt-get install openssh-server (.ci/run does)")
    folder.mkdir(parents=True, exist_ok=True)
    user, uid, home = _user()
    try:
        return _serve(folder, marker, user, uid, home)
    except BaseException:
        if _RUN_USER.fullmatch(user):
            remove_user(user, uid)
        raise


def _serve(folder: Path, marker: str, user: str, uid: int, home: Path) -> Remote:
    port = free_port()
    _keygen(folder / "host_key")
    _keygen(folder / "user_key")
    root = os.geteuid() == 0
    if root:
        dot_ssh = home / ".ssh"
        dot_ssh.mkdir(mode=0o700, exist_ok=True)
        keys = dot_ssh / "authorized_keys"
        shutil.copy(folder / "user_key.pub", keys)
        keys.chmod(0o600)
        for path in (dot_ssh, keys):
            os.chown(path, uid, uid)
        remote_dir = home / ".servegate"
        state = home / ".local" / "state" / "servegate-state"
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
    else:
        keys = folder / "authorized_keys"
        shutil.copy(folder / "user_key.pub", keys)
        remote_dir = folder / "remote"
        state = folder / "remote-state"
    (folder / "sshd_config").write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {folder}/host_key\n"
        f"PidFile {folder}/sshd.pid\nAuthorizedKeysFile {keys}\n"
        "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\n"
        f"StrictModes {'yes' if root else 'no'}\nAllowUsers {user}\n"
        "AcceptEnv SERVEGATE_*\nMaxSessions 64\nMaxStartups 64\nPrintMotd no\n"
    )
    host_key = (folder / "host_key.pub").read_text().split()
    (folder / "known_hosts").write_text(f"[127.0.0.1]:{port} {host_key[0]} {host_key[1]}\n")
    (folder / "empty_known_hosts").write_text("")
    setenv = (
        f"{MARKER_VAR}={marker} SERVEGATE_REMOTE_DIR={remote_dir} "
        f"SERVEGATE_STATE_DIR={state} SERVEGATE_HISTORY={state}/history.db"
    )
    common = (
        f"  HostName 127.0.0.1\n  Port {port}\n  User {user}\n"
        f"  IdentityFile {folder}/user_key\n  IdentitiesOnly yes\n  IdentityAgent none\n"
        "  GlobalKnownHostsFile /dev/null\n"
    )
    empty = setenv.replace(
        f"SERVEGATE_REMOTE_DIR={remote_dir}", "SERVEGATE_REMOTE_DIR=/nonexistent"
    )
    # a "venv" whose python says hello as an older servegate; outside pytest's folders,
    # whose modes other pytest sessions reset: the remote user must read it
    old = Path(tempfile.mkdtemp(prefix="servegate-old-"))
    (old / "venv" / "bin").mkdir(parents=True)
    fake = old / "venv" / "bin" / "python"
    hello = f'{{"event":"hello","version":"{OLD_VERSION}","build":"0","dir":"{old}"}}'
    fake.write_text(f"#!/bin/sh\necho '{hello}'\n")
    for path in (old, old / "venv", old / "venv" / "bin", fake):
        path.chmod(0o755)
    older = setenv.replace(f"SERVEGATE_REMOTE_DIR={remote_dir}", f"SERVEGATE_REMOTE_DIR={old}")
    for name, known in (("ssh_config", "known_hosts"), ("unknown_config", "empty_known_hosts")):
        (folder / name).write_text(
            f"Host {EMPTY_ALIAS}\n{common}  SetEnv {empty}\n"
            f"  UserKnownHostsFile {folder}/{known}\n\n"
            f"Host {OLD_ALIAS}\n{common}  SetEnv {older}\n"
            f"  UserKnownHostsFile {folder}/{known}\n\n"
            f"Host {ALIAS} 127.0.0.1\n{common}  SetEnv {setenv}\n"
            f"  UserKnownHostsFile {folder}/{known}\n"
        )
    clean_env = {k: v for k, v in os.environ.items() if k != MARKER_VAR}
    subprocess.run(
        [SSHD, "-f", str(folder / "sshd_config"), "-E", str(folder / "sshd.log")],
        check=True,
        env=clean_env,  # the daemon outlives each test: it must not carry the marker
    )
    _wait_listening(port, 10.0)
    pid_file = folder / "sshd.pid"
    deadline = time.monotonic() + 10.0
    while not (pid_file.exists() and pid_file.read_text().strip()):
        if time.monotonic() > deadline:
            raise RuntimeError(f"sshd wrote no {pid_file}")
        time.sleep(0.02)
    return Remote(
        alias=ALIAS,
        url=f"ssh://{user}@127.0.0.1:{port}",
        port=port,
        user=user,
        uid=uid,
        home=home,
        folder=folder,
        config=folder / "ssh_config",
        unknown_config=folder / "unknown_config",
        host_key_pub=folder / "host_key.pub",
        daemon_pid=int(pid_file.read_text()),
        remote_dir=remote_dir,
        old_dir=old,
    )


def stop(remote: Remote) -> None:
    """Stop the daemon (and with it every connection it serves); as root, remove the
    run's user with its processes and home."""
    with contextlib.suppress(OSError):
        os.kill(remote.daemon_pid, signal.SIGTERM)
    with contextlib.suppress(psutil.Error):
        psutil.Process(remote.daemon_pid).wait(timeout=10)
    shutil.rmtree(remote.old_dir, ignore_errors=True)
    if os.geteuid() == 0 and _RUN_USER.fullmatch(remote.user):
        remove_user(remote.user, remote.uid)


def install(remote: Remote, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``servegate remote install ALIAS --json`` from this side; as root, into a venv
    linked from the cache of ``venv_cache``, or into a new one that then joins it."""
    venv = remote.remote_dir / "venv"
    root = os.geteuid() == 0
    linked = root and venv_cache.link(venv, remote.uid)
    done = subprocess.run(
        [sys.executable, "-m", "servegate", "remote", "install", remote.alias, "--json"],
        capture_output=True,
        text=True,
        env={**env, "SERVEGATE_SSH_CONFIG": str(remote.config)},
        timeout=600,
        check=False,
    )
    if root and not linked and done.returncode == 0:
        venv_cache.keep(venv)
    return done


def close_masters(env: dict[str, str]) -> None:
    """End the ssh control masters of ``env``'s control folder."""
    subprocess.run(
        [
            sys.executable,
            "-c",
            "from servegate.remote.transport import close_masters; close_masters()",
        ],
        env=env,
        check=True,
        timeout=30,
    )


def remote_leftovers(remote: Remote, grace_s: float = 5.0) -> list[str]:
    """Processes of the remote user still running after a short grace period (as root
    only: that user is the tests'; otherwise the marker check sees them)."""
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
            with contextlib.suppress(psutil.Error):
                alive.append(
                    f"{proc.pid} (parent {proc.ppid()}) "
                    f"{' '.join(proc.info['cmdline'] or [])[:120]}"
                )
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.05)
