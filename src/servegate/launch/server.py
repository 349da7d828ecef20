"""Start a server and gate it: ``launch()`` returns a READY ``Server`` or raises.

    with launch(["python3", "-m", "servegate", "sim", "--port", "8123"],
                engine="sglang", port=8123) as server:
        print(server.url)

The server runs under a keeper process (``servegate.launch.keeper``) that drains its
output into the log file, gates it and, unless detached, stops the whole tree when the
launching process ends, however it ends.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import signal
import subprocess
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from types import TracebackType
from typing import IO, TypedDict, Unpack

import psutil

from servegate.errors import PortInUseError, ServegateError, UsageError
from servegate.gate.options import GateOptions, Resolved, check_log_path, port_out_of_range
from servegate.gate.verdict import Status, Verdict, iso, raise_for_verdict
from servegate.launch import state
from servegate.launch.events import (
    GateNote,
    Hooks,
    LaunchEvent,
    Observer,
    StartBegan,
    TelemetrySampled,
    VerdictCompleted,
    VerdictDecided,
)
from servegate.launch.keeper import spawn as spawn_keeper
from servegate.launch.messages import (
    Decided,
    Exited,
    Failed,
    Message,
    Note,
    Sample,
    Started,
    Telemetry,
    parse,
)
from servegate.launch.stop import stop as stop_server
from servegate.launch.tree import (
    MARKER_VAR,
    ProcInfo,
    StopReport,
    describe_holders,
    is_alive,
    named_port_holders,
    port_is_free,
    snapshot,
)
from servegate.telemetry.model import Snapshot

__all__ = ["Server", "launch"]

# keepers of servers detached from this process (they outlive it by design)
_DETACHED: list[subprocess.Popen[bytes]] = []


class Server:
    """A launched, READY server: where it is, whether it lives, and how to stop it."""

    def __init__(
        self,
        *,
        tracked: state.Tracked,
        verdict: Verdict,
        keeper: subprocess.Popen[bytes] | None,
        control: int | None,
        essential: Sequence[ProcInfo] = (),
    ) -> None:
        self.tracked = tracked
        self.verdict = verdict
        self._keeper = keeper
        self._control = control
        self._essential = tuple(essential)
        self._stop_report: StopReport | None = None

    name = property(lambda self: self.tracked.name, doc="The name ``ps`` and ``stop`` use.")
    pid = property(lambda self: self.tracked.pid, doc="The main process.")
    port = property(lambda self: self.tracked.port, doc="The port the server serves on.")
    url = property(lambda self: self.tracked.url, doc="``http://host:port``, when known.")
    log_path = property(lambda self: self.tracked.log_path, doc="Its log file.")

    def __repr__(self) -> str:
        return f"Server(name={self.name!r}, pid={self.pid}, url={self.url!r})"

    def alive(self) -> bool:
        """True while the main process and every essential child run."""
        return self.tracked.alive() and all(is_alive(child) for child in self._essential)

    def pids(self) -> tuple[int, ...]:
        """The PIDs of the server's process tree now (its session included)."""
        return tuple(info.pid for info in snapshot([self.pid], session=self.tracked.pgid))

    def detach(self) -> None:
        """Let the server outlive this process; ``servegate stop NAME`` ends it later."""
        if self._control is None:
            return
        with contextlib.suppress(OSError):
            os.write(self._control, b"detach\n")
        os.close(self._control)
        self._control = None
        keeper = self._keeper
        if keeper is not None:
            if keeper.stdout is not None:
                keeper.stdout.close()
            _DETACHED.append(keeper)  # still running, on purpose: keep it referenced
            self._keeper = None
        tree = snapshot([self.pid], session=self.tracked.pgid)
        self.tracked = self.tracked.with_descendants(tuple(tree))
        state.save(self.tracked)

    def stop(self, grace_s: float = 10.0) -> StopReport:
        """Stop the whole tree (SIGTERM, grace, SIGKILL); report what was killed."""
        if self._stop_report is not None:
            return self._stop_report
        report = stop_server(self.tracked, grace_s=grace_s).report
        self._close_channels()
        self._stop_report = report
        return report

    def _close_channels(self) -> None:
        if self._control is not None:
            os.close(self._control)
            self._control = None
        keeper = self._keeper
        if keeper is not None:
            if keeper.stdout is not None:
                keeper.stdout.close()
            try:
                keeper.wait(timeout=10.0)
            except subprocess.TimeoutExpired:
                keeper.kill()
                keeper.wait()
            self._keeper = None

    def wait_exit(self) -> int | None:
        """Block until the server exits on its own; its exit code when known."""
        keeper = self._keeper
        if keeper is None or keeper.stdout is None:
            return None
        for raw in keeper.stdout:
            message = parse(raw)
            if isinstance(message, Exited):
                return message.code
        return None

    def __enter__(self) -> Server:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def _check_command(command: Sequence[str], env: Mapping[str, str], cwd: str | None) -> None:
    if not command:
        raise UsageError(
            "missing command: put the server's command after --, "
            "e.g. servegate launch --port 8000 -- vllm serve MODEL."
        )
    if cwd is not None and not os.path.isdir(cwd):
        raise UsageError(f"--cwd {cwd!r} is not a folder: pass an existing folder.")
    program = command[0]
    if os.sep in program:
        path = program if cwd is None or os.path.isabs(program) else os.path.join(cwd, program)
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            raise UsageError(f"{program!r} is not an executable file: check the path.")
    elif shutil.which(program, path=env.get("PATH", os.environ.get("PATH"))) is None:
        raise UsageError(f"command {program!r} not found on PATH: check its spelling or PATH.")
    for key in env:
        if not key or "=" in key:
            raise UsageError(f"invalid --env name {key!r}: use --env NAME=VALUE.")
    port = port_out_of_range(command)
    if port is not None:
        raise UsageError(
            f"the command's --port {port} is above 65535: give the server a port from 1 to 65535."
        )


def _read(stream: IO[bytes]) -> Message | None:
    """The keeper's next message; None at end-of-file."""
    raw = stream.readline()
    return parse(raw) if raw else None


class GateKeywords(TypedDict, total=False):
    """The keyword form of ``launch``: the gate's settings and the ``on_*`` callbacks."""

    engine: str
    port: int | None
    timeout_s: float
    stall_s: float | None
    ready: Sequence[str]
    crash: Sequence[str]
    health_url: str | None
    host: str
    model: str | None
    sample_s: float
    on_verdict: Callable[[Verdict], None] | None
    on_telemetry: Callable[[Verdict], None] | None
    on_started: Callable[[state.Tracked], None] | None
    on_note: Callable[[str], None] | None
    on_status: Callable[[Snapshot], None] | None


_HOOKS = ("on_verdict", "on_telemetry", "on_started", "on_note", "on_status")


def launch(
    command: Sequence[str],
    *,
    options: GateOptions | None = None,
    observer: Observer | None = None,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    log_path: str | None = None,
    name: str | None = None,
    keep: bool = False,
    attached: bool = True,
    line_fd: int | None = None,
    **keywords: Unpack[GateKeywords],
) -> Server:
    """Start ``command`` and block until it is READY; return the running ``Server``.

    The gate's settings come as one value, ``options`` (``GateOptions``), and what
    happens as events to ``observer`` (``launch.events``). The keyword form
    ``launch(cmd, engine="vllm", port=8000, on_verdict=...)`` is the same call: its
    keywords make the options (GateOptions' defaults: no stall limit) and its ``on_*``
    callbacks the observer; the two forms do not mix.

    Args:
        command: the server's argument list (no shell).
        options: what makes it READY, CRASHED or TIMED OUT; the port defaults to
            ``--port N`` in the command, else the profile's default port (it must be
            free before the launch).
        observer: gets each event of the launch (``launch.events``): the start, the
            gate's notes and samples while it waits, the verdict the moment it
            arrives (no ``snapshots`` yet), then the verdict with its telemetry series,
            still before a failed tree is stopped or a READY one detached.
        env: extra environment variables; cwd: its working folder.
        log_path: its log file (default: NAME.log in the state folder); truncated.
        name: the name ``servegate ps`` / ``stop`` know it by (default: the engine's).
        keep: on CRASH or TIMEOUT, leave the process tree running (tracked) for a look.
        attached: True: the server dies with this process (see ``Server.detach``).
        line_fd: a descriptor (this process's stdout) that the keeper writes
            ``verdict.line()`` to, redacted, the moment the gate decides, before this
            process hears of it; the keeper then closes its copy.
        **keywords: the keyword form: ``engine``, ``port``, ``timeout_s``, ``stall_s``
            (None: no stall limit), ``ready``, ``crash``, ``health_url``, ``host``,
            ``model``, ``sample_s`` (GateOptions' fields), and ``on_started``,
            ``on_note``, ``on_status``, ``on_verdict``, ``on_telemetry`` (called with
            what the events above carry).

    Raises:
        UsageError: bad arguments, or the port is already taken; nothing is started.
        ServerCrashed: CRASH; ``.verdict`` says why. The tree is stopped unless ``keep``.
        ServerTimeout: TIMEOUT; same.
    """
    options, observer = _options_form(options, observer, keywords)
    command = [str(arg) for arg in command]
    env = dict(env or {})
    _check_command(command, env, cwd)
    options = options.for_command(command, env)
    resolved = options.resolve()
    if options.port is not None:
        _check_port_free(options.port)
    # reserved under a lock: launches started together never share a name
    name = state.reserve_name(state.check_name(name or resolved.profile.name))
    try:
        log_path = _fresh_log(log_path, name)
        marker = uuid.uuid4().hex
        keeper, control_w = _start_keeper(
            command,
            env,
            cwd=cwd,
            log_path=log_path,
            name=name,
            options=options,
            marker=marker,
            line_fd=line_fd,
        )
    except BaseException:
        state.remove(name)  # the reservation: nothing was started
        raise
    assert keeper.stdout is not None
    try:
        tracked = _track(
            keeper,
            name=name,
            command=command,
            resolved=resolved,
            log_path=log_path,
            marker=marker,
            attached=attached,
        )
        _tell(observer, StartBegan(tracked=tracked))
        message = _until_verdict(keeper.stdout, observer)
    except BaseException:
        # interrupted (Ctrl-C) or the keeper failed: nothing may be left behind
        _abort(keeper, control_w, name)
        raise
    if not isinstance(message, Decided):
        _abort(keeper, control_w, name)
        detail = message.message if isinstance(message, Failed) else "it ended"
        raise ServegateError(f"the keeper process failed before a verdict ({detail}).")
    server = Server(
        tracked=tracked,
        verdict=message.verdict,
        keeper=keeper,
        control=control_w,
        essential=[info for info in map(_proc_info, message.essential) if info is not None],
    )
    return _settle(server, keep=keep, attached=attached, observer=observer, stream=keeper.stdout)


def _options_form(
    options: GateOptions | None, observer: Observer | None, keywords: GateKeywords
) -> tuple[GateOptions, Observer | None]:
    """The options and the observer of either form of ``launch``."""
    hooks = {k: v for k, v in keywords.items() if k in _HOOKS}
    gate = {k: v for k, v in keywords.items() if k not in _HOOKS}
    if options is not None and gate:
        raise UsageError(
            f"launch() takes the gate's settings as options= or as keywords, not both: "
            f"move {', '.join(sorted(gate))} into the GateOptions."
        )
    if observer is not None and hooks:
        raise UsageError(
            f"launch() takes observer= or on_* callbacks, not both: "
            f"handle {', '.join(sorted(hooks))} in the observer."
        )
    if options is None:
        for key in ("ready", "crash"):
            if key in gate:
                gate[key] = tuple(gate[key])  # type: ignore[arg-type]
        options = GateOptions(**gate)  # type: ignore[arg-type]
    if hooks:
        observer = Hooks(**hooks)  # type: ignore[arg-type]
    return options, observer


def _tell(observer: Observer | None, event: LaunchEvent) -> None:
    if observer is not None:
        observer.emit(event)


def _fresh_log(log_path: str | None, name: str) -> str:
    """The server's log (default: NAME.log in the state folder), emptied for this start."""
    if log_path is None:
        log_path = str(state.state_dir() / f"{name}.log")
    log_path = os.path.abspath(log_path)
    check_log_path(log_path)
    try:
        with open(log_path, "wb"):
            pass  # a fresh log for a fresh start
    except OSError as exc:
        raise UsageError(
            f"cannot write the log {log_path}: {exc.strerror or exc}; pass a writable --log path."
        ) from None
    return log_path


def _start_keeper(
    command: list[str],
    env: dict[str, str],
    *,
    cwd: str | None,
    log_path: str,
    name: str,
    options: GateOptions,
    marker: str,
    line_fd: int | None,
) -> tuple[subprocess.Popen[bytes], int]:
    """Start the keeper on the server's spec; return it and its control pipe's write end."""
    env = dict(env)
    env.setdefault("PYTHONUNBUFFERED", "1")
    env[MARKER_VAR] = marker
    control_r, control_w = os.pipe()
    line_copy = None
    try:
        if line_fd is not None:  # a copy above 2 (the keeper's own 0 to 2 are taken)
            line_copy = fcntl.fcntl(line_fd, fcntl.F_DUPFD_CLOEXEC, 3)
        spec = {
            "command": command,
            "env": env,
            "cwd": cwd,
            "log_path": log_path,
            "status_path": str(state.status_path(name)),
            "gate": options.to_json(),
            "line_fd": line_copy,
        }
        keeper = spawn_keeper(spec, control=control_r, line_fd=line_copy)  # not in argv
    except BaseException:
        os.close(control_w)
        raise
    finally:
        os.close(control_r)
        if line_copy is not None:
            os.close(line_copy)  # the keeper has its own
    return keeper, control_w


def _track(
    keeper: subprocess.Popen[bytes],
    *,
    name: str,
    command: list[str],
    resolved: Resolved,
    log_path: str,
    marker: str,
    attached: bool,
) -> state.Tracked:
    """Read the keeper's ``Started``; record the running server under ``name``."""
    assert keeper.stdout is not None
    started = _read(keeper.stdout)
    if not isinstance(started, Started):
        detail = started.message if isinstance(started, Failed) else "the keeper process ended"
        raise UsageError(f"could not start {command[0]!r}: {detail}.")
    try:
        create_time = psutil.Process(started.pid).create_time()
    except psutil.Error:
        create_time = started.started_wall
    try:
        keeper_create_time: float | None = psutil.Process(keeper.pid).create_time()
    except psutil.Error:
        keeper_create_time = None
    tracked = state.Tracked(
        name=name,
        pid=started.pid,
        pgid=started.pgid,
        create_time=create_time,
        keeper_pid=started.keeper_pid,
        command=tuple(command),
        engine=resolved.profile.name,
        url=resolved.url,
        port=resolved.options.port,
        log_path=log_path,
        started_at=iso(started.started_wall),
        marker=marker,
        attached=attached,
        keeper_create_time=keeper_create_time,
    )
    state.save(tracked)
    return tracked


def _until_verdict(stream: IO[bytes], observer: Observer | None) -> Message | None:
    """Pass the keeper's notes and samples on; return the message after them (the verdict)."""
    message = _read(stream)
    while isinstance(message, Note | Sample):
        if isinstance(message, Note):
            _tell(observer, GateNote(text=message.text))
        else:
            _tell(observer, TelemetrySampled(snapshot=message.snapshot))
        message = _read(stream)
    return message


def _settle(
    server: Server,
    *,
    keep: bool,
    attached: bool,
    observer: Observer | None,
    stream: IO[bytes],
) -> Server:
    """Tell the verdict at once; complete it with the telemetry series that follows and
    tell that; then stop (or keep) a failed server and raise, or detach a READY one
    unless attached."""
    _call(server, observer, VerdictDecided)
    server.verdict = verdict = _with_snapshots(server.verdict, stream)
    _call(server, observer, VerdictCompleted)
    if verdict.status != Status.READY:
        if keep:
            server.detach()
        else:
            server.stop(grace_s=5.0)
        raise_for_verdict(verdict)
    if not attached:
        server.detach()
    return server


def _call(
    server: Server,
    observer: Observer | None,
    event: type[VerdictDecided] | type[VerdictCompleted],
) -> None:
    """Tell the observer ``server.verdict``; whatever its trouble, nothing is left behind."""
    if observer is None:
        return
    try:
        observer.emit(event(verdict=server.verdict))
    except BaseException:
        server.stop(grace_s=5.0)
        raise


def _with_snapshots(verdict: Verdict, stream: IO[bytes]) -> Verdict:
    """The verdict with the series the keeper sends right after it (none if it sends none)."""
    try:
        message = _read(stream)
    except (OSError, ValueError):
        return verdict
    if not isinstance(message, Telemetry):
        return verdict
    # the summary again: it counts the last sample, taken after the verdict was sent
    summary = message.summary or verdict.telemetry
    return replace(verdict, snapshots=message.snapshots, telemetry=summary)


def _proc_info(pid: int) -> ProcInfo | None:
    try:
        proc = psutil.Process(pid)
        return ProcInfo(pid=pid, create_time=proc.create_time(), cmd=proc.name())
    except psutil.Error:
        return None


def _abort(keeper: subprocess.Popen[bytes], control_w: int, name: str) -> None:
    """Stop a launch half-way: the keeper takes its tree down when its stdin closes."""
    os.close(control_w)
    try:
        keeper.wait(timeout=15.0)
    except subprocess.TimeoutExpired:
        keeper.send_signal(signal.SIGKILL)
        keeper.wait()
    if keeper.stdout is not None:
        keeper.stdout.close()
    state.remove(name)


def _check_port_free(port: int) -> None:
    """PortInUseError naming what holds ``port``, unless a server could bind it now."""
    if not port_is_free(port):
        raise PortInUseError(
            f"port {port} is already in use{_held_by(port)}: stop what holds it "
            "(servegate ps / servegate stop) or pick another --port.",
            port=port,
        )


def _held_by(port: int) -> str:
    """' by PID 1234 (python3)' for the processes holding ``port``, or '' when none is visible."""
    holders = describe_holders(named_port_holders(port))
    return f" by {holders}" if holders else ""
