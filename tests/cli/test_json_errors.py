"""``--json`` keeps its promise on failure: one ``servegate.error/1`` object on stdout.

A script that runs ``servegate ... --json`` and parses stdout must always get exactly
one JSON object, also when the command line is wrong (click's own usage errors
included), when the input is bad, and when servegate itself fails; the human message
still goes to stderr.
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import click
import pytest

from servegate.cli import COMMANDS, main, old_spelling
from servegate.errors import BenchError

PY = sys.executable


def servegate(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """Run ``python -m servegate ARGS`` to completion."""
    return subprocess.run(
        [PY, "-m", "servegate", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def servegate_in(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run ``python -m servegate ARGS`` to completion in ``folder``."""
    return subprocess.run(
        [PY, "-m", "servegate", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=folder,
    )


def only_object(stdout: str) -> dict[str, Any]:
    """The single JSON object that makes up the whole of ``stdout``."""
    assert stdout.endswith("\n") and stdout.count("\n") == 1, repr(stdout)
    data = json.loads(stdout)
    assert isinstance(data, dict)
    return data


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["stop", "--json"], "pass a server NAME or --pid PID"),
        (["stop", "nobody", "--json"], "no running server named 'nobody'"),
        (["stop", "--json", "nobody"], "no running server named 'nobody'"),
        (["stop", "--json", "--pid", "twelve"], "'twelve' is not a valid integer"),
        (["ps", "--json", "--bogus"], "No such option '--bogus'"),
        (["wait", "--json"], "wait needs something to watch"),
        (["wait", "--json", "--timeout", "soon", "--ready", "x"], "'soon' is not a valid float"),
        (["launch", "--json", "--ready", "x"], "missing command"),
        (["launch", "--engine", "ollama", "--json", "--", PY, "-V"], "unknown engine 'ollama'"),
        (["launch", "--json", "--port"], "Option '--port' requires an argument"),
        (["bench", "--json"], "Missing option '--url'"),
        (
            ["bench", "--url", "http://127.0.0.1:9", "--json", "--concurrency", "x"],
            "--concurrency 'x' must be positive integers",
        ),
        (["report", "--json", "--db", "no-such.db"], "no database at no-such.db"),
        (["no-such-command", "--json"], "No such command 'no-such-command'"),
        (["--json", "ps"], "No such option '--json'"),
        (["remote", "install", "--json"], "Missing argument 'HOST'"),
        (["remote", "install", "ssh://", "--json"], "'ssh://' is not a host"),
        (["remote", "--json", "install", "gpu-box"], "No such option '--json'"),
        (["report", "--html-file", "-", "--json"], "pass a file name, e.g. --html-file report"),
    ],
)
def test_usage_errors_print_one_error_object(args: list[str], message: str) -> None:
    """A usage error under --json prints one error object and exits 2."""
    result = servegate(*args)
    assert result.returncode == 2, result.stderr
    data = only_object(result.stdout)
    assert data == {"schema": "servegate.error/1", "error": data["error"], "exit_code": 2}
    assert message in data["error"]
    assert message in result.stderr  # the human message still goes to stderr


@pytest.mark.parametrize(
    "args",
    [
        ["stop"],
        ["launch", "--ready", "x", "--port", "abc", "--", PY, "-c", "pass", "--json"],
        ["bench", "--url", "http://127.0.0.1:9", "--json-file", "out.json", "--concurrency", "x"],
        ["report", "--json-file", "out.json", "--db", "no-such.db"],
    ],
)
def test_without_json_on_stdout_errors_stay_on_stderr(args: list[str]) -> None:
    """Without --json (or with --json-file FILE, or --json in the server's own command
    after --), an error writes nothing on stdout."""
    result = servegate(*args)
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr.startswith(("Error: ", "Usage: "))


@pytest.mark.parametrize(
    "args",
    [
        ["ps", "--json", "out.json"],
        ["ps", "--json", "-"],
        ["ps", "--json=out.json"],
        ["ps", "--json", "out"],
        ["stop", "--json", "-"],
        ["stop", "--json", "out.json"],
        ["dump", "nobody", "--json", "out.json"],
        ["bench", "--url", "http://127.0.0.1:9", "--json", "out.json"],
        ["bench", "--url", "http://127.0.0.1:9", "--json", "-"],
        ["report", "--json", "out.json", "--db", "x.db"],
        ["report", "--markdown", "out.md", "--json", "--db", "x.db"],
        ["check", "--json", "-"],
    ],
)
def test_old_json_file_spelling_names_json_file(args: list[str], tmp_path: Path) -> None:
    """``--json FILE`` (or ``--json -``) is the old spelling: one sentence naming
    ``--json-file FILE``, exit 2, one error object on stdout, and no file written."""
    result = servegate_in(tmp_path, *args)
    flag = next(arg.partition("=")[0] for arg in args if arg.startswith(("--json", "--markdown")))
    message = old_spelling(flag)
    assert result.returncode == 2, result.stderr
    assert result.stderr == f"Error: {message}\n"
    assert f"{flag}-file FILE" in message and message.count(". ") == 0
    assert only_object(result.stdout) == {
        "schema": "servegate.error/1",
        "error": message,
        "exit_code": 2,
    }
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "args",
    [
        ["report", "--markdown", "out.md", "--db", "x.db"],
        ["report", "--csv", "-"],
        ["check", "--markdown=summary.md"],
    ],
)
def test_old_markdown_and_csv_file_spellings(args: list[str], tmp_path: Path) -> None:
    """``--markdown FILE`` and ``--csv FILE`` name their ``-file`` spelling the same way;
    without --json, nothing goes to stdout."""
    result = servegate_in(tmp_path, *args)
    flag = args[1].partition("=")[0]
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == f"Error: {old_spelling(flag)}\n"
    assert f"{flag}-file FILE" in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_unreachable_server_under_bench_json_stdout(tmp_path: Path) -> None:
    """bench --json against a port nobody listens on prints an error object (exit 1)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))  # held, never listening: connections are refused
        port = sock.getsockname()[1]
        result = servegate("bench", "--url", f"http://127.0.0.1:{port}", "--json")
    assert result.returncode == 1, result.stderr
    data = only_object(result.stdout)
    assert (data["schema"], data["exit_code"]) == ("servegate.error/1", 1)
    assert data["error"] in result.stderr


def test_remote_install_that_cannot_connect_prints_one_error_object() -> None:
    """remote install HOST --json (a subcommand of a group) that fails prints one error
    object like every other command, not an empty stdout."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))  # held, never listening: connections are refused
        port = sock.getsockname()[1]
        result = servegate("remote", "install", f"ssh://nobody@127.0.0.1:{port}", "--json")
    assert result.returncode == 2, result.stderr
    data = only_object(result.stdout)
    assert (data["schema"], data["exit_code"]) == ("servegate.error/1", 2)
    assert data["error"].startswith(f"cannot connect to ssh://nobody@127.0.0.1:{port}")
    assert f"Error: {data['error']}" in result.stderr


@click.command()
@click.option("--json", "as_json", is_flag=True)
@click.option("--fail", type=click.Choice(["internal", "interrupt", "after-output"]))
def misfire(as_json: bool, fail: str) -> None:
    """A command that fails the way real commands can: a bug, Ctrl-C, an error after its
    result was printed."""
    if fail == "internal":
        raise ZeroDivisionError("division by zero in a misbehaving command")
    if fail == "interrupt":
        raise KeyboardInterrupt
    click.echo(json.dumps({"schema": "test.result/1"}))
    raise BenchError("2 of 4 requests failed (50.0%), above --max-error-rate 0.1.")


@pytest.fixture
def with_misfire(monkeypatch: pytest.MonkeyPatch) -> None:
    """Register the misfiring command in the CLI's command table."""
    monkeypatch.setitem(COMMANDS, "misfire", (f"{__name__}:misfire", "Fail on purpose."))


@pytest.mark.usefixtures("with_misfire")
@pytest.mark.parametrize(
    ("fail", "code", "message"),
    [
        ("internal", 3, "internal error: ZeroDivisionError: division by zero"),
        ("interrupt", 130, "interrupted"),
    ],
)
def test_internal_error_and_interrupt_print_one_error_object(
    fail: str, code: int, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """An unexpected exception exits 3 (Ctrl-C 130) with one error object under --json."""
    with pytest.raises(SystemExit) as exited:
        main(["misfire", "--json", "--fail", fail])
    assert exited.value.code == code
    out, err = capsys.readouterr()
    data = only_object(out)
    assert data == {"schema": "servegate.error/1", "error": data["error"], "exit_code": code}
    assert message in data["error"]
    assert err.lstrip().startswith("Error: ") and message in err


@pytest.mark.usefixtures("with_misfire")
def test_internal_error_without_json_is_exit_3_on_stderr(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """An unexpected exception is exit 3 with an 'Error:' line and its traceback on stderr."""
    with pytest.raises(SystemExit) as exited:
        main(["misfire", "--fail", "internal"])
    assert exited.value.code == 3
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("Error: internal error: ZeroDivisionError: division by zero")
    assert "Traceback (most recent call last)" in err


@pytest.mark.usefixtures("with_misfire")
def test_an_error_after_the_result_adds_no_second_object(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """An error raised after the command printed its JSON result leaves that one object."""
    with pytest.raises(SystemExit) as exited:
        main(["misfire", "--json", "--fail", "after-output"])
    assert exited.value.code == 1
    out, err = capsys.readouterr()
    assert only_object(out) == {"schema": "test.result/1"}
    assert "above --max-error-rate" in err


def test_sigterm_before_the_verdict_prints_one_error_object() -> None:
    """launch --json --foreground stopped by SIGTERM before a verdict: exit 143 and one
    error object, not an empty stdout."""
    misbehave = Path(__file__).parents[1] / "gate" / "scripts" / "misbehave.py"
    server = [PY, str(misbehave), "stall", "Loading weights"]
    with subprocess.Popen(
        [
            PY,
            "-m",
            "servegate",
            "launch",
            "--json",
            "--foreground",
            "--ready",
            "never",
            "--",
            *server,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        assert proc.stderr is not None
        first = proc.stderr.readline()  # written after the SIGTERM handler is in place
        assert first.startswith("launching "), first
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    data = only_object(out)
    assert (data["schema"], data["exit_code"]) == ("servegate.error/1", 143)
    assert "stopped by SIGTERM before a verdict" in err
