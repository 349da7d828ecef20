"""The options every command spells the same way.

The grammar, for every command:

- ``--json`` is a flag: the command's result as one JSON document on stdout, instead of
  the human output (errors too: one ``servegate.error/1`` object). ``--json-file FILE``
  writes the same document to FILE, beside the human output. Other formats follow the
  same pattern (``--markdown`` / ``--markdown-file FILE``).
- ``-q/--quiet`` on every command that runs for long: no progress lines; results,
  warnings and failures still print.
- ``--engine`` is a choice among the engine profiles.
- A fixed default is shown by click (``[default: 900]``); a default that depends on
  something else says so in the same brackets at the end of its help
  (``[default: the command's --port]``).
- Every help ends with examples, after the options (``examples(...)``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from servegate._files import write_output
from servegate.engines import ENGINE_NAMES, get_profile

F = TypeVar("F", bound=Callable[..., Any])


def json_flag(what: str) -> Callable[[F], F]:
    """``--json``: print ``what`` as one JSON document on stdout (parameter ``as_json``)."""
    return click.option("--json", "as_json", is_flag=True, help=f"Print {what} as JSON on stdout.")


def json_file(what: str) -> Callable[[F], F]:
    """``--json-file FILE``: also write ``what`` as JSON to FILE (parameter ``json_file``);
    ``-`` is refused (stdout is ``--json``)."""
    return click.option(
        "--json-file",
        "json_file",
        type=click.Path(dir_okay=False, path_type=Path),
        metavar="FILE",
        callback=not_stdout,
        help=f"Also write {what} as JSON to FILE.",
    )


def not_stdout(ctx: click.Context, param: click.Parameter, value: Path | None) -> Path | None:
    """Refuse ``-`` as a ``--*-file FILE`` value: files never mean stdout."""
    if value is not None and str(value) == "-":
        flag = (param.opts or ["--json-file"])[0]
        stdout_flag = flag.removesuffix("-file")
        spellings = {opt for option in ctx.command.params for opt in option.opts}
        if stdout_flag in spellings:
            fix = f"print on stdout with {stdout_flag} instead of {flag} -"
        else:  # --html-file: no --html, the report is a file with its plots
            name = stdout_flag.removeprefix("--")
            fix = f"it has no stdout form, so pass a file name, e.g. {flag} report.{name}"
        raise click.BadParameter(f"{flag} writes a file; {fix}.", ctx=ctx, param=param)
    return value


def write_json_file(path: Path, document: dict[str, Any]) -> None:
    """A ``--json-file``: replaced atomically (a crash keeps what was written before),
    written in place when it is a FIFO or a device (``servegate._files``)."""
    write_output(path, json.dumps(document) + "\n", flag="--json-file")


def quiet() -> Callable[[F], F]:
    """``-q/--quiet``: no progress lines (parameter ``quiet``)."""
    return click.option(
        "-q",
        "--quiet",
        is_flag=True,
        help="No progress lines; results, warnings and failures still print.",
    )


class FiniteRange(click.FloatRange):
    """A ``click.FloatRange`` that refuses ``nan`` and ``inf``: ``nan`` passes every
    bound check (each comparison with it is False) and broke the statistics later."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number; give one such as 0.95.", param, ctx)
        return number


class EngineChoice(click.Choice[str]):
    """The engine profiles as a choice; an unknown name is the one-sentence usage error of
    ``get_profile`` (naming the choices), not click's usage block."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and value not in self.choices:
            get_profile(value)  # raises UsageError naming the choices
        return super().convert(value, param, ctx)


def engine(help: str, *, default: str | None = "generic") -> Callable[[F], F]:
    """``--engine``: one of the engine profiles (parameter ``engine``)."""
    return click.option(
        "--engine",
        type=EngineChoice(ENGINE_NAMES),
        default=default,
        show_default=default is not None,
        help=help,
    )


def examples(*lines: str) -> str:
    """A command's epilog: its examples, printed after the options."""
    return "\b\nExamples:\n" + "\n".join(f"  {line}" for line in lines)
