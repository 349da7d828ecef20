"""``servegate remote install HOST``, and ``--host`` for the commands that take it.

A command given ``--host HOST`` (not ``local``) runs on that host: the same command, with
the same options except ``--host`` (``--env`` values travel on the connection's stdin,
never in a process list), and its output is relayed line by line, so it prints what it
would print there, with the same exit code.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import click

from servegate._text import printable
from servegate.cli.options import examples, json_flag, quiet, write_json_file

__all__ = ["bench_from_option", "forward_args", "host_option", "remote", "run_bench", "run_remote"]

F = TypeVar("F", bound=Callable[..., Any])


def host_option(what: str = "it") -> Callable[[F], F]:
    """``--host HOST``: where the command runs (parameter ``host``)."""
    return click.option(
        "--host",
        default="local",
        show_default=True,
        metavar="HOST",
        help=f"Where {what} runs: local, ssh://[user@]host[:port] or a Host alias of "
        "~/.ssh/config (servegate remote install HOST first).",
    )


def bench_from_option() -> Callable[[F], F]:
    """``--bench-from remote|local``: where the load generator runs with --host."""
    return click.option(
        "--bench-from",
        type=click.Choice(["remote", "local"]),
        default=None,
        help="With --host: run the load generator on the host (no network in the "
        "measurement) or here, through the URL or an SSH tunnel. [default: remote]",
    )


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
        relay(text.replace(hint, f"{hint}--host {target.spec} "), err=True)

    def note(text: str) -> None:
        relay(text, err=True)

    output = Output(out=relay, err=err, note=None if quiet else note, warn=warn)
    if command in ("launch", "wait") and not foreground:
        code = run_job(target, command, argv, env=env, output=output)
    else:
        code = run_cli(target, command, argv, env=env, output=output, foreground=foreground)
    sys.stdout.flush()
    sys.exit(code)


def warn(text: str) -> None:
    """A warning of the remote layer about a host (a login banner, another build), on
    stderr also under -q."""
    click.echo(f"servegate: {text}", err=True)


def relay(text: str, *, err: bool = False) -> None:
    """One line the host sent, printed with its control characters escaped: a host
    cannot move the cursor, recolour or forge a line of this terminal."""
    click.echo(printable(text, keep_tab=True), err=err)


def run_bench(
    host: str,
    ctx: click.Context,
    *,
    bench_from: str,
    as_json: bool,
    json_file: Path | None,
    api_key: str | None,
) -> NoReturn:
    """``bench --host``: the load generator on the host (``bench_from`` remote), or here
    through the URL or an SSH tunnel (local). The results record which (``bench_from``,
    ``host``, ``via``) and hold the raw samples, copied back from the host."""
    from servegate.remote import Output, parse_host, run_cli
    from servegate.remote.tunnel import Tunnel, needs_tunnel

    target = parse_host(host)
    drop = ("host", "bench_from", "as_json", "json_file", "api_key")
    argv = forward_args(ctx, drop=drop)
    env = {"OPENAI_API_KEY": api_key} if api_key else {}  # never in a process list
    document = as_json or json_file is not None
    collected: list[str] = []
    out = collected.append if document else relay
    extra: dict[str, Any] = {"bench_from": bench_from, "host": target.spec}
    if bench_from == "remote":
        output = Output(out=out, err=lambda text: relay(text, err=True), warn=warn)
        code = run_cli(
            target, "bench", ["--json", *argv] if document else argv, env=env, output=output
        )
    else:
        url = str(ctx.params["url"])
        tunnel = Tunnel(target, url) if needs_tunnel(url) else None
        extra["via"] = "tunnel" if tunnel else "url"
        with tunnel or contextlib.nullcontext():
            if tunnel is not None:
                argv = [tunnel.rewrite(a) if a == url else a for a in argv]
                metrics = ctx.params.get("metrics_url")
                if metrics and needs_tunnel(metrics):
                    argv = [tunnel.rewrite(a) if a == metrics else a for a in argv]
            done = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "servegate",
                    "bench",
                    *(["--json"] if document else []),
                    *argv,
                ],
                stdout=subprocess.PIPE if document else None,
                text=True,
                env={**os.environ, **env},
                check=False,
            )
        code = done.returncode
        if document:
            collected.extend(done.stdout.splitlines())
    if document:
        results = _results(collected)
        if results is not None:
            results.update(extra)
            if json_file is not None:
                write_json_file(json_file, results)
            if as_json:
                click.echo(json.dumps(results))
        elif as_json:
            for line in collected:  # the error object, as the command printed it
                relay(line)
    sys.stdout.flush()
    sys.exit(code)


def _results(lines: list[str]) -> dict[str, Any] | None:
    """The bench results document among the command's stdout lines; None if it failed
    before one (its error object then stands as it is)."""
    for line in reversed(lines):
        if line.startswith("{"):
            with contextlib.suppress(ValueError):
                data = json.loads(line)
                if isinstance(data, dict) and "points" in data:
                    return data
    return None


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
