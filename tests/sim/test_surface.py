"""SGLang's tuning flags on the simulator: memory, CUDA graphs, chunks, backends, fp8."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from servegate.errors import ServerCrashed
from servegate.launch import launch
from servegate.sim.config import resolve
from servegate.sim.surface import GRID, Flags, evaluate, grid, tpot_ms, truth_capacity

from .helpers import Sim

ROOT = Path(__file__).resolve().parents[2]
# a start that captures graphs up to 128 on an 8B model in bf16: 0.94 leaves 4.8 GiB
# outside the static pool, and it needs 5.56 GiB (fp8: 3.56 GiB)
TOO_HIGH = [
    "--mem-fraction-static",
    "0.94",
    "--cuda-graph-max-bs",
    "128",
    "--chunked-prefill-size",
    "4096",
    "--attention-backend",
    "fa3",
]


def command(port: int, *args: str) -> list[str]:
    """A simulated SGLang with these flags, its startup 50 times faster."""
    sim = [sys.executable, "-m", "servegate", "sim", "--engine", "sglang", "--port", str(port)]
    return [*sim, "--time-scale", "0.02", *args]


def test_too_high_mem_fraction_is_sglangs_oom_for_the_gate(port: int, tmp_path: Path) -> None:
    """0.94 with graphs up to 128 fails while capturing, in SGLang's words; the gate says
    oom. The verdict's tail holds what was read when the gate decided (the out-of-memory
    line); SGLang's advice below it is in the log, complete once the server is gone."""
    env = {"FLASHINFER_WORKSPACE_BASE": str(tmp_path)}
    with pytest.raises(ServerCrashed) as info:
        launch(command(port, *TOO_HIGH), engine="sglang", port=port, timeout_s=30, env=env)
    verdict = info.value.verdict
    assert verdict.status == "crash"
    assert verdict.kind == "oom", verdict.line()
    assert "Capture cuda graph failed: CUDA out of memory" in "\n".join(info.value.log_tail)
    assert verdict.log_path is not None
    log = Path(verdict.log_path).read_text()
    assert "Capture cuda graph failed: CUDA out of memory" in log
    assert "1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)" in log


def test_fp8_makes_the_same_fraction_start(port: int, tmp_path: Path) -> None:
    """--quantization fp8 halves what the engine needs outside the pool: 0.94 is READY."""
    env = {"FLASHINFER_WORKSPACE_BASE": str(tmp_path)}
    args = [*TOO_HIGH, "--quantization", "fp8"]
    with launch(command(port, *args), engine="sglang", port=port, timeout_s=30, env=env) as server:
        assert server.verdict.status == "ready"
    server.stop()


def test_a_low_fraction_is_sglangs_not_enough_memory(port: int) -> None:
    """A static pool that cannot hold the weights fails at the KV cache with its value."""
    args = ["--engine", "sglang", "--time-scale", "0.02", "--mem-fraction-static", "0.2"]
    with Sim(port, *args) as s:
        s.wait_exit(20)
        text = "\n".join(s.text())
    assert "Not enough memory. Please try to increase --mem-fraction-static" in text
    assert "mem_fraction_static=0.2" in text


def test_cuda_graph_max_bs_lengthens_the_capture_and_its_list(port: int) -> None:
    """A larger --cuda-graph-max-bs captures more batch sizes: a longer capture phase, in
    the resolved timeline and in the printed list of sizes."""
    phases = {}
    for n in (32, 256):
        config = resolve(
            profile=None, flags={"engine": "sglang", "cuda_graph_max_bs": n, "time_scale": 1.0}
        )
        phases[n] = dict(config.phases)["capture_cuda_graphs"]
        assert config.graph_max_bs == n
    assert phases[256] > phases[32]
    assert config.startup_s > phases[256]
    with Sim(port, "--engine", "sglang", "--time-scale", "0.02", "--cuda-graph-max-bs", "64") as s:
        s.wait_line("Capture cuda graph bs", 20)
        line = next(text for text in s.text() if "Capture cuda graph bs" in text)
    sizes = json.loads(line.split("Capture cuda graph bs ")[1])
    assert sizes == [1, 2, 4, 8, 16, 24, 32, 40, 48, 56, 64]


def test_a_warm_jit_cache_shortens_the_next_start(port: int, tmp_path: Path) -> None:
    """flashinfer compiles on a cold cache and leaves its kernels where FlashInfer keeps
    them; the next start with that cache is resolved warm (a shorter jit_compile)."""
    env_args = ["--attention-backend", "flashinfer", "--time-scale", "0.01"]
    cold = resolve_with_home(tmp_path, env_args)
    cache = tmp_path / ".cache" / "flashinfer"
    assert not cache.exists()
    env = {"FLASHINFER_WORKSPACE_BASE": str(tmp_path)}
    with Sim(port, "--engine", "sglang", *env_args, env=env) as s:
        s.wait_line("The server is fired up and ready to roll!", 30)
    assert [p.name for p in cache.iterdir()] == ["servegate-sim-flashinfer-none.so"]
    warm = resolve_with_home(tmp_path, env_args)
    assert warm["jit_compile"] < cold["jit_compile"]


def resolve_with_home(home: Path, args: list[str]) -> dict[str, float]:
    """The timeline that ``servegate sim`` resolves with FLASHINFER_WORKSPACE_BASE=home."""
    code = (
        "import json, sys; from servegate.sim.config import resolve; "
        "c = resolve(profile=None, flags={'engine': 'sglang', 'attention_backend': "
        f"{args[1]!r}, 'time_scale': 1.0}}); print(json.dumps(dict(c.phases)))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        env={"FLASHINFER_WORKSPACE_BASE": str(home), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    )
    return dict(json.loads(out.stdout))


def test_graphs_speed_up_steps_only_up_to_their_batch() -> None:
    """A decode step replays a graph while at most N run: faster up to N, not beyond."""
    outcome = evaluate(Flags(cuda_graph_max_bs=64))
    assert tpot_ms(outcome, 64, 0.0) == pytest.approx(outcome.itl_ms * 0.75)
    assert tpot_ms(outcome, 65, 0.0) == pytest.approx(outcome.itl_ms)


def test_chunked_prefill_trades_first_token_against_steps() -> None:
    """A larger chunk: a faster first token, slower decode steps."""
    small = evaluate(Flags(chunked_prefill_size=2048))
    large = evaluate(Flags(chunked_prefill_size=16384))
    assert large.ttft_ms < small.ttft_ms
    assert large.itl_ms > small.itl_ms


def test_fp8_lowers_memory_so_a_rule_ignoring_it_would_skip_a_feasible_start() -> None:
    """The bf16 start at 0.94 runs out of memory, the fp8 one at 0.94 (and up to 0.96 with
    smaller graphs) does not: a dominance rule blind to quantization would be wrong."""
    base = Flags(
        mem_fraction_static=0.94,
        cuda_graph_max_bs=128,
        chunked_prefill_size=4096,
        attention_backend="fa3",
    )
    assert truth_capacity(base) is None
    assert truth_capacity(replace(base, quantization="fp8")) == 128
    assert evaluate(replace(base, model_params_b=4.0)).oom_phase is None  # size matters


def test_the_documented_optimum_is_what_tune_truth_finds(tmp_path: Path) -> None:
    """benchmarks/tune_truth.py's dense evaluation finds the optimum docs/sim.md states."""
    out = tmp_path / "truth.json"
    subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "tune_truth.py"), "--out", str(out)],
        check=True,
        capture_output=True,
    )
    truth = json.loads(out.read_text())
    doc = (ROOT / "docs" / "sim.md").read_text()
    found = re.search(r"The true optimum: `([^`]+)`, capacity (\d+)", doc)
    assert found is not None
    assert truth["optimum"]["args"] == " ".join(found.group(1).split())
    assert truth["optimum"]["capacity"] == int(found.group(2))
    assert truth["evaluated"] == len(list(grid(GRID)))
    assert truth["runner_up"]["capacity"] < truth["optimum"]["capacity"]  # one optimum
