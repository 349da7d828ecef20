"""A token exported in the shell and URL credentials, echoed by a server at start, reach
no database byte, no report format, no progress line and no --dry-run line."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

TINY = str(Path(__file__).parent / "launch" / "scripts" / "tiny_server.py")
TOKEN = "hf_exported_0123456789abcdef"
URL = "https://alice:pa55w0rd-x@models.example.com/m"
SECRETS = (TOKEN, "pa55w0rd-x")


def run(*args: str | Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """servegate ARGS under umask 077, to completion."""
    return subprocess.run(
        ["sh", "-c", 'umask 077; exec "$@"', "sh", sys.executable, "-m", "servegate"]
        + [str(a) for a in args],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
        env=env,
    )


def campaign_file(folder: Path) -> Path:
    """A campaign whose server echoes HF_TOKEN and MODEL_URL, then runs the simulator;
    its second variant crashes at start."""
    text = textwrap.dedent(
        f"""\
        [campaign]
        name = "secrets"
        baseline = "baseline"

        [server]
        engine = "sglang"
        command = "{{python}} {TINY} sim {{port}} HF_TOKEN MODEL_URL --source {URL}"
        port = "auto"
        timeout_s = 60
        stop_grace_s = 5
        release_timeout_s = 10
        env = {{ MODEL_URL = "{URL}" }}

        [bench]
        warmup = 1
        input_len = 32
        output_len = 4
        concurrency = [2]
        requests = 4
        repeats = 1

        [[variant]]
        name = "baseline"

        [[variant]]
        name = "crash"
        args = "--crash"
        """
    )
    path = folder / "secrets.toml"
    path.write_text(text, encoding="utf-8")
    return path


def assert_clean(where: str, data: bytes) -> None:
    """No secret in ``data``."""
    for secret in SECRETS:
        assert secret.encode() not in data, f"{secret!r} found in {where}"


@pytest.mark.timeout(600)  # a campaign of two servers and five commands, on a busy machine
def test_exported_token_and_url_credentials_reach_no_output(tmp_path: Path) -> None:
    """Dry run, progress lines, the SQLite file and every report format (console,
    markdown, JSON, CSV, HTML) mask the secrets; reports are 0644, server logs 0600."""
    env = {**os.environ, "HF_TOKEN": TOKEN, "NO_COLOR": "1"}
    path = campaign_file(tmp_path)
    db = tmp_path / "c.db"

    plan = run("run", path, "--db", db, "--dry-run", env=env)
    assert plan.returncode == 0, plan.stderr
    assert "env MODEL_URL=https://***@models.example.com/m" in plan.stdout
    assert "--source https://***@models.example.com/m" in plan.stdout
    assert_clean("--dry-run", (plan.stdout + plan.stderr).encode())

    done = run("run", path, "--db", db, env=env)
    assert done.returncode == 0, done.stderr
    assert "connecting with credentials *** (from HF_TOKEN)" in done.stderr  # the crash tail
    assert "--source https://***@models.example.com/m" in done.stderr  # the launching line
    assert_clean("run output and progress lines", (done.stdout + done.stderr).encode())
    for part in tmp_path.glob("c.db*"):
        assert_clean(part.name, part.read_bytes())

    outputs = {ext: tmp_path / f"report.{ext}" for ext in ("md", "json", "csv", "html")}
    report = run(
        "report", "--db", db, "secrets",
        "--markdown-file", outputs["md"], "--json-file", outputs["json"],
        "--csv-file", outputs["csv"], "--html-file", outputs["html"],
        env=env,
    )  # fmt: skip
    assert report.returncode == 0, report.stderr
    assert "crash" in report.stdout
    assert_clean("the console report", (report.stdout + report.stderr).encode())
    for ext, output in outputs.items():
        assert_clean(f"the {ext} report", output.read_bytes())
        assert stat.S_IMODE(output.stat().st_mode) == 0o644, ext
    markdown = outputs["md"].read_text()
    assert "connecting with credentials *** (from HF_TOKEN)" in markdown
    assert "MODEL_URL=https://***@models.example.com/m" in markdown

    logs = sorted((tmp_path / "c-logs").glob("*.log"))
    assert len(logs) == 2
    for log in logs:  # the server's own output: verbatim, for its owner only
        assert stat.S_IMODE(log.stat().st_mode) == 0o600
        assert TOKEN in log.read_text()
