"""Helpers for the real-engine tests: run the CLI, read verdicts, look at processes.

Why: every real-engine test drives the real `servegate` command line against a real
server and then checks what is left on the machine, so these few calls repeat.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
import tomllib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import psutil


def servegate(
    *args: str, timeout: float, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the real `servegate` command line and capture its output."""
    return subprocess.run(
        [sys.executable, "-m", "servegate", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
        check=False,
    )


def verdict_of(result: subprocess.CompletedProcess[str]) -> dict[str, object]:
    """The `--json` verdict object printed first on stdout."""
    text = result.stdout.lstrip()
    assert text.startswith("{"), (
        f"no JSON verdict (exit {result.returncode}):\n{result.stdout}\n{result.stderr}"
    )
    value, _ = json.JSONDecoder().raw_decode(text)
    assert isinstance(value, dict)
    return value


def port_free(port: int) -> bool:
    """Whether nothing accepts connections on 127.0.0.1:port."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) != 0


def procs_with(text: str, exclude: str = "-m servegate") -> list[str]:
    """This test session's live processes whose command line or name contains `text`
    (servegate's own excluded). Only processes carrying the session's marker in their
    environment (tests/conftest.py sets it; every process the suite starts inherits it)
    count: another copy of the suite, or anyone else serving the same model file on this
    machine, is not ours to find."""
    mark = os.environ.get(MARKER_VAR)
    found = []
    for proc in psutil.process_iter(["pid", "name", "cmdline", "status"]):
        try:
            if proc.info["status"] == psutil.STATUS_ZOMBIE:
                continue
            line = " ".join(proc.info["cmdline"] or []) + " " + (proc.info["name"] or "")
            if text not in line or exclude in line or proc.pid == os.getpid():
                continue
            if mark is not None and proc.environ().get(MARKER_VAR) != mark:
                continue
        except psutil.Error:
            continue
        found.append(f"{proc.pid} {line[:160]}")
    return found


MARKER_VAR = "SERVEGATE_TEST_MARKER"  # tests/conftest.py's: this session's processes


def wait_until(predicate: Callable[[], bool], timeout_s: float, step_s: float = 0.2) -> bool:
    """Poll `predicate()` until it is true or the time is up."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(step_s)
    return bool(predicate())


class LateHolder:
    """Takes a port a moment after a launch began: the clash a pre-launch check cannot see.

    `servegate launch` refuses a port that is already taken before it starts anything, so
    an engine's own bind failure only happens when someone takes the port while the
    engine is still loading; this holder does exactly that, then keeps listening.
    """

    def __init__(self, port: int, when: Callable[[], bool], timeout_s: float = 120) -> None:
        self.port = port
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.bound = threading.Event()
        self.error: OSError | None = None
        self._thread = threading.Thread(target=self._take, args=(when, timeout_s), daemon=True)
        self._thread.start()

    def _take(self, when: Callable[[], bool], timeout_s: float) -> None:
        if not wait_until(when, timeout_s, step_s=0.05):
            return
        try:
            self.sock.bind(("127.0.0.1", self.port))
            self.sock.listen(8)
            self.bound.set()
        except OSError as exc:
            self.error = exc

    def close(self) -> None:
        """Release the port."""
        self._thread.join(10)
        self.sock.close()


def check_report(path: Path, baseline: str, variant: str, repeats: int) -> dict[str, Any]:
    """Assert a `servegate report --json` file compares `variant` with an interval; return it.

    Both variants must have started and stopped cleanly (port free), and the throughput
    comparison must carry its estimate over all repeats: with a confidence interval
    around it when each side has two server starts or more, else none and the call
    "needs more starts" (one start a side cannot tell a change from a start's luck).
    """
    data: dict[str, Any] = json.loads(path.read_text())
    assert data["campaign"]["baseline"] == baseline
    variants = {v["name"]: v for v in data["variants"]}
    assert set(variants) == {baseline, variant}, variants.keys()
    for item in variants.values():
        assert item["status"] == "done", item
        for attempt in item["attempts"]:
            assert attempt["verdict"]["status"] == "ready", attempt["verdict"]
            assert attempt["stop"]["port_free"] is True, attempt["stop"]
    comparison = next(
        c
        for c in data["comparisons"]
        if c["variant"] == variant and c["metric"] == "output_throughput"
    )
    estimate = comparison["estimate"]
    if min(estimate["starts_baseline"], estimate["starts_variant"]) >= 2:
        assert estimate["ratio_low"] <= estimate["ratio"] <= estimate["ratio_high"], estimate
    else:
        assert estimate["ratio"] > 0 and estimate["ratio_low"] is None, estimate
        assert comparison["call"] == "needs more starts", comparison
    assert estimate["n_baseline"] == repeats, estimate
    assert estimate["n_variant"] == repeats, estimate
    assert comparison["call"], comparison
    return data


def run_example_campaign(
    example: Path, paths: Mapping[str, Path], tmp_path: Path, *, timeout_s: float
) -> Path:
    """Run a shipped campaign with its ``[vars]`` set to real paths; return its JSON report."""
    text = example.read_text()
    placeholders = tomllib.loads(text)["vars"]
    for key, path in paths.items():
        text = text.replace(placeholders[key], str(path))
    campaign = tmp_path / example.name
    campaign.write_text(text)
    db = tmp_path / "real.db"
    run = servegate("run", str(campaign), "--db", str(db), timeout=timeout_s)
    assert run.returncode == 0, run.stderr[-3000:]
    report_json = tmp_path / "report.json"
    report = servegate("report", "--db", str(db), "--json-file", str(report_json), timeout=120)
    assert report.returncode == 0, report.stderr
    return report_json
