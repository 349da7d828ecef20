"""SSH through the system OpenSSH client, one control master per host.

Every connection is ``ssh`` with the user's own configuration (``~/.ssh/config``, the
agent, ``known_hosts``, ``ProxyJump``): servegate adds only what it must be sure of:

- ``BatchMode=yes``: never a prompt (servegate's stdin and stdout are its own);
- ``ConnectTimeout``: a host that accepts TCP and never speaks SSH fails within
  ``SERVEGATE_SSH_CONNECT_TIMEOUT_S`` seconds (default 20); it does not bound a key
  exchange or login that a host trickles byte by byte (the agent's hello is awaited
  for a bounded time in ``servegate.remote.client``);
- ``StrictHostKeyChecking=yes``: an unknown host key is never accepted, whatever the
  configuration says (``accept-new`` included); servegate says how to accept it;
- ``ControlMaster=auto`` with ``ControlPersist``: the connections to one host share one
  SSH session, so ``ps`` or a reconnect does not pay the handshake again;
- ``RemoteCommand=none``, ``ClearAllForwardings=yes`` (but for a tunnel) and
  ``LogLevel=ERROR``: a ``RemoteCommand``, ``LocalForward`` or ``LogLevel QUIET`` of the
  user's configuration would replace servegate's command, clash between its connections,
  or hide the errors it reads.

``SERVEGATE_SSH_CONFIG`` names a configuration file to use instead of ``~/.ssh/config``
(``ssh -F``); ``SERVEGATE_SSH_CONTROL_DIR`` the folder of the control sockets.

Every ssh that servegate starts runs in a session of its own (Ctrl-C is servegate's to
handle) and dies with servegate, SIGKILL included (Linux's ``PR_SET_PDEATHSIG``); only a
``ControlPersist`` master, which ssh itself forks into the background, outlives it, for
``CONTROL_PERSIST_S`` seconds of idleness.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import signal
import subprocess
import tempfile
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Any

from servegate._os import die_with_parent
from servegate.errors import ServegateError, UsageError
from servegate.remote.hosts import Host

__all__ = [
    "ConnectError",
    "HostKeyError",
    "Session",
    "check_ssh",
    "child_options",
    "close_masters",
    "connect_timeout_s",
    "control_dir",
    "ssh_argv",
]

CONTROL_PERSIST_S = 60
CONNECT_TIMEOUT_S = 20  # ssh's ConnectTimeout: TCP connect and the SSH banner
SSH_ERROR = 255  # ssh's own exit status when the connection failed


class ConnectError(UsageError):
    """ssh could not reach or log in to the host (exit 2)."""


class HostKeyError(UsageError):
    """The host's key is not in known_hosts, or differs from it (exit 2)."""


# a socket path has 107 bytes; ssh adds "/" and 40 for %C, and "." and 16 while it binds
CONTROL_DIR_MAX = 107 - 1 - 40 - 1 - 16


def control_dir() -> Path:
    """The control sockets' folder (0700); short, since a socket path has 107 bytes.

    Raises:
        UsageError: ``SERVEGATE_SSH_CONTROL_DIR`` is too long, or not a folder that can be made.
    """
    given = os.environ.get("SERVEGATE_SSH_CONTROL_DIR")
    path = Path(given or f"/tmp/servegate-ssh-{os.getuid()}")
    size = len(os.fsencode(path))
    if size > CONTROL_DIR_MAX:
        raise UsageError(
            f"SERVEGATE_SSH_CONTROL_DIR is {size} bytes long; ssh's control sockets need it "
            f"at most {CONTROL_DIR_MAX} (a socket path has 107): set it to a shorter folder, "
            "such as /tmp/sg-ssh, or unset it."
        )
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not path.is_dir():
            raise NotADirectoryError(errno.ENOTDIR, "not a folder")
    except OSError as exc:
        name = "SERVEGATE_SSH_CONTROL_DIR" if given else "the control sockets' folder"
        raise UsageError(
            f"{name} {path} cannot be used ({exc.strerror or exc}): set "
            "SERVEGATE_SSH_CONTROL_DIR to a folder of yours that can be made, such as /tmp/sg-ssh."
        ) from None
    return path


def connect_timeout_s() -> int:
    """ssh's ConnectTimeout: ``SERVEGATE_SSH_CONNECT_TIMEOUT_S`` (whole seconds, at least 1)."""
    raw = os.environ.get("SERVEGATE_SSH_CONNECT_TIMEOUT_S", "")
    try:
        return max(1, round(float(raw))) if raw else CONNECT_TIMEOUT_S
    except ValueError:
        raise UsageError(
            f"SERVEGATE_SSH_CONNECT_TIMEOUT_S={raw!r} is not a number of seconds: set it to "
            f"one (default {CONNECT_TIMEOUT_S}) or unset it."
        ) from None


def _die_with_us() -> Callable[[], None]:
    """A ``preexec_fn`` that makes the kernel send SIGTERM to the child when servegate
    ends, however it ends (Linux; elsewhere nothing).

    ``servegate._os`` looked the prctl function up when it was imported, before the
    fork. The signal is tied to the thread that starts the child: a `Session` lives in
    the thread that opened it.
    """
    parent = os.getpid()

    def child() -> None:
        die_with_parent(signal.SIGTERM)
        if os.getppid() != parent:  # servegate died before the line above
            os._exit(1)

    return child


def child_options() -> dict[str, Any]:
    """Popen's keywords for every ssh child: a session of its own, ending with servegate."""
    return {"start_new_session": True, "preexec_fn": _die_with_us()}


def _config_args() -> list[str]:
    config = os.environ.get("SERVEGATE_SSH_CONFIG")
    return ["-F", config] if config else []


def ssh_argv(
    host: Host,
    command: str | None,
    *,
    master: bool = True,
    verbose: bool = False,
    extra: Sequence[str] = (),
) -> list[str]:
    """The ssh command line that runs ``command`` (a shell line) on ``host``; none: ``-N``."""
    args = ["ssh", *_config_args(), "-T", "-o", "BatchMode=yes"]
    args += ["-o", f"ConnectTimeout={connect_timeout_s()}"]
    args += ["-o", "StrictHostKeyChecking=yes", "-o", "ServerAliveInterval=5"]
    args += ["-o", "ServerAliveCountMax=3", "-o", "RemoteCommand=none"]
    if command is not None:  # a LocalForward of the user's would clash between connections
        args += ["-o", "ClearAllForwardings=yes"]
    if not verbose:  # ssh's errors are read (a LogLevel QUIET of the user's would hide them)
        args += ["-o", "LogLevel=ERROR"]
    if master:
        args += ["-o", "ControlMaster=auto", "-o", f"ControlPath={control_dir()}/%C"]
        args += ["-o", f"ControlPersist={CONTROL_PERSIST_S}"]
    else:
        args += ["-o", "ControlMaster=no", "-o", "ControlPath=none"]
    if verbose:
        args.append("-v")
    args += list(extra)
    if command is None:
        return [*args, "-N", *host.ssh_args()]
    return [*args, *host.ssh_args(), command]


class Session:
    """One ssh process: its stdin and stdout are the remote command's; stderr is kept."""

    def __init__(self, host: Host, command: str) -> None:
        self.host = host
        self.proc = subprocess.Popen(
            ssh_argv(host, command),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            **child_options(),  # Ctrl-C is servegate's to handle; ssh dies with servegate
        )
        self._stderr: list[bytes] = []
        self._reader = threading.Thread(target=self._drain, daemon=True)
        self._reader.start()

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        kept = 0
        with contextlib.suppress(OSError, ValueError):  # closed by wait() after a timeout
            for raw in self.proc.stderr:
                if kept < 1 << 16:
                    self._stderr.append(raw)
                    kept += len(raw)

    @property
    def stdin(self) -> IO[bytes]:
        assert self.proc.stdin is not None
        return self.proc.stdin

    @property
    def stdout(self) -> IO[bytes]:
        assert self.proc.stdout is not None
        return self.proc.stdout

    def stderr_text(self) -> str:
        """What ssh and the remote command wrote on stderr (up to 64 KiB)."""
        self._reader.join(timeout=5.0)
        return b"".join(self._stderr).decode("utf-8", "replace")

    def close_input(self) -> None:
        """End the remote command's stdin."""
        with contextlib.suppress(OSError, ValueError):
            self.stdin.close()

    def wait(self, timeout_s: float = 10.0) -> int:
        """ssh's exit status, killing it after ``timeout_s``."""
        self.close_input()
        try:
            code = self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait()
        self._reader.join(timeout=5.0)  # stderr read to its end before it is closed
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        return code

    def kill(self) -> None:
        """End the connection now."""
        with contextlib.suppress(OSError):
            self.proc.kill()
        self.wait()


def run(host: Host, command: str, *, input_data: bytes = b"", timeout_s: float = 600.0) -> bytes:
    """Run ``command`` on ``host``; its stdout. ssh's failures as ``check_ssh`` says."""
    proc: subprocess.CompletedProcess[bytes] = subprocess.run(
        ssh_argv(host, command),
        input=input_data,
        capture_output=True,
        timeout=timeout_s,
        check=False,
        **child_options(),
    )
    if proc.returncode != 0:
        stderr = proc.stderr.decode("utf-8", "replace")
        check_ssh(host, proc.returncode, stderr)
        last = _last_line(stderr) or f"exit status {proc.returncode}"
        raise ServegateError(f"on {host.spec}: {last}.")
    return proc.stdout


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""


_KEY_LINE = re.compile(r"Server host key: (\S+) (SHA256:\S+)")


def fingerprint(host: Host) -> tuple[str, str] | None:
    """The key type and SHA256 fingerprint the host presents, read from ``ssh -v``
    (through ProxyJump too: the last key shown is the host's); None if none was seen."""
    with tempfile.TemporaryDirectory() as empty:
        proc: subprocess.CompletedProcess[bytes] = subprocess.run(
            ssh_argv(host, "true", master=False, verbose=True),
            capture_output=True,
            timeout=30,
            check=False,
            cwd=empty,
            **child_options(),
        )
    keys = _KEY_LINE.findall(proc.stderr.decode("utf-8", "replace"))
    return keys[-1] if keys else None


def _accept_command(host: Host) -> str:
    port = f"-p {host.port} " if host.port is not None else ""
    return f"ssh {port}{host.destination} true"


def check_ssh(host: Host, code: int, stderr: str) -> None:
    """Raise the error an ssh failure means (exit 2, naming the fix); return when
    ``code`` is not ssh's own failure."""
    if code != SSH_ERROR:
        return
    if "REMOTE HOST IDENTIFICATION HAS CHANGED" in stderr:
        raise HostKeyError(
            f"the host key of {host.spec} differs from the one in known_hosts: if the host was "
            "reinstalled, remove the old key with ssh-keygen -R HOST and accept the new one "
            f"with {_accept_command(host)}."
        )
    if "Host key verification failed" in stderr or "host key is known" in stderr:
        key = fingerprint(host)
        shown = f"{key[0]} key {key[1]}" if key else "key"
        raise HostKeyError(
            f"the host key of {host.spec} is not known ({shown}); it is never accepted "
            f"silently: compare that fingerprint with the host's, then accept it with "
            f"{_accept_command(host)} (answer yes)."
        )
    if "Permission denied" in stderr:
        raise ConnectError(
            f"ssh could not log in to {host.spec} ({_last_line(stderr)}): load your key with "
            "ssh-add, or set User and IdentityFile for it in ~/.ssh/config."
        )
    if "Could not resolve hostname" in stderr:
        raise ConnectError(
            f"cannot resolve {host.spec}: check the name, or its Host alias in ~/.ssh/config."
        )
    raise ConnectError(
        f"cannot connect to {host.spec} ({_last_line(stderr) or 'ssh failed'}): check that "
        "sshd runs there and that ssh reaches it."
    )


def close_masters() -> None:
    """End every control master of the control folder (``ssh -O exit``)."""
    folder = control_dir()
    for socket_path in folder.iterdir():
        if socket_path.is_socket():
            subprocess.run(
                ["ssh", *_config_args(), "-o", f"ControlPath={socket_path}", "-O", "exit", "x"],
                capture_output=True,
                timeout=10,
                check=False,
            )
