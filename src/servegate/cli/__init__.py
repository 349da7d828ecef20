"""The ``servegate`` command line: parse, call the library, render, pick the exit code.

Each area keeps its commands in its own module here (``cli.gate``, ``cli.sim``,
``cli.bench``, ``cli.campaign``); they are imported only when their command runs, so
``servegate stop`` does not pay for the load generator's imports.

Exit codes: 0 ready or done; 1 crash or a threshold crossed; 124 timeout;
2 bad usage, bad config or bad input; 3 an internal error. ``--json`` is a flag in every
command (``cli.options``): under it stdout always holds exactly one JSON object, also when
the command fails (see ``main``); ``--json-file FILE`` writes a file and never stdout.
"""

from __future__ import annotations

import contextlib
import errno
import importlib
import json
import os
import sys
import traceback
from collections.abc import Iterable, Sequence
from typing import Any, NoReturn, TextIO, cast

import click

from servegate._version import __version__
from servegate.errors import ServegateError, error_json

# command name -> ("module:attribute" of its click command, one line of help)
COMMANDS: dict[str, tuple[str, str]] = {
    "launch": ("servegate.cli.gate:launch", "Start a server and gate it: READY, CRASH or TIMEOUT."),
    "wait": ("servegate.cli.gate:wait", "Gate a server someone else started; never kills."),
    "stop": ("servegate.cli.gate:stop", "Stop a tracked server and its whole process tree."),
    "ps": ("servegate.cli.gate:ps", "List the servers servegate launched and still tracks."),
    "dump": ("servegate.cli.dump:dump", "Print the stacks of every process of a server."),
    "history": ("servegate.cli.history:history", "List past starts with their phases and ETA."),
    "bench": ("servegate.cli.bench:bench", "Benchmark an OpenAI-compatible server."),
    "run": ("servegate.cli.campaign:run", "Run a campaign: launch, gate, bench each variant."),
    "report": ("servegate.cli.campaign_report:report", "Render a stored campaign as a report."),
    "check": ("servegate.cli.check:check", "Gate CI: exit 1 on a regression against a baseline."),
    "compare": ("servegate.cli.compare:compare", "Compare bench result files B against A."),
    "demo": ("servegate.cli.campaign:demo", "Run a whole campaign on the simulated engine."),
    "tune": ("servegate.cli.tune:tune", "Search server flags with Optuna: each trial an attempt."),
    "sim": ("servegate.cli.sim:sim", "Serve a simulated inference engine."),
    "remote": ("servegate.cli.remote:remote", "Install servegate on a host reached over SSH."),
}


def _load(name: str) -> click.Command | None:
    """The click command called ``name``, imported now; None if there is none."""
    entry = COMMANDS.get(name)
    if entry is None:
        return None
    module_name, attr = entry[0].split(":")
    command = getattr(importlib.import_module(module_name), attr)
    assert isinstance(command, click.Command)
    return command


class _LazyGroup(click.Group):
    """A group whose commands are imported when they are used."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        return _load(cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # one line each, from the table: listing commands imports none of them
        with formatter.section("Commands"):
            formatter.write_dl([(name, entry[1]) for name, entry in COMMANDS.items()])


@click.group(
    cls=_LazyGroup,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.version_option(__version__, prog_name="servegate")
def cli() -> None:
    """Launch an LLM inference server, gate it (READY / CRASH / TIMEOUT), benchmark it,
    and compare it with a baseline.

    \b
    Examples:
      servegate launch --engine sglang --port 30000 -- \\
          python3 -m sglang.launch_server --model-path /models/m --port 30000
      servegate bench --url http://127.0.0.1:30000 --concurrency 1,16,64
      servegate stop sglang

    \b
    Exit codes: 0 ready/done, 1 crash or threshold crossed, 124 timeout,
    2 bad usage or input, 3 internal error.
    """


# the flags that print a format on stdout, and what they print
FORMATS = {"--json": "JSON", "--markdown": "markdown", "--csv": "CSV"}
_SUFFIXES = (".json", ".md", ".markdown", ".csv", ".html")  # what an old FILE value ends in


def old_spelling(flag: str) -> str:
    """The usage error of an old ``--json FILE`` (``--markdown FILE``, ...) spelling."""
    what = FORMATS.get(flag, flag.removeprefix("--"))
    return (
        f"{flag} takes no value: it prints {what} on stdout; "
        f"write {what} to a file with {flag}-file FILE."
    )


def error(message: str) -> None:
    """Print one ``Error: ...`` line to stderr."""
    click.echo(f"Error: {message}", err=True)


def json_requested(args: Sequence[str]) -> bool:
    """Whether a command line asks for JSON on stdout (``--json``).

    Read from the raw arguments, before click parses them, so that click's own usage
    errors are answered in JSON too. Option values are skipped by the command's own
    option table, and nothing after ``--`` (a server's command line) counts.
    """
    return _scan(args)[0]


def _scan(args: Sequence[str]) -> tuple[bool, str | None]:
    """``(json_requested(args), the flag given a value in an old spelling, or None)``.

    The old spellings (``--json FILE``, ``--json -``, ``--json=FILE``; the same for
    ``--markdown`` and ``--csv``) are recognised where the flag takes no value; after a
    command that takes arguments, a value is an old spelling only when it is ``-`` or
    ends like a file of a format (``stop --json NAME`` names a server).
    """
    index = 0
    while index < len(args) and args[index].startswith("-") and args[index] != "--":
        if args[index] == "--json":
            return True, None  # before the command's name: wrong, and to be answered in JSON
        index += 1  # the group's own options (--help, --version) take no value
    if index >= len(args) or args[index] == "--":
        return False, None
    command = _command(args[index])
    index += 1
    # a group's options are its subcommand's (remote install HOST --json)
    while isinstance(command, click.Group) and index < len(args):
        if args[index].startswith("-"):
            return args[index] == "--json", None  # as before the command's name
        command = command.get_command(click.Context(command), args[index])
        index += 1
    arity, interspersed, takes_arguments = _option_table(command)
    requested, old = False, None
    rest = args[index:]
    index = 0
    while index < len(rest):
        arg = rest[index]
        if arg == "--":
            break
        name, equals, value = arg.partition("=")
        if name in FORMATS and arg.startswith("--"):
            requested = requested or name == "--json"
            if not equals:
                value = rest[index + 1] if index + 1 < len(rest) else ""
            stray = value == "-" or (
                value[:1] not in ("", "-") and (value.endswith(_SUFFIXES) or not takes_arguments)
            )
            if old is None and arity.get(name) == 0 and (equals or stray):
                old = name
        elif arg.startswith("--") and equals:
            pass  # an option and its value in one argument
        elif arg.startswith("-") and arg != "-":
            index += arity.get(arg, 0)
        elif not interspersed:
            break  # the first argument ends the options (launch's COMMAND)
        index += 1
    return requested, old


def _command(name: str) -> click.Command | None:
    """Command ``name``, or None when there is none or it cannot be imported."""
    try:
        return _load(name)
    except Exception:  # an unimportable command fails later, as an internal error
        return None


def _option_table(command: click.Command | None) -> tuple[dict[str, int], bool, bool]:
    """``command``'s options (spelling -> how many values follow it), whether options
    may follow its arguments, and whether it takes arguments; unknown: no options."""
    if command is None:
        return {}, True, False
    arity: dict[str, int] = {}
    for param in command.params:
        if isinstance(param, click.Option):
            values = 0 if param.is_flag or param.count else param.nargs
            arity.update(dict.fromkeys((*param.opts, *param.secondary_opts), values))
    interspersed = command.context_settings.get(
        "allow_interspersed_args", command.allow_interspersed_args
    )
    takes_arguments = any(isinstance(param, click.Argument) for param in command.params)
    return arity, bool(interspersed), takes_arguments


class _WatchedStdout:
    """``sys.stdout``, noting whether anything was written to it."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.written = False

    def write(self, text: str) -> int:
        if text:  # click probes streams with an empty write
            self.written = True
        return self.stream.write(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


def main(argv: list[str] | None = None) -> Any:
    """Entry point of the ``servegate`` console script.

    Under ``--json`` a command that fails before it printed its result prints one
    ``servegate.error/1`` object on stdout instead (``{"schema": "servegate.error/1",
    "error": "...", "exit_code": 2}``), for usage errors and internal errors alike; the
    human message goes to stderr either way.
    """
    args = sys.argv[1:] if argv is None else list(argv)
    requested, old_flag = _scan(args)
    watched = _WatchedStdout(sys.stdout) if requested else None
    if watched is not None:
        sys.stdout = cast(TextIO, watched)
    try:
        return _main(args, watched, old_flag=old_flag)
    finally:
        if watched is not None and sys.stdout is cast(TextIO, watched):
            sys.stdout = watched.stream


def _output_failed(exc: OSError) -> None:
    """Exit 2 in one sentence when ``exc`` is a full disk under the output (stdout
    redirected to a file, or a file written without ``_files``, which says so itself);
    return for any other error."""
    if exc.errno not in (errno.ENOSPC, errno.EDQUOT):
        return
    error(
        "cannot write the output: the disk is full (no space left on the device); "
        "free some space or write the output to another disk."
    )
    with contextlib.suppress(OSError, ValueError):  # a stream without a descriptor
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # drop the buffer
    sys.exit(2)


def _main(args: list[str], watched: _WatchedStdout | None, *, old_flag: str | None) -> Any:
    def fail(code: int, message: str, data: dict[str, Any] | None = None) -> NoReturn:
        # the one object of --json, unless the command already printed its result
        if watched is not None and not watched.written:
            click.echo(json.dumps(data or error_json(message, code)))
        sys.stdout.flush()
        sys.exit(code)

    try:
        if old_flag is not None:
            raise click.UsageError(old_spelling(old_flag))
        result = cli.main(args=args, prog_name="servegate", standalone_mode=False)
        sys.stdout.flush()  # a full disk under stdout: said here, not at the exit's flush
        return result
    except click.exceptions.Abort:
        error("interrupted.")
        fail(130, "interrupted.")
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        fail(2 if isinstance(exc, click.UsageError) else exc.exit_code, exc.format_message())
    except ServegateError as exc:
        error(str(exc))
        fail(exc.exit_code, str(exc), exc.to_json())
    except KeyboardInterrupt:
        error("interrupted.")
        fail(130, "interrupted.")
    except BrokenPipeError:
        # stdout closed early (e.g. piped into head): not an error of ours
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        sys.exit(1)
    except SystemExit as exc:
        # a command that ends itself has printed its result, or says why on stderr
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if code not in (0, 1, 124):
            fail(code, f"servegate stopped with exit code {code} before a result; see stderr.")
        try:
            sys.stdout.flush()
        except OSError as flush_error:
            _output_failed(flush_error)
        raise
    except Exception as exc:
        if isinstance(exc, OSError):
            _output_failed(exc)
        message = f"internal error: {type(exc).__name__}: {exc}"
        error(f"{message} (a bug in servegate; please report it with this traceback)")
        traceback.print_exc(file=sys.stderr)
        fail(3, message)
