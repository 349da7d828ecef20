"""The local side: run servegate's commands on a host over SSH and relay their output.

``run_job`` runs ``launch`` or ``wait`` as a job of the remote host: it survives the
connection, and a dropped connection is re-opened (the events continue from the byte
they stopped at) until the command's exit, for up to ``SERVEGATE_SSH_RECONNECT_S``
seconds (default 300) without a connection. ``run_cli`` runs a command inside one
connection (``stop``, ``ps``, ``dump``, and ``launch --foreground``, which the remote
side stops when the connection or this process ends).

Every connection starts with the remote's ``hello``: servegate missing there, or another
version of it, is exit 2 naming ``servegate remote install HOST``; the same version built
from other code (an edited source tree) is a warning naming that command.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shlex
import signal
import struct
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from servegate._version import __version__
from servegate.errors import ServegateError, UsageError
from servegate.remote.build import build_id
from servegate.remote.hosts import Host
from servegate.remote.transport import Session, check_ssh

__all__ = [
    "AGENT_COMMAND",
    "Output",
    "RemoteVersionError",
    "cancel",
    "connect",
    "fetch",
    "run_cli",
    "run_job",
    "run_node",
]

# the remote shell line: servegate's own venv, or a hello that says it is missing
_PRELUDE = (
    'd="${SERVEGATE_REMOTE_DIR:-$HOME/.servegate}"; '
    'if [ -x "$d/venv/bin/python" ]; then exec "$d/venv/bin/python" -m servegate.remote.agent; fi; '
    'echo \'{"event":"hello","missing":true}\''
)
AGENT_COMMAND = "exec sh -c " + shlex.quote(_PRELUDE)
RECONNECT_S = 300.0
CANCEL_S = 30.0  # how long a Ctrl-C keeps trying to reach the host
_WARNED: set[str] = set()  # hosts whose other build was reported once


class RemoteVersionError(UsageError):
    """servegate is missing on the host, or another version or build of it (exit 2)."""


@dataclass(frozen=True, slots=True)
class Output:
    """Where the remote command's lines go: stdout and stderr writers, and notes."""

    out: Callable[[str], None]
    err: Callable[[str], None]
    note: Callable[[str], None] | None = None


def _install_hint(host: Host) -> str:
    return f"servegate remote install {host.spec}"


class Agent:
    """One connection to the remote agent, past its ``hello``."""

    def __init__(self, host: Host, session: Session, hello: dict[str, Any]) -> None:
        self.host = host
        self.session = session
        self.hello = hello  # version, build, python, machine, dir (servegate's folder there)

    def send(self, request: Mapping[str, Any], *, keep_input: bool = False) -> None:
        """Send the request; close stdin unless the remote side should watch it."""
        with contextlib.suppress(OSError, ValueError):
            self.session.stdin.write(json.dumps(dict(request)).encode() + b"\n")
            self.session.stdin.flush()
        if not keep_input:
            self.session.close_input()

    def lines(self) -> Iterator[bytes]:
        """The raw event lines, until the connection ends."""
        with contextlib.suppress(OSError, ValueError):
            yield from self.session.stdout

    def close(self) -> int:
        return self.session.wait()


def connect(host: Host) -> Agent:
    """Open a connection to the agent on ``host`` and check its version.

    Raises:
        HostKeyError, ConnectError: ssh could not connect (exit 2, naming the fix).
        RemoteVersionError: servegate missing there, or another version or build.
    """
    session = Session(host, AGENT_COMMAND)
    first = session.stdout.readline()
    hello: dict[str, Any] = {}
    with contextlib.suppress(ValueError):
        hello = json.loads(first) if first else {}
    if hello.get("event") != "hello":
        code = session.wait()
        stderr = session.stderr_text()
        check_ssh(host, code, stderr)
        detail = stderr.strip().splitlines()[-1] if stderr.strip() else f"exit status {code}"
        raise RemoteVersionError(
            f"servegate on {host.spec} did not start ({detail}): run {_install_hint(host)}."
        )
    if hello.get("missing"):
        session.wait()
        raise RemoteVersionError(
            f"servegate is not installed on {host.spec}: run {_install_hint(host)}."
        )
    if hello.get("version") != __version__:
        session.wait()
        raise RemoteVersionError(
            f"{host.spec} runs servegate {hello.get('version')}, this is {__version__}: "
            f"run {_install_hint(host)}."
        )
    if hello.get("build") != build_id() and host.spec not in _WARNED:
        _WARNED.add(host.spec)
        sys.stderr.write(
            f"servegate: the code on {host.spec} (build {hello.get('build')}) differs from "
            f"this one's (build {build_id()}), same version {__version__}: "
            f"{_install_hint(host)} updates it\n"
        )
    return Agent(host, session, hello)


def _relay(event: dict[str, Any], output: Output) -> int | None:
    """Pass one event on; the exit code when it is the last."""
    kind = event.get("event")
    if kind == "out":
        output.out(event["text"])
    elif kind == "err":
        output.err(event["text"])
    elif kind == "exit":
        return int(event["code"])
    elif kind == "error":
        raise ServegateError(f"on {event.get('host', 'the host')}: {event.get('message')}.")
    return None


def run_job(
    host: Host,
    command: str,
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    output: Output,
    reconnect_s: float | None = None,
) -> int:
    """Run ``servegate COMMAND ARGV`` on ``host`` as a job; relay its output; its exit code.

    A dropped connection is opened again, and the output continues where it stopped.
    Ctrl-C here interrupts the remote command (as Ctrl-C would there) and waits for its end.
    """
    request: dict[str, Any] = {
        "op": "run",
        "command": command,
        "argv": list(argv),
        "env": dict(env or {}),
    }
    return _job(host, request, lambda event: _relay(event, output), output.note, reconnect_s)


def run_node(
    host: Host,
    job: bytes,
    *,
    on_frame: Callable[[bytes], None],
    output: Output,
    reconnect_s: float | None = None,
) -> int:
    """Run a campaign's start on ``host`` (``servegate.campaign.cluster``, given the
    pickled ``job``), as a job that outlives a dropped connection; each frame it writes
    (its calls to the campaign's recorder) to ``on_frame``; its exit code."""
    pending = bytearray()

    def handle(event: dict[str, Any]) -> int | None:
        if event.get("event") != "frame":
            return _relay(event, output)
        pending.extend(base64.b64decode(event["data"]))
        while len(pending) >= 4:
            size = struct.unpack("!I", pending[:4])[0]
            if len(pending) < 4 + size:
                break
            frame = bytes(pending[4 : 4 + size])
            del pending[: 4 + size]
            on_frame(frame)
        return None

    request = {"op": "run", "kind": "node", "job": base64.b64encode(job).decode()}
    return _job(host, request, handle, output.note, reconnect_s)


def _job(
    host: Host,
    request: dict[str, Any],
    handle: Callable[[dict[str, Any]], int | None],
    note: Callable[[str], None] | None,
    reconnect_s: float | None,
) -> int:
    """Start a job (or find it again) and follow its events to its exit code."""
    if reconnect_s is None:
        reconnect_s = float(os.environ.get("SERVEGATE_SSH_RECONNECT_S", RECONNECT_S))
    job_id = uuid.uuid4().hex
    request = {**request, "id": job_id}
    offset = 0
    lost_at: float | None = None
    attempt = 0
    interrupted = False
    while True:
        try:
            agent = connect(host)
        except (UsageError, OSError):
            if lost_at is None or time.monotonic() - lost_at > reconnect_s:
                raise
            attempt += 1
            time.sleep(min(0.1 * 2**attempt, 5.0))
            continue
        attempt = 0
        lost_at = None
        try:
            agent.send({**request, "offset": offset})
            for raw in agent.lines():
                offset += len(raw)
                code = handle(json.loads(raw))
                if code is not None:
                    agent.close()
                    return code
        except KeyboardInterrupt:
            if interrupted:
                agent.session.kill()
                raise
            interrupted = True
            agent.session.kill()
            if not cancel(host, job_id) and note is not None:
                note(
                    f"could not reach {host.spec} to interrupt the command; Ctrl-C again "
                    "leaves it running there"
                )
            continue  # the command's last lines and exit code, through a new connection
        agent.close()
        lost_at = time.monotonic()
        if note is not None:
            note(f"connection to {host.spec} lost; reconnecting")


def fetch(host: Host, folder: str, have: Mapping[str, int]) -> dict[str, bytes]:
    """The files of ``folder`` (under the host's servegate folder) that ``have`` (name ->
    size) lacks or has at another size."""
    agent = connect(host)
    agent.send({"op": "fetch", "folder": folder, "have": dict(have)})
    files: dict[str, bytearray] = {}
    for raw in agent.lines():
        event = json.loads(raw)
        if event.get("event") == "file":
            if event.get("first"):
                files[event["name"]] = bytearray()
            files[event["name"]].extend(base64.b64decode(event["data"]))
        elif event.get("event") in ("exit", "error"):
            break
    agent.close()
    return {name: bytes(data) for name, data in files.items()}


def cancel(host: Host, job_id: str, *, within_s: float = CANCEL_S) -> bool:
    """SIGINT to a job's command (what Ctrl-C does to a local one); whether the host
    answered (sent, or the job had already ended). A connection that fails is tried
    again for ``within_s`` seconds: a Ctrl-C must not be lost to one busy moment."""
    deadline = time.monotonic() + within_s
    attempt = 0
    while True:
        try:
            agent = connect(host)
            agent.send({"op": "cancel", "id": job_id})
            answered = any(json.loads(raw).get("event") == "exit" for raw in agent.lines())
            agent.close()
        except (UsageError, OSError, ValueError):
            answered = False
        if answered or time.monotonic() > deadline:
            return answered
        attempt += 1
        time.sleep(min(0.1 * 2**attempt, 2.0))


class _Stop(Exception):
    """SIGTERM arrived while a foreground command runs."""


def run_cli(
    host: Host,
    command: str,
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    output: Output,
    foreground: bool = False,
) -> int:
    """Run ``servegate COMMAND ARGV`` on ``host`` inside one connection; its exit code.

    With ``foreground`` the remote command is stopped when this connection ends: on
    Ctrl-C or SIGTERM here (its last lines still come), or when this process dies.
    """
    agent = connect(host)
    request = {
        "op": "cli",
        "command": command,
        "argv": list(argv),
        "env": dict(env or {}),
        "foreground": foreground,
    }
    agent.send(request, keep_input=foreground)
    previous = None
    if foreground:
        previous = signal.signal(signal.SIGTERM, _raise_stop)
    try:
        lines = agent.lines()
        while True:
            try:
                for raw in lines:
                    code = _relay(json.loads(raw), output)
                    if code is not None:
                        return code
                break
            except (KeyboardInterrupt, _Stop):
                if not foreground:
                    raise
                agent.session.close_input()  # the remote side stops the command
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                lines = agent.lines()
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
        code_ssh = agent.close()
    check_ssh(host, code_ssh, agent.session.stderr_text())
    raise ServegateError(
        f"the connection to {host.spec} ended before servegate {command} did; "
        f"see servegate ps --host {host.spec}."
    )


def _raise_stop(signum: int, frame: object) -> None:
    raise _Stop
