"""``servegate remote install HOST``, and ``--host`` for the commands that take it.

A command given ``--host HOST`` (not ``local``) runs on that host: the same command, with
the same options except ``--host`` (``--env`` values travel on the connection's stdin,
never in a process list), and its output is relayed line by line, so it prints what it
would print there, with the same exit code.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Mapping
from typing import NoReturn

import click

from servegate.cli.options import examples, json_flag, quiet

__all__ = ["forward_args", "remote", "run_remote"]


def forward_args(ctx: click.Context, *, drop: Iterable[str] = ()) -> list[str]:
    """The options and arguments given on this command line, as arguments again
    (parameters named in ``drop`` left out; arguments after ``--``)."""
    dropped = set(drop)
    args: list[str] = []
    rest: list[str] = []
    for param in ctx.command.params:
        name = param.name or ""
        if name in dropped or name not in ctx.params:
            continue
        if ctx.get_parameter_source(name) is not click.core.ParameterSource.COMMANDLINE:
            continue
        value = ctx.params[name]
        if isinstance(param, click.Argument):
            values = value if isinstance(value, tuple | list) else (value,)
            rest.extend(str(v) for v in values if v is not None)
            continue
        assert isinstance(param, click.Option)
        spelling = next((o for o in param.opts if o.startswith("--")), param.opts[0])
        if param.is_flag:
            if value:
                args.append(spelling)
            elif param.secondary_opts:
                args.append(param.secondary_opts[0])
        elif param.multiple:
            for item in value:
                args += [spelling, str(item)]
        elif value is not None:
            args += [spelling, str(value)]
    return [*args, "--", *rest] if rest else args


def run_remote(
    host: str,
    command: str,
    ctx: click.Context,
    *,
    env: Mapping[str, str] | None = None,
    foreground: bool = False,
    quiet: bool = False,
    drop: Iterable[str] = ("host", "env_pairs"),
) -> NoReturn:
    """Run this command on ``host`` and exit with its exit code.

    ``launch`` and ``wait`` run as jobs that outlive a dropped connection (which is
    re-opened); ``launch --foreground`` and the others run inside one connection.
    """
    from servegate.remote import Output, parse_host, run_cli, run_job

    target = parse_host(host)
    argv = forward_args(ctx, drop=drop)
    hint = "stop it with: servegate stop "

    def err(text: str) -> None:
        click.echo(text.replace(hint, f"{hint}--host {target.spec} "), err=True)

    def note(text: str) -> None:
        click.echo(text, err=True)

    output = Output(out=click.echo, err=err, note=None if quiet else note)
    if command in ("launch", "wait") and not foreground:
        code = run_job(target, command, argv, env=env, output=output)
    else:
        code = run_cli(target, command, argv, env=env, output=output, foreground=foreground)
    sys.stdout.flush()
    sys.exit(code)


@click.group(
    epilog=examples(
        "servegate remote install ssh://root@gpu-1",
        "servegate remote install gpu-box --python python3.11",
        "servegate launch --host gpu-box --engine vllm -- vllm serve /models/m",
    )
)
def remote() -> None:
    """Servers on other hosts over SSH: install servegate there.

    Any command with --host HOST (ssh://[user@]host[:port] or a Host alias of
    ~/.ssh/config) runs on that host through the system's ssh, with your SSH setup as
    it is (config, agent, known_hosts, ProxyJump).
    """


@remote.command(
    epilog=examples(
        "servegate remote install ssh://root@gpu-1",
        "servegate remote install ssh://me@10.0.0.7:2222 --python /usr/bin/python3.11",
        "servegate remote install gpu-box --json | jq .copied_bytes",
    )
    + "\n\n\b\nExit codes: 0 installed, 2 bad host, unknown host key, login refused,\n"
    "or a Python there that cannot take these wheels."
)
@click.argument("host")
@click.option(
    "--python",
    "python",
    default="python3",
    show_default=True,
    help="The Python on the host that makes servegate's venv (same minor version as here).",
)
@json_flag("what was installed")
@quiet()
def install(host: str, python: str, as_json: bool, quiet: bool) -> None:
    """Install this servegate on HOST, in a venv of its own, with no internet there.

    The wheels of servegate and of its dependencies are packed from this installation
    and copied over SSH; dependencies already there at the same version are kept. The
    venv is ~/.servegate/venv on HOST ($SERVEGATE_REMOTE_DIR there moves it).
    """
    from servegate.remote import parse_host
    from servegate.remote.install import install as install_on

    target = parse_host(host)
    done = install_on(
        target,
        python=python,
        on_note=None if quiet else (lambda text: click.echo(text, err=True)),
    )
    click.echo(json.dumps(done.to_json()) if as_json else done.line())
