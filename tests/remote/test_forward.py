"""What ``--host`` sends: the options given on the command line, again, without --host;
and the spellings of a host."""

from __future__ import annotations

import json

import click
import click.testing
import pytest

from servegate.cli.remote import forward_args
from servegate.errors import UsageError
from servegate.remote.hosts import Host, is_local, parse_host


@click.command(context_settings={"allow_interspersed_args": False})
@click.option("--host", default="local")
@click.option("--port", type=int)
@click.option("--timeout", default="900")
@click.option("--ready", multiple=True)
@click.option("--env", "env_pairs", multiple=True)
@click.option("--json", "as_json", is_flag=True)
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def probe(**params: object) -> None:
    """A command shaped like launch."""
    ctx = click.get_current_context()
    click.echo(json.dumps(forward_args(ctx, drop=("host", "env_pairs"))))


def forwarded(*args: str) -> list[str]:
    result = click.testing.CliRunner().invoke(probe, list(args))
    assert result.exit_code == 0, result.output
    value = json.loads(result.output)
    assert isinstance(value, list)
    return value


def test_given_options_are_forwarded_and_host_env_and_defaults_are_not() -> None:
    assert forwarded(
        "--host",
        "gpu-1",
        "--port",
        "8000",
        "--ready",
        "a b",
        "--ready",
        "c",
        "--json",
        "--env",
        "HF_TOKEN=secret",
        "--",
        "vllm",
        "serve",
        "--port",
        "8000",
    ) == [
        "--port",
        "8000",
        "--ready",
        "a b",
        "--ready",
        "c",
        "--json",
        "--",
        "vllm",
        "serve",
        "--port",
        "8000",
    ]
    assert forwarded("--host", "gpu-1") == []


@pytest.mark.parametrize(
    ("spec", "host"),
    [
        ("ssh://gpu-1", Host("ssh://gpu-1", "gpu-1")),
        ("ssh://root@gpu-1:2222", Host("ssh://root@gpu-1:2222", "gpu-1", "root", 2222)),
        ("ssh://me@[::1]:22", Host("ssh://me@[::1]:22", "::1", "me", 22)),
        ("gpu-box", Host("gpu-box", "gpu-box")),
    ],
)
def test_host_spellings(spec: str, host: Host) -> None:
    assert parse_host(spec) == host
    assert not is_local(spec)


@pytest.mark.parametrize(
    "spec", ["ssh://root@gpu-1:0", "ssh://gpu-1:http", "http://gpu-1", "gpu 1", "ssh://-oProxy"]
)
def test_bad_hosts_are_exit_2_naming_the_spellings(spec: str) -> None:
    with pytest.raises(UsageError) as raised:
        parse_host(spec)
    assert raised.value.exit_code == 2
    assert "pass ssh://[user@]host[:port], a Host alias of ~/.ssh/config, or local." in str(
        raised.value
    )


def test_local_names() -> None:
    assert all(is_local(name) for name in ("local", "localhost", "127.0.0.1", None))
