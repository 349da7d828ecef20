"""Secrets of a launched server stay out of argv, state files, ps and printed verdicts."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from servegate.launch import launch, state

from .helpers import PY, TINY, free_port, servegate

EXPORTED = "hf_exported_0123456789abcdef"  # exported in the shell, inherited by the server
GIVEN = "given-pw-9876543210"  # passed with --env / env=
FLAG = "sk-flag-5555aaaa7777"  # passed on the server's command line
URL = "https://alice:pa55w0rd-x@models.example.com/m"


def test_keeper_argv_and_state_hold_no_secret(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The keeper's /proc cmdline and the state file hold no secret; the log keeps the
    server's output verbatim, readable by its owner only (0600)."""
    monkeypatch.setenv("HF_TOKEN", EXPORTED)
    port = free_port()
    log = tmp_path / "server.log"
    with launch(
        [PY, TINY, "echo", str(port), "HF_TOKEN", "DB_PASSWORD", "--api-key", FLAG],
        env={"DB_PASSWORD": GIVEN},
        ready=["tiny server ready"],
        port=port,
        timeout_s=60,
        log_path=str(log),
        name="secretive",
    ) as server:
        keeper_pid = server.tracked.keeper_pid
        assert keeper_pid is not None
        argv = Path(f"/proc/{keeper_pid}/cmdline").read_bytes()
        assert b"servegate.launch.keeper" in argv
        for secret in (EXPORTED, GIVEN, FLAG):
            assert secret.encode() not in argv
        record = (state.state_dir() / "secretive.json").read_bytes()
        for secret in (EXPORTED, GIVEN, FLAG):
            assert secret.encode() not in record
        assert stat.S_IMODE(os.stat(log).st_mode) == 0o600
        text = log.read_text()
    assert f"HF_TOKEN={EXPORTED}" in text and f"DB_PASSWORD={GIVEN}" in text


def test_printed_verdict_tail_masks_exported_tokens_and_url_credentials() -> None:
    """A token exported in the shell and a URL's password, echoed by a server that then
    crashes, are masked in the verdict line, the tail and the --json verdict."""
    env = {**os.environ, "HF_TOKEN": EXPORTED, "MODEL_URL": URL}
    command = [PY, TINY, "echo-crash", "HF_TOKEN", "MODEL_URL"]
    for extra in ([], ["--json"]):
        result = servegate("launch", *extra, "--ready", "never", "--", *command, env=env)
        assert result.returncode == 1, result.stderr
        shown = result.stdout + result.stderr
        assert EXPORTED not in shown
        assert "pa55w0rd-x" not in shown
        assert "connecting with credentials *** (from HF_TOKEN)" in shown
        assert "https://***@models.example.com/m" in shown
    verdict = json.loads(result.stdout)
    assert verdict["matched_line"] == "RuntimeError: login refused for ***"


def test_launch_line_ps_and_state_hold_no_secret() -> None:
    """The launch progress line, ps, ps --json and the state file mask a secret flag's
    value and a secret --env value."""
    port = free_port()
    env = {**os.environ, "HF_TOKEN": EXPORTED}
    launched = servegate(
        "launch", "--name", "api", "--ready", "tiny server ready", "--port", str(port),
        "--env", f"DB_PASSWORD={GIVEN}", "--timeout", "60",
        "--", PY, TINY, "echo", str(port), "HF_TOKEN", "DB_PASSWORD", "--api-key", FLAG,
        env=env,
    )  # fmt: skip
    assert launched.returncode == 0, launched.stderr
    try:
        assert "--api-key ***" in launched.stderr
        shown = launched.stdout + launched.stderr
        shown += servegate("ps", env=env).stdout + servegate("ps", "--json", env=env).stdout
        shown += (state.state_dir() / "api.json").read_text()
        for secret in (EXPORTED, GIVEN, FLAG):
            assert secret not in shown
    finally:
        stopped = servegate("stop", "api", env=env)
    assert stopped.returncode == 0, stopped.stderr
    for secret in (EXPORTED, GIVEN, FLAG):
        assert secret not in stopped.stdout + stopped.stderr


def test_a_spec_larger_than_a_pipe_buffer_arrives_whole(tmp_path: Path) -> None:
    """A 400 KB environment reaches the server through the keeper's spec pipe (as one
    argv string it would exceed the kernel's 128 KiB limit per argument)."""
    port = free_port()
    big = {f"BIG_{i}": str(i) * 100_000 for i in range(4)}
    log = tmp_path / "server.log"
    with launch(
        [PY, TINY, "echo", str(port), *big],
        env=big,
        ready=["tiny server ready"],
        port=port,
        timeout_s=60,
        log_path=str(log),
    ) as server:
        assert server.alive()
    text = log.read_text()
    for name, value in big.items():
        assert f"{name}={value}\n" in text
