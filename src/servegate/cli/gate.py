"""``servegate launch``, ``wait``, ``stop`` and ``ps``: thin layers over the library.

Results go to stdout (the verdict line, then the log tail on CRASH or TIMEOUT; or one
JSON object with ``--json``); notes go to stderr (none of the progress under ``-q``).
Exit codes: 0 READY, 1 CRASH, 124 TIMEOUT, 2 bad usage or input.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import click

from servegate._text import printable
from servegate.cli.options import engine as engine_option
from servegate.cli.options import examples, json_flag, quiet
from servegate.cli.remote import host_option, run_remote
from servegate.errors import GateError, UsageError
from servegate.gate.defaults import STALL_S, TIMEOUT_S
from servegate.redact import Redactor, scrub

if TYPE_CHECKING:
    from servegate.gate.verdict import Verdict
    from servegate.launch.events import LaunchEvent
    from servegate.launch.server import Server
    from servegate.launch.state import Tracked
    from servegate.startup.session import StartSession

F = TypeVar("F", bound=Callable[..., Any])

_EXIT_CODES = "\n\n\b\nExit codes: 0 READY, 1 CRASH, 124 TIMEOUT, 2 bad usage or input."


def _timeout_value(ctx: click.Context, param: click.Parameter, value: str) -> float | str:
    """``--timeout``: seconds, or ``auto`` (from the start history)."""
    if value == "auto":
        return value
    try:
        return float(value)
    except ValueError:
        raise click.BadParameter(
            f"{value!r} is not a valid float (seconds) nor auto: pass e.g. --timeout 900 "
            "or --timeout auto."
        ) from None


_GATE_OPTIONS = [
    engine_option("The engine profile: its ready lines, fatal signatures, probe and phases."),
    click.option("--ready", multiple=True, metavar="REGEX", help="Extra ready-line regex."),
    click.option("--crash", multiple=True, metavar="REGEX", help="Extra fatal-line regex."),
    click.option(
        "--port",
        type=int,
        help="Probe this port. [default: the command's --port, else the engine's]",
    ),
    click.option("--health-url", metavar="URL", help="Probe exactly this URL (any 2xx)."),
    click.option(
        "--timeout",
        "timeout_s",
        metavar="SECONDS|auto",
        callback=_timeout_value,
        default=f"{TIMEOUT_S:g}",
        show_default=True,
        help="Hard cap in seconds, or auto: from past starts of this configuration.",
    ),
    click.option(
        "--stall",
        "stall_s",
        type=float,
        default=STALL_S,
        show_default=True,
        help="TIMEOUT after this many seconds without new output (0: never).",
    ),
    click.option(
        "--sample",
        "sample_s",
        type=float,
        default=1.0,
        show_default=True,
        help="Telemetry period in seconds until the verdict (CPU, memory, disk, "
        "network, GPUs; 0: none).",
    ),
    click.option(
        "--tail",
        type=int,
        default=50,
        show_default=True,
        help="Log lines shown on CRASH or TIMEOUT (--json keeps 300).",
    ),
    json_flag("the verdict"),
    quiet(),
    host_option("the server"),
]


def _gate_options(func: F) -> F:
    """The GATE OPTIONS shared by launch and wait."""
    for option in reversed(_GATE_OPTIONS):
        func = option(func)
    return func


def _remote(host: str | None, command: str, **kwargs: Any) -> None:
    """Run this command on ``host`` instead (never returns), unless it is this machine."""
    if host is None:
        return  # no --host: the remote package is not even loaded (its import costs)
    from servegate.remote.hosts import is_local

    if not is_local(host):
        run_remote(host, command, click.get_current_context(), **kwargs)


def _stall(stall_s: float) -> float | None:
    return None if stall_s == 0 else stall_s


def _warning(text: str) -> None:
    click.echo(text, err=True)


def _note(text: str) -> None:
    """A live note of the gate on stderr, on a line of its own (above a status line)."""
    click.echo(("\r\x1b[K" if sys.stderr.isatty() else "") + text, err=True)


def _render(
    verdict: Verdict, *, tail: int, as_json: bool, extra: dict[str, Any], line: bool = True
) -> None:
    """The verdict on stdout: its line (unless ``line`` is False: the keeper wrote it) and
    a failure's tail, or the JSON object."""
    # scrubbed: a token the server echoed must not reach the terminal
    if as_json:
        click.echo(json.dumps({**scrub(verdict).to_json(), **extra}))
        return
    lines = [verdict.line()] if line else []
    if not verdict.ok and tail > 0 and verdict.tail:
        shown = verdict.tail[-tail:]
        where = f" of {verdict.log_path}" if verdict.log_path else ""
        lines += [f"--- last {len(shown)} lines{where} ---", *shown]
    if lines:  # only what is printed is scrubbed: READY waits for nothing
        click.echo("\n".join(printable(line, keep_tab=True) for line in scrub(lines)))


def _exit(code: int) -> NoReturn:
    # SystemExit, not click's Exit: with standalone_mode=False click would turn Exit into
    # a return value, which ``python -m servegate`` does not pass on as the exit status
    sys.stdout.flush()
    sys.exit(code)


def _parse_env(pairs: tuple[str, ...]) -> dict[str, str]:
    env = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise UsageError(f"invalid --env {pair!r}: use --env NAME=VALUE.")
        env[key] = value
    return env


class _Stop(Exception):
    """SIGTERM arrived while a foreground server runs."""


class _Signals:
    """Under --foreground: SIGTERM raises _Stop, SIGINT KeyboardInterrupt; held from the
    verdict's line until the command can act on them (``release``), so that a READY line
    on the screen is always followed by a clean stop."""

    def __init__(self) -> None:
        self.held = False
        self.pending: int | None = None

    def install(self) -> None:
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, self._on_signal)

    def _on_signal(self, signum: int, frame: object) -> None:
        if self.held:
            self.pending = self.pending or signum
            return
        self._raise(signum)

    def release(self) -> None:
        """Raise the signal held since the verdict, if any; raise the next ones at once."""
        self.held = False
        if self.pending is not None:
            self._raise(self.pending)

    @staticmethod
    def _raise(signum: int) -> NoReturn:
        if signum == signal.SIGINT:
            raise KeyboardInterrupt
        raise _Stop


@click.command(
    epilog=examples(
        "servegate launch --engine sglang --port 30000 -- \\",
        "    python3 -m sglang.launch_server --model-path /models/m --port 30000",
        "servegate launch --engine vllm --timeout 1200 --stall 600 -- vllm serve /models/m",
        "servegate launch --ready 'Serving HTTP' --port 8123 -- python3 -m http.server 8123",
        "servegate launch -q --json --engine vllm -- vllm serve /models/m | jq .status",
    )
    + _EXIT_CODES,
    context_settings={"ignore_unknown_options": False, "allow_interspersed_args": False},
)
@_gate_options
@click.option("--name", help="Track the server under this name. [default: the engine's]")
@click.option(
    "--log",
    "log_path",
    metavar="FILE",
    help="Its log file. [default: NAME.log in the state folder]",
)
@click.option(
    "--env", "env_pairs", multiple=True, metavar="K=V", help="Extra environment variable."
)
@click.option("--cwd", metavar="DIR", help="Its working folder.")
@click.option("--keep", is_flag=True, help="On CRASH or TIMEOUT, leave the processes running.")
@click.option("--foreground", is_flag=True, help="Stay attached; Ctrl-C or SIGTERM stops it.")
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def launch(  # noqa: PLR0917 (click passes options positionally)
    engine: str,
    ready: tuple[str, ...],
    crash: tuple[str, ...],
    port: int | None,
    health_url: str | None,
    timeout_s: float | str,
    stall_s: float,
    sample_s: float,
    tail: int,
    as_json: bool,
    quiet: bool,
    host: str,
    name: str | None,
    log_path: str | None,
    env_pairs: tuple[str, ...],
    cwd: str | None,
    keep: bool,
    foreground: bool,
    command: tuple[str, ...],
) -> None:
    """Start COMMAND (after --) and gate it: READY, CRASH or TIMEOUT.

    READY: exit 0 and leave it running, tracked under --name (servegate ps lists it,
    servegate stop NAME ends its whole tree). CRASH or TIMEOUT: stop the whole tree
    (unless --keep), print the reason and the log tail, exit 1 or 124. --foreground
    stays attached after READY; the tree stops on Ctrl-C, SIGTERM, or when servegate
    itself dies, even by SIGKILL.
    """
    from servegate.gate.options import GateOptions
    from servegate.launch import launch as launch_server
    from servegate.startup.session import StartSession

    env = _parse_env(env_pairs)
    _remote(host, "launch", env=env, foreground=foreground, quiet=quiet)
    session = StartSession(
        engine=engine,
        command=command,
        env=env,
        via="launch",
        timeout=timeout_s,
        stream=sys.stderr,
        warn=_warning,
    )
    if not quiet and (chosen := session.timeout_note()):
        click.echo(chosen, err=True)
    out = _Output(
        tail=tail, as_json=as_json, quiet=quiet, foreground=foreground, session=session, env=env
    )
    options = GateOptions(
        engine=engine,
        ready=tuple(ready),
        crash=tuple(crash),
        port=port,
        health_url=health_url,
        timeout_s=session.timeout_s,
        stall_s=_stall(stall_s),
        sample_s=sample_s,
    )
    try:  # from the moment the SIGTERM handler is in place
        server = launch_server(
            list(command),
            options=options,
            observer=out,
            env=env,
            cwd=cwd,
            log_path=log_path,
            name=name,
            keep=keep,
            attached=foreground,
            line_fd=out.line_fd,
        )
    except _Stop:
        session.close()
        click.echo("stopped by SIGTERM before a verdict; the tree was stopped", err=True)
        _exit(143)
    except GateError as exc:
        if out.shown is None:
            _render(exc.verdict, tail=tail, as_json=as_json, extra=_startup(session, exc.verdict))
        if keep:
            click.echo("the processes were left running (--keep): see servegate ps", err=True)
        _exit(exc.exit_code)
    finally:
        session.close()
    _serve(server, out, foreground=foreground)


def _launching(tracked: Tracked, session: StartSession, env: dict[str, str]) -> None:
    """The launching line, once the command passed every check and runs."""
    argv = Redactor.collect(envs=[env]).command(tracked.command)
    click.echo(f"launching {printable(' '.join(argv)[:200])}", err=True)
    session.started(tracked)


def _line_fd(*, quiet: bool, as_json: bool, foreground: bool) -> int | None:
    """stdout, for the keeper to write the verdict line on the moment the gate decides
    (no hop through this process), where nothing this process writes can land after it:
    text output, and -q, or a stdout that is neither a terminal (the status line is
    redrawn there) nor where stderr goes (a phase line could follow it there). Not with
    --foreground: there the line waits until Ctrl-C and SIGTERM mean the stop after READY."""
    if as_json or foreground:
        return None
    fd = sys.stdout.fileno()
    if not quiet and (os.isatty(fd) or _same_file(fd, sys.stderr.fileno())):
        return None
    sys.stdout.flush()
    return fd


def _same_file(a: int, b: int) -> bool:
    """Whether two descriptors lead to the same file, pipe or terminal."""
    try:
        one, two = os.fstat(a), os.fstat(b)
    except OSError:
        return False
    return (one.st_dev, one.st_ino) == (two.st_dev, two.st_ino)


class _Output:
    """The launch's observer on the command line: the launching line, the gate's notes
    and the status line (unless -q); the verdict's line the moment the gate decides
    (written by the keeper where ``line_fd`` allows), the startup record after; under
    --json the object, which carries the record, waits for it."""

    def __init__(
        self,
        *,
        tail: int,
        as_json: bool,
        quiet: bool,
        foreground: bool,
        session: StartSession,
        env: dict[str, str],
    ) -> None:
        self.tail = tail
        self.as_json = as_json
        self.quiet = quiet
        self.env = env
        self.session = session
        self.signals = _Signals()
        if foreground:
            self.signals.install()
        self.line_fd = _line_fd(quiet=quiet, as_json=as_json, foreground=foreground)
        self.shown: Verdict | None = None  # the verdict, once printed

    def emit(self, event: LaunchEvent) -> None:
        from servegate.launch.events import (
            GateNote,
            StartBegan,
            TelemetrySampled,
            VerdictCompleted,
            VerdictDecided,
        )

        match event:
            case StartBegan(tracked=tracked) if not self.quiet:
                _launching(tracked, self.session, self.env)
            case GateNote(text=text) if not self.quiet:
                _note(text)
            case TelemetrySampled(snapshot=snapshot) if not self.quiet:
                self.session.status.resources(snapshot)
            case VerdictDecided(verdict=verdict):
                self.on_verdict(verdict)
            case VerdictCompleted(verdict=verdict):
                self.on_telemetry(verdict)
            case _:
                pass

    def on_verdict(self, verdict: Verdict) -> None:
        """The verdict line (and a failure's tail) at once, READY too; the startup record,
        the stop or the detach follow."""
        self.signals.held = True  # a Ctrl-C or SIGTERM from now on: the stop after READY
        self.session.status.stop()  # no status or phase line after the verdict
        if self.as_json:
            return
        _render(verdict, tail=self.tail, as_json=False, extra={}, line=self.line_fd is None)
        self.shown = verdict

    def on_telemetry(self, verdict: Verdict) -> None:
        """A CRASH or TIMEOUT's startup record, with its telemetry series (and under --json
        the object that carries it), before the tree is stopped."""
        if verdict.ok:
            return  # a READY start is recorded by _serve
        startup = _startup(self.session, verdict)
        if self.as_json:
            _render(verdict, tail=self.tail, as_json=True, extra=startup)
            self.shown = verdict
        elif startup:
            click.echo(self.session.note(), err=True)


def _serve(server: Server, out: _Output, *, foreground: bool) -> NoReturn:
    """A READY server, its line already printed: record the start, print the JSON object
    (--json) and how to stop it, or stay with it (--foreground)."""
    startup = _startup(out.session, server.verdict)
    if foreground:
        _run_foreground(server, out, startup=startup)
    if out.as_json:
        extra = {"name": server.name, **startup}
        _render(server.verdict, tail=out.tail, as_json=True, extra=extra)
    else:
        click.echo(out.session.note(), err=True)
    click.echo(
        f"{server.name}: pid {server.pid}, {server.url or 'no URL'}, log {server.log_path}; "
        f"stop it with: servegate stop {server.name}",
        err=True,
    )
    _exit(0)


def _startup(session: StartSession, verdict: Verdict) -> dict[str, Any]:
    """The verdict JSON's ``startup`` object (the history is written once, here)."""
    try:
        return {"startup": session.finish(verdict)}
    except Exception as exc:  # the record must never cost the verdict
        click.echo(f"servegate: startup record failed: {exc}", err=True)
        return {}


def _run_foreground(server: Server, out: _Output, *, startup: dict[str, Any]) -> NoReturn:
    """Stay with a READY server until it exits, Ctrl-C, or SIGTERM; then stop the tree."""
    try:
        if out.as_json:  # the line was printed at the verdict
            extra = {"name": server.name, **startup}
            _render(server.verdict, tail=out.tail, as_json=True, extra=extra)
        sys.stdout.flush()
        out.signals.release()  # a Ctrl-C or SIGTERM since the verdict: stop now
        click.echo(f"{server.name} is serving at {server.url}; Ctrl-C stops it", err=True)
        code = server.wait_exit()
    except (KeyboardInterrupt, _Stop):
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        report = server.stop()
        click.echo(f"{server.name}: {report.line()}", err=True)
        _exit(0)
    report = server.stop()
    click.echo(f"{server.name}: the server exited (code {code}); {report.line()}", err=True)
    _exit(1)


@click.command(
    epilog=examples(
        "nohup python3 -m sglang.launch_server --model-path /models/m > server.log 2>&1 &",
        "servegate wait --engine sglang --log server.log --pid $! --port 30000",
        "servegate wait --url http://127.0.0.1:8000 --timeout 600",
        "servegate wait -q --json --engine vllm --log vllm.log --pid 4242",
    )
    + _EXIT_CODES
)
@_gate_options
@click.option("--log", "log_path", metavar="FILE", help="Its log file, followed from the start.")
@click.option("--pid", type=int, help="Its main process: exiting is a CRASH.")
@click.option(
    "--url",
    metavar="URL",
    help="Its base URL, e.g. http://127.0.0.1:30000 (--engine generic: GET URL must give 2xx).",
)
def wait(  # noqa: PLR0917 (click passes options positionally)
    engine: str,
    ready: tuple[str, ...],
    crash: tuple[str, ...],
    port: int | None,
    health_url: str | None,
    timeout_s: float | str,
    stall_s: float,
    sample_s: float,
    tail: int,
    as_json: bool,
    quiet: bool,
    host: str,
    log_path: str | None,
    pid: int | None,
    url: str | None,
) -> None:
    """Gate a server someone else started, from its log, PID and/or URL. Never kills.

    The log is read from its start and followed (truncation and rotation too); the
    clock starts when the process did, if --pid is given.
    """
    from servegate.gate import wait as wait_server
    from servegate.startup.session import StartSession

    _remote(host, "wait", quiet=quiet)
    command, started_wall = _process_command(pid)
    session = StartSession(
        engine=engine,
        command=command,
        env=None,
        via="wait",
        timeout=timeout_s,
        stream=sys.stderr,
        warn=_warning,
    )
    if not quiet and (chosen := session.timeout_note()):
        click.echo(chosen, err=True)
    if not quiet:
        session.follow(log_path, started_wall)
    try:
        verdict = wait_server(
            log_path=log_path,
            pid=pid,
            url=url,
            engine=engine,
            ready=ready,
            crash=crash,
            port=port,
            health_url=health_url,
            timeout_s=session.timeout_s,
            stall_s=_stall(stall_s),
            sample_s=sample_s,
            on_note=None if quiet else _note,
            on_status=None if quiet else session.status.resources,
        )
    except GateError as exc:
        verdict, code = exc.verdict, exc.exit_code
    else:
        code = 0
    finally:
        session.close()  # no status or phase line after the verdict
    if as_json:  # the object carries the startup record: it waits for it
        _render(verdict, tail=tail, as_json=True, extra=_startup(session, verdict))
    else:  # the line first, the record after
        _render(verdict, tail=tail, as_json=False, extra={})
        _startup(session, verdict)
        click.echo(session.note(), err=True)
    _exit(code)


def _process_command(pid: int | None) -> tuple[list[str], float | None]:
    """A running server's command line and start time (for its history key), if known."""
    if pid is None:
        return [], None
    import psutil

    try:
        proc = psutil.Process(pid)
        return proc.cmdline(), proc.create_time()
    except psutil.Error:
        return [], None


@click.command(
    epilog=examples(
        "servegate stop sglang",
        "servegate stop --pid 12345 --grace 30",
        "servegate stop --pid 4242 --force     # a process servegate did not launch",
        "servegate stop vllm --json | jq .port_free",
    )
    + "\n\n\b\nExit codes: 0 stopped, 1 something survived or the port stayed busy,\n"
    "2 no such server, or a PID servegate did not launch (without --force)."
)
@click.argument("name", required=False)
@click.option(
    "--pid", type=int, help="Stop by PID: a tracked server's main process, or an orphan ps lists."
)
@click.option(
    "--force",
    is_flag=True,
    help="With --pid: stop that PID's tree even if servegate did not launch it.",
)
@click.option(
    "--grace",
    "grace_s",
    type=float,
    default=10.0,
    show_default=True,
    help="Seconds between SIGTERM and SIGKILL.",
)
@json_flag("the stop report")
@host_option("the server")
def stop(  # noqa: PLR0917 (click passes options positionally)
    name: str | None, pid: int | None, force: bool, grace_s: float, as_json: bool, host: str
) -> None:
    """Stop a server and its whole process tree, and confirm its port is free.

    Snapshots every descendant first (also those that left the group with setsid),
    sends SIGTERM to the group, waits --grace seconds, then SIGKILLs the group and
    every snapshotted survivor. Prints what was killed and how long it took. A server
    whose main process already exited is still stopped while orphans of it run (each
    PID checked against its recorded start time, so a reused PID is never killed); one
    with nothing left running is forgotten, and stop says how it had ended (exit 0).

    --pid takes a tracked server's main PID (its whole tree stops) or the PID of an
    orphan that servegate ps lists for a dead server (that orphan's tree stops). Any
    other PID is refused unless --force is given.
    """
    from servegate.launch import stop as stop_server

    _remote(host, "stop")
    if (name is None) == (pid is None):
        raise UsageError("pass a server NAME or --pid PID (one of them): see servegate ps.")
    if force and pid is None:
        raise UsageError("--force goes with --pid PID; stop NAME needs no --force.")
    if grace_s < 0:
        raise UsageError(f"--grace must be 0 or more seconds, not {grace_s}.")
    target = name if name is not None else pid
    assert target is not None
    stopped = stop_server(target, grace_s=grace_s, force=force)
    report = stopped.report
    if as_json:
        click.echo(json.dumps(stopped.to_json()))
    else:
        click.echo(f"{stopped.label}: {stopped.line()}")
        if report.killed:
            click.echo(f"killed: {' '.join(map(str, report.killed))}")
        if stopped.log_problem:
            click.echo(f"{stopped.label}: {stopped.log_problem}")
    _exit(0 if not report.survivors and report.port_free is not False else 1)


@click.command(
    epilog=examples("servegate ps", "servegate ps --json | jq '.[].name'", "servegate ps --prune")
)
@click.option("--prune", is_flag=True, help="First forget the servers that died (see STATE).")
@json_flag("the servers as a list")
@host_option("the servers run")
def ps(prune: bool, as_json: bool, host: str) -> None:
    """List the servers servegate launched (prints nothing if none).

    A server that died is listed as dead, with its exit code or signal and when, until
    servegate stop NAME or ps --prune forgets it; one whose main process exited while
    orphans of it run is listed as dead with them (servegate stop NAME ends them).
    """
    from servegate.launch import state

    _remote(host, "ps")
    for gone in state.prune_dead() if prune else []:
        click.echo(f"forgot {gone.name}: {gone.ended()}", err=True)
    servers = state.list_tracked()
    if as_json:
        click.echo(
            json.dumps(
                [
                    {
                        **t.to_json(),
                        "state": t.state(),
                        # a running server's children are its own: orphans outlive the main
                        "orphans": [] if t.alive() else [o.pid for o in t.orphans()],
                    }
                    for t in servers
                ]
            )
        )
        return
    if not servers:
        return
    now = time.time()
    rows: list[tuple[str, ...]] = [("NAME", "PID", "ENGINE", "URL", "UPTIME", "STATE", "LOG")]
    for t in servers:
        uptime = f"{now - t.create_time:.0f}s" if t.alive() else "-"
        shown = (t.name, str(t.pid), t.engine, t.url or "-", uptime, t.state(), t.log_path)
        rows.append(tuple(printable(cell) for cell in shown))  # a state file anyone could write
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    for row in rows:
        cells = [cell.ljust(width) for cell, width in zip(row[:-1], widths, strict=True)]
        click.echo("  ".join([*cells, row[-1]]))
