"""The local side: run servegate's commands on a host over SSH and relay their output.

``run_job`` runs ``launch`` or ``wait`` as a job of the remote host: it survives the
connection, and a dropped connection is re-opened (the events continue from the byte
they stopped at) until the command's exit, for up to ``SERVEGATE_SSH_RECONNECT_S``
seconds (default 300) without a connection. ``run_cli`` runs a command inside one
connection (``stop``, ``ps``, ``dump``, and ``launch --foreground``, which the remote
side stops when the connection or this process ends).

Every connection starts with the remote's ``hello``: servegate missing there, or another
version of it (or one speaking another ``PROTOCOL``), is exit 2 naming ``servegate remote
install HOST``; the same version built from other code (an edited source tree) is a
warning naming that command. Lines a login shell prints before the hello (a banner of
``~/.bashrc``) are skipped, up to 64 lines or 64 KiB, with a warning; the hello must come
within ``SERVEGATE_SSH_HELLO_S`` seconds (default 60), however long ssh takes to log in.
Every line after it is a frame of ``remote.wire``, every field checked: a line that is
not (a hostile or broken host) is exit 2 in one sentence, never run as code.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shlex
import signal
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from servegate._version import __version__
from servegate.errors import ServegateError, UsageError
from servegate.remote.build import build_id
from servegate.remote.codec import MAX_LINE, PROTOCOL, FrameError, Kinds, decode, encode
from servegate.remote.hosts import Host
from servegate.remote.transport import ConnectError, Session, check_ssh
from servegate.remote.wire import (
    EVENTS,
    Cancel,
    Err,
    Error,
    Exit,
    Fetch,
    File,
    Hello,
    Out,
    RunCli,
    RunJob,
    RunNode,
)

__all__ = [
    "AGENT_COMMAND",
    "Output",
    "RemoteProtocolError",
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
HELLO_S = 60.0  # how long the agent's hello may take, login included
BANNER_LINES = 64  # what a login shell may print before the hello, skipped
BANNER_BYTES = 1 << 16
_WARNED: set[str] = set()  # hosts whose other build (or banner) was reported once


class RemoteVersionError(UsageError):
    """servegate is missing on the host, or another version or build of it (exit 2)."""


class RemoteProtocolError(UsageError):
    """The host sent a line that is not a frame of servegate's protocol (exit 2)."""

    def __init__(self, host: Host, exc: FrameError) -> None:
        super().__init__(
            f"servegate on {host.spec} sent a line outside servegate's protocol ({exc}): "
            f"its answer cannot be trusted; run {_install_hint(host)} (or check what runs "
            "there)."
        )


@dataclass(frozen=True, slots=True)
class Output:
    """Where the remote command's lines go: stdout and stderr writers, notes, and
    warnings about the host (a login banner, another build there); None: dropped."""

    out: Callable[[str], None]
    err: Callable[[str], None]
    note: Callable[[str], None] | None = None
    warn: Callable[[str], None] | None = None


def _install_hint(host: Host) -> str:
    return f"servegate remote install {host.spec}"


class Agent:
    """One connection to the remote agent, past its ``hello``."""

    def __init__(self, host: Host, session: Session, hello: Hello) -> None:
        self.host = host
        self.session = session
        self.hello = hello  # protocol, version, build, python, machine, dir

    def send(self, request: object, *, keep_input: bool = False) -> None:
        """Send the request (a frame of ``wire.REQUESTS``); close stdin unless the remote
        side should watch it."""
        with contextlib.suppress(OSError, ValueError):
            self.session.stdin.write(encode(request))
            self.session.stdin.flush()
        if not keep_input:
            self.session.close_input()

    def lines(self) -> Iterator[bytes]:
        """The raw event lines, until the connection ends; RemoteProtocolError for one
        longer than ``MAX_LINE``."""
        with contextlib.suppress(OSError, ValueError):
            while raw := self.session.stdout.readline(MAX_LINE + 1):
                if len(raw) > MAX_LINE:
                    self.session.kill()
                    raise RemoteProtocolError(
                        self.host, FrameError(f"a line longer than {MAX_LINE} bytes")
                    )
                yield raw

    def events(self, allowed: Kinds = EVENTS) -> Iterator[tuple[bytes, Any]]:
        """Each line with its frame, every field checked, until the connection ends;
        RemoteProtocolError (the connection ended) for a line that is not one."""
        for raw in self.lines():
            try:
                frame = decode(raw, allowed)
            except FrameError as exc:
                self.session.kill()
                raise RemoteProtocolError(self.host, exc) from None
            yield raw, frame

    def close(self) -> int:
        return self.session.wait()


def connect(host: Host, *, warn: Callable[[str], None] | None = None) -> Agent:
    """Open a connection to the agent on ``host`` and check its version.

    A warning about the host (lines a login shell printed, another build of this
    version there) goes to ``warn``, once a host; the library says nothing without it.

    Raises:
        HostKeyError, ConnectError: ssh could not connect (exit 2, naming the fix), or
            no hello came within ``SERVEGATE_SSH_HELLO_S``.
        RemoteVersionError: servegate missing there, or another version or protocol.
        RemoteProtocolError: a hello that is not one.
    """
    session = Session(host, AGENT_COMMAND)
    wait_s = float(os.environ.get("SERVEGATE_SSH_HELLO_S") or HELLO_S)
    late = threading.Event()

    def give_up() -> None:
        late.set()
        with contextlib.suppress(OSError):
            session.proc.kill()

    timer = threading.Timer(wait_s, give_up)
    timer.daemon = True
    timer.start()
    try:
        first, banner = _read_hello(session)
    finally:
        timer.cancel()
    if late.is_set():
        session.wait()
        raise ConnectError(
            f"{host.spec} did not answer within {wait_s:g}s (no hello from servegate there): "
            "check that its sshd answers (ssh -v to it), or set SERVEGATE_SSH_HELLO_S to "
            "wait longer."
        )
    if first is None:
        code = session.wait()
        stderr = session.stderr_text()
        check_ssh(host, code, stderr)
        if len(banner) > BANNER_LINES or sum(map(len, banner)) > BANNER_BYTES:
            session.kill()
            raise RemoteVersionError(
                f"the login shell on {host.spec} printed more than {BANNER_LINES} lines or "
                f"{BANNER_BYTES // 1024} KiB before servegate's hello (first: "
                f"{_shown(banner[0])}): {_QUIET_SHELL}."
            )
        detail = stderr.strip().splitlines()[-1] if stderr.strip() else f"exit status {code}"
        printed = f"; the login shell printed {_shown(banner[0])} first" if banner else ""
        raise RemoteVersionError(
            f"servegate on {host.spec} did not start ({detail}{printed}): run "
            f"{_install_hint(host)}."
        )
    if banner and warn is not None and f"banner {host.spec}" not in _WARNED:
        _WARNED.add(f"banner {host.spec}")
        warn(banner_warning(host, banner))
    return Agent(host, session, _check_hello(host, session, first, warn))


_QUIET_SHELL = (
    "make ~/.bashrc (or ~/.profile, ~/.zshenv, /etc/bash.bashrc) print only in an "
    'interactive shell, e.g. with [ -z "$PS1" ] && return before what it prints'
)


def banner_warning(host: Host, banner: Sequence[bytes]) -> str:
    """The warning for lines a login shell printed before servegate's own output."""
    return (
        f"the login shell on {host.spec} printed {len(banner)} line(s) before servegate's "
        f"output (first: {_shown(banner[0])}), skipped: {_QUIET_SHELL}"
    )


def _shown(raw: bytes) -> str:
    text = raw.decode("utf-8", "replace").strip()
    return repr(text if len(text) <= 60 else text[:57] + "...")


def _read_hello(session: Session) -> tuple[dict[str, Any] | None, list[bytes]]:
    """The hello's JSON object (None: the connection ended, or too much came before it)
    and the lines before it."""
    banner: list[bytes] = []
    size = 0
    with contextlib.suppress(OSError, ValueError):
        while raw := session.stdout.readline(BANNER_BYTES + 1):
            with contextlib.suppress(ValueError):
                data = json.loads(raw)
                if isinstance(data, dict) and data.get("event") == "hello":
                    return data, banner
            banner.append(raw)
            size += len(raw)
            if len(banner) > BANNER_LINES or size > BANNER_BYTES:
                break
    return None, banner


def _check_hello(
    host: Host, session: Session, data: dict[str, Any], warn: Callable[[str], None] | None
) -> Hello:
    """The hello, checked: the agent is this servegate, speaking this protocol."""
    if data.get("missing"):
        session.wait()
        raise RemoteVersionError(
            f"servegate is not installed on {host.spec}: run {_install_hint(host)}."
        )
    version, protocol = data.get("version"), data.get("protocol")
    if version != __version__ or protocol != PROTOCOL:
        session.wait()
        speaks = f"protocol {protocol}" if isinstance(protocol, int) else "an older protocol"
        raise RemoteVersionError(
            f"{host.spec} runs servegate {version} ({speaks}), this is {__version__} "
            f"(protocol {PROTOCOL}): run {_install_hint(host)}."
        )
    try:
        hello: Hello = decode(json.dumps(data), {"hello": Hello})
    except FrameError as exc:
        session.kill()
        raise RemoteProtocolError(host, exc) from None
    if hello.build != build_id() and warn is not None and host.spec not in _WARNED:
        _WARNED.add(host.spec)
        warn(
            f"the code on {host.spec} (build {hello.build}) differs from "
            f"this one's (build {build_id()}), same version {__version__}: "
            f"{_install_hint(host)} updates it"
        )
    return hello


def _relay(host: Host, frame: object, output: Output) -> int | None:
    """Pass one event on; the exit code when it is the last."""
    match frame:
        case Out():
            output.out(frame.text)
        case Err():
            output.err(frame.text)
        case Exit():
            return frame.code
        case Error():
            error = UsageError if frame.code == 2 else ServegateError
            raise error(f"on {host.spec}: {frame.message.rstrip('.')}.")
        case _:
            raise RemoteProtocolError(host, FrameError(f"an event {frame!r} out of place"))
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
    if command not in ("launch", "wait"):
        raise ValueError(f"only launch and wait run as jobs, not {command}")

    def request(job_id: str, offset: int) -> RunJob:
        return RunJob(
            id=job_id,
            command=command,  # type: ignore[arg-type]  # checked above
            argv=list(argv),
            env=dict(env or {}),
            offset=offset,
        )

    def handle(frame: object) -> int | None:
        return _relay(host, frame, output)

    return _job(
        host,
        request=request,
        allowed=EVENTS,
        handle=handle,
        note=output.note,
        warn=output.warn,
        reconnect_s=reconnect_s,
    )


def run_node(
    host: Host,
    job: Mapping[str, Any],
    *,
    frames: Kinds,
    on_frame: Callable[[Any], None],
    output: Output,
    reconnect_s: float | None = None,
) -> int:
    """Run a campaign's start on ``host`` (``servegate.campaign.node``, given ``job``,
    a JSON object), as a job that outlives a dropped connection; each frame it sends (one
    of ``frames``, checked) to ``on_frame``; its exit code."""
    allowed = {**frames, **EVENTS}

    def request(job_id: str, offset: int) -> RunNode:
        return RunNode(id=job_id, job=dict(job), offset=offset)

    def handle(frame: object) -> int | None:
        if isinstance(frame, (Out, Err, Exit, Error, File, Hello)):
            return _relay(host, frame, output)
        on_frame(frame)
        return None

    return _job(
        host,
        request=request,
        allowed=allowed,
        handle=handle,
        note=output.note,
        warn=output.warn,
        reconnect_s=reconnect_s,
    )


def _job(
    host: Host,
    *,
    request: Callable[[str, int], RunJob | RunNode],
    allowed: Kinds,
    handle: Callable[[Any], int | None],
    note: Callable[[str], None] | None,
    warn: Callable[[str], None] | None,
    reconnect_s: float | None,
) -> int:
    """Start a job (or find it again) and follow its events to its exit code."""
    if reconnect_s is None:
        reconnect_s = float(os.environ.get("SERVEGATE_SSH_RECONNECT_S", RECONNECT_S))
    job_id = uuid.uuid4().hex
    offset = 0
    lost_at: float | None = None
    attempt = 0
    interrupted = False
    while True:
        try:
            agent = connect(host, warn=warn)
        except (RemoteProtocolError, RemoteVersionError):
            raise  # another servegate there now: no reconnect makes it this one
        except (UsageError, OSError):
            if lost_at is None or time.monotonic() - lost_at > reconnect_s:
                raise
            attempt += 1
            time.sleep(min(0.1 * 2**attempt, 5.0))
            continue
        attempt = 0
        lost_at = None
        try:
            agent.send(request(job_id, offset))
            for raw, frame in agent.events(allowed):
                offset += len(raw)
                code = handle(frame)
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
        except BaseException:
            agent.session.kill()
            raise
        agent.close()
        lost_at = time.monotonic()
        if note is not None:
            note(f"connection to {host.spec} lost; reconnecting")


def fetch(
    host: Host,
    folder: str,
    have: Mapping[str, int],
    *,
    warn: Callable[[str], None] | None = None,
) -> dict[str, bytes]:
    """The files of ``folder`` (under the host's servegate folder) that ``have`` (name ->
    size) lacks or has at another size; each name a plain file name (RemoteProtocolError
    for ``..`` or a path). A warning about the host goes to ``warn``."""
    agent = connect(host, warn=warn)
    agent.send(Fetch(folder=folder, have=dict(have)))
    files: dict[str, bytearray] = {}
    try:
        for _, frame in agent.events():
            match frame:
                case File():
                    if frame.first or frame.name not in files:
                        files[frame.name] = bytearray()
                    files[frame.name].extend(base64.b64decode(frame.data, validate=True))
                case Error():
                    _relay(host, frame, Output(out=_ignore, err=_ignore))
                case Exit():
                    break
                case _:
                    raise RemoteProtocolError(host, FrameError(f"an event {frame!r} out of place"))
    except ValueError:  # binascii.Error: data that is not base64
        agent.session.kill()
        raise RemoteProtocolError(host, FrameError("a file chunk that is not base64")) from None
    except BaseException:
        agent.session.kill()
        raise
    agent.close()
    return {name: bytes(data) for name, data in files.items()}


def _ignore(text: str) -> None:
    del text


def cancel(host: Host, job_id: str, *, within_s: float = CANCEL_S) -> bool:
    """SIGINT to a job's command (what Ctrl-C does to a local one); whether the host
    answered (sent, or the job had already ended). A connection that fails is tried
    again for ``within_s`` seconds: a Ctrl-C must not be lost to one busy moment."""
    deadline = time.monotonic() + within_s
    attempt = 0
    while True:
        try:
            agent = connect(host)
            agent.send(Cancel(id=job_id))
            answered = any(isinstance(frame, Exit) for _, frame in agent.events())
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
    agent = connect(host, warn=output.warn)
    request = RunCli(
        command=command,  # type: ignore[arg-type]  # the CLI's own command names
        argv=list(argv),
        env=dict(env or {}),
        foreground=foreground,
    )
    agent.send(request, keep_input=foreground)
    previous = None
    if foreground:
        previous = signal.signal(signal.SIGTERM, _raise_stop)
    try:
        events = agent.events()
        while True:
            try:
                for _, frame in events:
                    code = _relay(host, frame, output)
                    if code is not None:
                        return code
                break
            except (KeyboardInterrupt, _Stop):
                if not foreground:
                    raise
                agent.session.close_input()  # the remote side stops the command
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                events = agent.events()
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
