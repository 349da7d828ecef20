"""Simulated failures: what each engine prints, and how it ends, from a real process."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time

import psutil
import pytest
from tests.sim.helpers import Sim, get

# (engine, kind, a line the engine prints, how the process ends: exit code or -signal)
CASES = [
    ("sglang", "oom", r"torch\.OutOfMemoryError: CUDA out of memory", -signal.SIGKILL),
    ("vllm", "oom", r"torch\.OutOfMemoryError: CUDA out of memory", 1),
    ("llamacpp", "oom", r"cudaMalloc failed: out of memory", 1),
    ("generic", "oom", r"CUDA out of memory", 1),
    ("sglang", "nccl", r"NCCL error", -signal.SIGKILL),
    ("vllm", "nccl", r"ncclUnhandledCudaError", 1),
    ("generic", "nccl", r"NCCL error", 1),
    ("sglang", "cuda-arch", r"No supported CUDA architectures found", -signal.SIGKILL),
    ("vllm", "cuda-arch", r"No supported CUDA architectures found", 1),
    ("llamacpp", "cuda-arch", r"no kernel image is available", -signal.SIGABRT),
    ("generic", "cuda-arch", r"no kernel image is available", 1),
    ("sglang", "traceback-exit", r"^ImportError: .*undefined symbol", 1),
    ("vllm", "traceback-exit", r"ImportError: .*_C\.abi3\.so: undefined symbol", 1),
    ("llamacpp", "traceback-exit", r"terminate called after throwing", -signal.SIGABRT),
    ("generic", "traceback-exit", r"^KeyError:", 1),
    ("vllm", "child-death", r"Worker proc VllmWorker-0 died unexpectedly", 1),
]
FINAL = {
    ("sglang", -signal.SIGKILL): r"Received sigquit from a child process",
    ("vllm", 1): r"Engine core initialization failed|Address already in use|ImportError",
    ("llamacpp", 1): r"exiting due to (model loading|HTTP server) error",
}


@pytest.mark.parametrize(
    ("engine", "kind", "line", "end"), CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES]
)
def test_failure_prints_the_engines_lines_and_ends_like_it(
    engine: str, kind: str, line: str, end: int, port: int
) -> None:
    """Each failure prints the engine's own signature, then exits as the engine does."""
    with Sim(port, "--engine", engine, "--startup", "0.3", "--fail", kind) as sim:
        assert sim.wait_exit() == end
        sim.wait_line(line, timeout=1)
        final = FINAL.get((engine, end))
        if final:
            sim.wait_line(final, timeout=1)
        assert "ready" not in " ".join(sim.text()[-3:]).lower()


@pytest.mark.parametrize(
    ("engine", "line", "end"),
    [
        (
            "sglang",
            r"error while attempting to bind on address \('127\.0\.0\.1', \d+\): "
            r"address already in use",
            1,
        ),
        ("vllm", r"OSError: \[Errno 98\] Address already in use", 1),
        ("llamacpp", r"exiting due to HTTP server error", 1),
        ("generic", r"address already in use", 1),
    ],
)
def test_a_taken_port_fails_where_the_engine_binds(
    engine: str, line: str, end: int, port: int
) -> None:
    """A really taken port fails at the engine's bind point: vLLM at once, SGLang after loading."""
    holder = socket.socket()
    holder.bind(("127.0.0.1", port))
    holder.listen()
    try:
        with Sim(port, "--engine", engine, "--startup", "0.6") as sim:
            assert sim.wait_exit() == end
            failed_at = sim.wait_line(line, timeout=1)
            loaded = any("Load weight end" in text for text in sim.text())
            assert loaded == (engine == "sglang")
            if engine == "vllm":
                assert failed_at < 0.6 + 1.0
    finally:
        holder.close()


def test_simulated_port_in_use_matches_the_real_one(port: int) -> None:
    """--fail port-in-use prints the same lines as a really taken port."""
    with Sim(port, "--engine", "sglang", "--startup", "0.3", "--fail", "port-in-use") as sim:
        assert sim.wait_exit() == 1
        sim.wait_line(rf"\('127\.0\.0\.1', {port}\): address already in use")


def test_oom_in_kv_cache_prints_the_mem_fraction_hint(port: int) -> None:
    """SGLang's KV-pool OOM names --mem-fraction-static, vLLM's names gpu_memory_utilization."""
    with Sim(
        port, "--engine", "sglang", "--startup", "0.3", "--fail", "oom", "--fail-at", "kv_cache"
    ) as sim:
        assert sim.wait_exit() == -signal.SIGKILL
        sim.wait_line(r"Not enough memory\. Please try to increase --mem-fraction-static")
        assert any("Load weight end" in line for line in sim.text())


def test_fail_at_seconds_fails_at_that_time(port: int) -> None:
    """--fail-at 0.8 (seconds) fails about 0.8 s into a 2 s startup."""
    with Sim(
        port, "--engine", "vllm", "--startup", "2", "--fail", "oom", "--fail-at", "0.8"
    ) as sim:
        assert sim.wait_exit() == 1
        at = sim.wait_line("EngineCore failed to start")
        first = sim.wait_line("vLLM API server version")
        assert 0.6 <= at - first <= 1.6


def test_silent_exit_prints_nothing_and_dies_by_sigkill(port: int) -> None:
    """silent-exit: the process is killed mid-phase with no error line at all."""
    with Sim(port, "--engine", "sglang", "--startup", "0.3", "--fail", "silent-exit") as sim:
        assert sim.wait_exit() == -signal.SIGKILL
        text = "\n".join(sim.text())
        assert "Traceback" not in text and "Error" not in text
        assert "Load weight begin" in text and "Load weight end" not in text


def test_hang_stays_alive_and_silent(port: int) -> None:
    """hang: no more output and no readiness, but the process lives."""
    with Sim(port, "--engine", "sglang", "--startup", "0.3", "--fail", "hang") as sim:
        sim.wait_line("Capture cuda graph begin")
        time.sleep(0.8)
        count = len(sim.lines)
        time.sleep(0.8)
        assert sim.alive()
        assert len(sim.lines) == count
        with pytest.raises(OSError):
            get(sim.url + "/health")


def test_stall_repeats_progress_without_advancing(port: int) -> None:
    """stall: vLLM keeps printing its waiting line; nothing advances."""
    with Sim(port, "--engine", "vllm", "--startup", "0.3", "--fail", "stall") as sim:
        time.sleep(1.5)
        waits = [t for t in sim.text() if "Waiting for 1 local, 0 remote core engine" in t]
        assert len(waits) >= 2
        assert sim.alive()
        assert not any("Graph capturing finished" in t for t in sim.text())


def _children(pid: int, *, names: bool = False) -> list[str]:
    """The command lines of the live descendants (a zombie has none; one may exit
    mid-read), or with ``names`` their kernel names (15 bytes), zombies included."""
    out = []
    for proc in psutil.Process(pid).children(recursive=True):
        try:
            out.append(proc.name() if names else " ".join(proc.cmdline()))
        except psutil.Error:
            continue
    return out


def test_sglang_child_death_leaves_the_http_process_alive(port: int) -> None:
    """SGLang child-death: the scheduler child dies, HTTP lives on, /health turns 503."""
    with Sim(
        port,
        "--engine",
        "sglang",
        "--startup",
        "0.3",
        "--fail",
        "child-death",
        "--fail-at",
        "warmup",
        "--health-check-timeout",
        "0.3",
    ) as sim:
        assert sim.proc is not None
        deadline = time.monotonic() + 60  # generous: only a hang trips it
        # the scheduler is started first thing (seen live, or as a zombie once killed)
        while "sglang::schedul" not in _children(sim.proc.pid, names=True):
            assert time.monotonic() < deadline
            time.sleep(0.01)
        sim.wait_line("Uvicorn running on")
        while any("scheduler_TP0" in c for c in _children(sim.proc.pid)):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        # /health turns 503 once the health check times out (0.3 s); wait for it
        while get(sim.url + "/health")[0] != 503:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert sim.alive()
        assert get(sim.url + "/v1/models")[0] == 200
        assert not any("ready to roll" in t for t in sim.text())


def test_children_are_named_after_their_roles(port: int) -> None:
    """vLLM has an engine core and a worker per rank; SGLang a scheduler per rank."""
    with Sim(port, "--engine", "vllm", "--tp", "2", "--startup", "0.2") as sim:
        assert sim.proc is not None
        sim.wait_line("Application startup complete")
        names = " ".join(_children(sim.proc.pid))
        for role in ("VLLM::EngineCore_DP0", "VLLM::Worker_TP0", "VLLM::Worker_TP1"):
            assert role in names
        pids = {
            int(p) for p in __import__("re").findall(r"\(\w+ pid=(\d+)\)", "\n".join(sim.text()))
        }
        live = {p.pid for p in psutil.Process(sim.proc.pid).children()} | {sim.proc.pid}
        assert pids <= live


def test_crash_after_ready_kills_the_server_mid_run(port: int) -> None:
    """crash-after-ready: READY first, then the engine's crash lines and the exit."""
    with Sim(
        port,
        "--engine",
        "vllm",
        "--startup",
        "0.2",
        "--fail",
        "crash-after-ready",
        "--fail-at",
        "0.5",
    ) as sim:
        ready = sim.wait_line("Application startup complete")
        assert sim.wait_exit() == 1
        crash = sim.wait_line("EngineDeadError")
        assert crash - ready >= 0.4


def test_a_failure_after_ready_with_the_nth_request(port: int) -> None:
    """`--fail-at 2req`: the first completion is answered, the second goes down with the
    server (no answer, the crash's lines, exit 1), however long the client took."""
    with Sim(
        port,
        "--engine",
        "vllm",
        "--startup",
        "0.2",
        "--fail",
        "crash-after-ready",
        "--fail-at",
        "2req",
    ) as sim:
        sim.wait_line("Application startup complete")
        completion = b'{"prompt": "hi", "max_tokens": 2}'
        assert get(sim.url + "/v1/completions", completion)[0] == 200
        with pytest.raises(OSError):
            get(sim.url + "/v1/completions", completion)
        sim.wait_line("EngineDeadError")
        assert sim.wait_exit(timeout=10) == 1
    with Sim(port, "--engine", "vllm", "--fail", "engine-dead", "--fail-at", "1req") as sim:
        sim.wait_line("Application startup complete")
        status, body = get(sim.url + "/v1/completions", completion)
        assert status == 500 and b"EngineCore encountered an issue" in body


@pytest.mark.parametrize("where", ["0req", "3req"])
def test_a_request_count_outside_its_failures_is_refused(port: int, where: str) -> None:
    """A request count is for failures after READY, counted from 1: exit 2, one sentence."""
    fail = "crash-after-ready" if where == "0req" else "oom"
    argv = ["--port", str(port), "--fail", fail, "--fail-at", where]
    done = subprocess.run(
        [sys.executable, "-m", "servegate", "sim", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert f"--fail-at {where}" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.slow
def test_vllm_engine_dead_fails_the_first_completion_after_a_healthy_probe(port: int) -> None:
    """engine-dead: /health still 200, the first completion is a 500, then the server exits."""
    with Sim(
        port, "--engine", "vllm", "--startup", "0.2", "--fail", "engine-dead", "--fail-at", "0.2"
    ) as sim:
        sim.wait_line("Application startup complete")
        time.sleep(0.5)
        assert get(sim.url + "/health")[0] == 200
        status, body = get(sim.url + "/v1/completions", b'{"prompt": "hi", "max_tokens": 2}')
        assert status == 500 and b"EngineCore encountered an issue" in body
        assert get(sim.url + "/health")[0] == 503
        sim.wait_line("EngineDeadError")
        assert sim.wait_exit(timeout=10) == 1
