"""Every command speaks the grammar of ``servegate.cli.options``.

Each command of the command table (and each subcommand of its groups, ``remote install``)
is imported and its click parameters read: ``--json`` is a flag (JSON on stdout), an
option that writes a file is spelled ``--...-file``, a long-running command has
``-q/--quiet``, ``--engine`` is a choice of the profiles, defaults are shown one way,
and every help ends with examples, after the options.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import click
import click.testing
import pytest

from servegate.cli import COMMANDS, main
from servegate.cli.options import json_file, json_flag, not_stdout
from servegate.engines import ENGINE_NAMES
from servegate.sim.config import ENGINES as SIMULATED_ENGINES

# Commands that run for long (a server's start, a benchmark, a campaign, an install on a
# host) and print progress while they do. ``sim`` is not one of them: it is a server, and
# what it prints is the simulated engine's own log, which a gate reads.
LONG_RUNNING = ("launch", "wait", "bench", "run", "demo", "remote install")

# ``--engine`` offers every profile, except where a command serves only some of them.
ENGINE_CHOICES = {"sim": SIMULATED_ENGINES}

# Help that says an option writes a file (the spelling of outputs: "Write JSON to FILE",
# "Also write the report as JSON to FILE", "Append one JSON line per request").
# A default written another way than click's brackets: "(default: ...)", "Default: ...".
OTHER_DEFAULT = re.compile(r"\(default|(?<!\[)\bdefault:", re.IGNORECASE)

WRITES = re.compile(r"^(also )?(write|append)s?\b", re.IGNORECASE)


def command(name: str) -> click.Command:
    """The click command of ``name`` (``"stop"``, or ``"remote install"`` in a group),
    imported from the command table."""
    first, *rest = name.split()
    module_name, attr = COMMANDS[first][0].split(":")
    found = getattr(importlib.import_module(module_name), attr)
    for sub in rest:
        assert isinstance(found, click.Group), f"servegate {first} has no subcommands"
        found = found.commands[sub]
    assert isinstance(found, click.Command), f"{COMMANDS[first][0]} is not a click command"
    return found


def command_names() -> list[str]:
    """Every command a user can run: the table's, and the subcommands of its groups."""
    names = []
    for name in COMMANDS:
        names.append(name)
        group = command(name)
        if isinstance(group, click.Group):
            names += [f"{name} {sub}" for sub in group.commands]
    return names


NAMES = command_names()


def options(name: str) -> list[click.Option]:
    """The options of command ``name``."""
    return [param for param in command(name).params if isinstance(param, click.Option)]


def long_name(option: click.Option) -> str:
    """The option's long spelling (``--json``), or its first one."""
    return next((opt for opt in option.opts if opt.startswith("--")), option.opts[0])


def test_the_table_names_every_command() -> None:
    """The walk below covers the commands users see: each entry imports."""
    assert set(NAMES) >= {*LONG_RUNNING, "stop", "ps", "report", "check", "sim"}
    for name in NAMES:
        command(name)


@pytest.mark.parametrize("name", NAMES)
def test_json_is_a_flag(name: str) -> None:
    """``--json``, where a command has it, is a flag: JSON on stdout, never a FILE."""
    for option in options(name):
        if "--json" in option.opts:
            assert option.is_flag, f"servegate {name}: --json takes a value; use options.json_flag"
            assert option.name == "as_json", f"servegate {name}: --json's parameter is as_json"


@pytest.mark.parametrize("name", NAMES)
def test_options_that_write_a_file_end_in_file(name: str) -> None:
    """An option whose help says it writes (or appends to) a file is spelled ``--...-file``."""
    wrong = [
        f"servegate {name} {long_name(option)} writes a file: spell it {long_name(option)}-file"
        for option in options(name)
        if not option.is_flag
        and WRITES.match(option.help or "")
        and not long_name(option).endswith("-file")
    ]
    assert not wrong, "; ".join(wrong)


@pytest.mark.parametrize("name", LONG_RUNNING)
def test_long_running_commands_have_quiet(name: str) -> None:
    """Every long-running command has the ``-q/--quiet`` flag."""
    quiet = [option for option in options(name) if "--quiet" in option.opts]
    assert quiet, f"servegate {name} has no -q/--quiet; add options.quiet()"
    assert "-q" in quiet[0].opts and quiet[0].is_flag, f"servegate {name}: spell it -q/--quiet"


@pytest.mark.parametrize("name", NAMES)
def test_engine_is_a_choice_of_the_profiles(name: str) -> None:
    """``--engine``, where present, is a click.Choice built from the engine profiles."""
    for option in options(name):
        if "--engine" in option.opts:
            assert isinstance(option.type, click.Choice), (
                f"servegate {name} --engine is free text; use options.engine()"
            )
            expected = ENGINE_CHOICES.get(name, ENGINE_NAMES)
            assert tuple(option.type.choices) == tuple(expected), name
            assert set(expected) <= set(ENGINE_NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_defaults_are_shown_one_way(name: str) -> None:
    """A fixed default is shown by click (``show_default``); a computed one says so at the
    end of its help in click's brackets, ``[default: ...]``; never ``(default ...)``."""
    defaults = command(name).make_context(name, [], resilient_parsing=True).params
    wrong = []
    for option in options(name):
        text = option.help or ""
        spelled = f"servegate {name} {long_name(option)}"
        fixed = defaults.get(option.name or "") not in (None, False, (), "")
        if OTHER_DEFAULT.search(text):
            wrong.append(f"{spelled}: write its default as [default: ...] at the end")
        elif "[default:" in text and not text.rstrip().endswith("]"):
            wrong.append(f"{spelled}: [default: ...] ends the help")
        elif "[default:" in text and option.show_default:
            wrong.append(f"{spelled}: its default is shown twice")
        elif "[default:" not in text and fixed and not (option.is_flag or option.show_default):
            wrong.append(f"{spelled}: show its default {defaults[option.name or '']!r}")
    assert not wrong, "; ".join(wrong)


@pytest.mark.parametrize("name", NAMES)
def test_help_ends_with_examples_after_the_options(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every command's epilog holds "Examples:", printed by ``--help`` after the options."""
    epilog = command(name).epilog or ""
    assert "Examples:" in epilog, (
        f"servegate {name}: its epilog has no Examples:; use options.examples"
    )
    try:
        code = main([*name.split(), "--help"])  # click's --help returns its exit code here
    except SystemExit as exited:
        code = exited.code
    assert code in (0, None)
    text = capsys.readouterr().out
    assert "Options:" in text and "Examples:" in text, text
    assert text.index("Examples:") > text.index("Options:"), text
    examples = text[text.index("Examples:") :].splitlines()[1:]
    assert any(line.strip().startswith("servegate ") for line in examples), text


def test_json_file_never_means_stdout(tmp_path: Path) -> None:
    """``--json-file -`` is refused with one sentence naming ``--json``, and writes nothing."""

    @click.command()
    @json_flag("the result")
    @json_file("the result")
    def write(as_json: bool, json_file: Path | None) -> None:
        assert json_file is not None
        json_file.write_text("{}\n")

    result = click.testing.CliRunner().invoke(write, ["--json-file", "-"])
    assert result.exit_code == 2
    assert "--json-file writes a file; print on stdout with --json" in result.output
    written = tmp_path / "out.json"
    assert click.testing.CliRunner().invoke(write, ["--json-file", str(written)]).exit_code == 0
    assert written.read_text() == "{}\n"


@pytest.mark.parametrize("name", NAMES)
def test_a_file_option_given_dash_names_a_flag_the_command_has(name: str) -> None:
    """``--X-file -`` is refused (exit 2) with a fix this command offers: ``--X`` where it
    prints X on stdout, else a file name (``report --html-file -``: there is no --html)."""
    spellings = {opt for option in options(name) for opt in option.opts}
    for option in options(name):
        if option.callback is not not_stdout:
            continue
        flag = long_name(option)
        result = click.testing.CliRunner().invoke(command(name), [flag, "-"])
        assert result.exit_code == 2, result.output
        named = re.findall(r"(?<![\w-])--[a-z][\w-]*", result.output.split("Error:")[-1])
        assert named, result.output
        for suggested in named:
            assert suggested in spellings, f"servegate {name} {flag} - suggests {suggested}"
