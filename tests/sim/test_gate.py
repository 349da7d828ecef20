"""The gate recognises every simulated engine and every simulated failure."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from servegate.errors import GateError, ServerCrashed, ServerTimeout
from servegate.launch import launch


def sim(engine: str, port: int, *args: str) -> list[str]:
    """The command line of a simulated engine."""
    return [
        sys.executable,
        "-m",
        "servegate",
        "sim",
        "--engine",
        engine,
        "--port",
        str(port),
        "--startup",
        "0.2",
        *args,
    ]


def gate_args(engine: str, port: int) -> dict[str, Any]:
    """launch() arguments: the generic profile needs to be told what ready means."""
    if engine == "generic":
        return {"health_url": f"http://127.0.0.1:{port}/health"}
    return {}


@pytest.mark.parametrize("engine", ["sglang", "vllm", "llamacpp", "generic"])
def test_gate_sees_each_simulated_engine_ready(engine: str, port: int) -> None:
    """Every simulated engine is READY for the gate, and stops cleanly."""
    with launch(
        sim(engine, port), engine=engine, port=port, timeout_s=30, **gate_args(engine, port)
    ) as server:
        assert server.verdict.status == "ready"
        assert server.alive()
    report = server.stop()
    assert report.port_free


# every failure kind at least once, and each engine's own signatures
CRASHES = [
    ("sglang", "oom", "oom"),
    ("vllm", "oom", "oom"),
    ("llamacpp", "oom", None),
    ("sglang", "nccl", "nccl"),
    ("vllm", "cuda-arch", "cuda-arch"),
    ("llamacpp", "cuda-arch", "cuda-arch"),
    ("sglang", "port-in-use", "port-in-use"),
    ("vllm", "port-in-use", "port-in-use"),
    ("generic", "traceback-exit", None),
    ("vllm", "silent-exit", None),
    ("sglang", "child-death", None),
    ("vllm", "child-death", None),
]


@pytest.mark.parametrize(
    ("engine", "fail", "kind"), CRASHES, ids=[f"{c[0]}-{c[1]}" for c in CRASHES]
)
def test_gate_calls_each_simulated_crash_a_crash(
    engine: str, fail: str, kind: str | None, port: int
) -> None:
    """Each simulated startup failure is a CRASH, of the right kind where it has one."""
    args = ["--fail", fail]
    if fail == "child-death":
        # the child must live long enough for the gate to have seen it
        phase = "warmup" if engine == "sglang" else "capture_cuda_graphs"
        args += ["--fail-at", phase, "--phase", f"{phase}=2"]
    with pytest.raises(ServerCrashed) as info:
        launch(
            sim(engine, port, *args),
            engine=engine,
            port=port,
            timeout_s=30,
            **gate_args(engine, port),
        )
    verdict = info.value.verdict
    assert verdict.status == "crash"
    if kind is not None:
        assert verdict.kind == kind, verdict.line()
    assert verdict.exit_code != 2, verdict.line()  # a real failure, not a bad flag
    if engine == "sglang" and fail == "child-death":
        # the HTTP process lives on: only the dead child tells
        assert verdict.detected_by == "child-exit", verdict.line()


@pytest.mark.parametrize(("engine", "fail"), [("sglang", "hang"), ("vllm", "stall")])
def test_gate_times_out_on_a_hang_or_a_stall(engine: str, fail: str, port: int) -> None:
    """A hang (and a stall that never advances) ends in TIMEOUT, not READY or CRASH."""
    with pytest.raises(ServerTimeout) as info:
        launch(
            sim(engine, port, "--fail", fail), engine=engine, port=port, timeout_s=3, stall_s=1.0
        )
    assert info.value.verdict.status == "timeout"


def test_gate_error_carries_the_simulated_log(port: int) -> None:
    """The verdict's tail holds the simulated engine's last lines."""
    with pytest.raises(GateError) as info:
        launch(sim("sglang", port, "--fail", "oom"), engine="sglang", port=port, timeout_s=30)
    assert any("CUDA out of memory" in line for line in info.value.log_tail)
    assert any("Load weight begin" in line for line in info.value.log_tail)


def test_gate_sees_an_essential_child_that_dies_young(port: int) -> None:
    """A scheduler killed within the first second of startup is still a child-exit CRASH.

    It lives 0.8 s: young enough to fall in the gate's fast-scan window, long enough that
    a loaded machine, which can hold the gate off the CPU for a hundred milliseconds,
    still lets a scan see it before it dies (a child that lives less than one scan period
    cannot be seen by any poll).
    """
    with pytest.raises(ServerCrashed) as info:
        launch(
            sim("sglang", port, "--startup", "3", "--fail", "child-death", "--fail-at", "0.8"),
            engine="sglang",
            port=port,
            timeout_s=30,
            **gate_args("sglang", port),
        )
    verdict = info.value.verdict
    assert (verdict.status, verdict.detected_by) == ("crash", "child-exit"), verdict.line()
    assert verdict.elapsed_s < 10
