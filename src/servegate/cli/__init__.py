"""The ``servegate`` command line: parse, call the library, render, pick the exit code.

Each area keeps its commands in its own module here (``cli.gate``, ``cli.sim``,
``cli.bench``, ``cli.campaign``); they are imported only when their command runs, so
``servegate stop`` does not pay for the load generator's imports.

Exit codes: 0 ready or done; 1 crash or a threshold crossed; 124 timeout;
2 bad usage, bad config or bad input; 3 an internal error.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

import click

from servegate._version import __version__
from servegate.errors import ServegateError

# command name -> ("module:attribute" of its click command, one line of help)
COMMANDS: dict[str, tuple[str, str]] = {
    "launch": ("servegate.cli.gate:launch", "Start a server and gate it: READY, CRASH or TIMEOUT."),
    "wait": ("servegate.cli.gate:wait", "Gate a server someone else started; never kills."),
    "stop": ("servegate.cli.gate:stop", "Stop a tracked server and its whole process tree."),
    "ps": ("servegate.cli.gate:ps", "List the servers servegate launched and still tracks."),
    "bench": ("servegate.cli.bench:bench", "Benchmark an OpenAI-compatible server."),
    "run": ("servegate.cli.campaign:run", "Run a campaign: launch, gate, bench each variant."),
    "report": ("servegate.cli.campaign_report:report", "Render a stored campaign as a report."),
    "demo": ("servegate.cli.campaign:demo", "Run a whole campaign on the simulated engine."),
    "sim": ("servegate.cli.sim:sim", "Serve a simulated inference engine."),
}


class _LazyGroup(click.Group):
    """A group whose commands are imported when they are used."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        entry = COMMANDS.get(cmd_name)
        if entry is None:
            return None
        module_name, attr = entry[0].split(":")
        command = getattr(importlib.import_module(module_name), attr)
        assert isinstance(command, click.Command)
        return command

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
    Example:
      servegate launch --engine sglang --port 30000 -- \\
          python3 -m sglang.launch_server --model-path /models/m --port 30000
      servegate bench --url http://127.0.0.1:30000 --concurrency 1,16,64
      servegate stop sglang

    \b
    Exit codes: 0 ready/done, 1 crash or threshold crossed, 124 timeout,
    2 bad usage or input, 3 internal error.
    """


def error(message: str) -> None:
    """Print one ``Error: ...`` line to stderr."""
    click.echo(f"Error: {message}", err=True)


def main(argv: list[str] | None = None) -> Any:
    """Entry point of the ``servegate`` console script."""
    try:
        return cli.main(args=argv, prog_name="servegate", standalone_mode=False)
    except click.exceptions.Abort:
        error("interrupted.")
        sys.exit(130)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        sys.exit(2 if isinstance(exc, click.UsageError) else exc.exit_code)
    except ServegateError as exc:
        error(str(exc))
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        error("interrupted.")
        sys.exit(130)
    except BrokenPipeError:
        # stdout closed early (e.g. piped into head): not an error of ours
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        sys.exit(1)
