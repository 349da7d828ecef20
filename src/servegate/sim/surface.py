"""The simulator's response surface: what SGLang's tuning flags do to a simulated start.

``servegate sim --mem-fraction-static F --cuda-graph-max-bs N --chunked-prefill-size C
--attention-backend B --quantization fp8`` turns these flags into the simulator's
performance model, memory and startup phases through `evaluate`, a pure function of
the flags, so the true effect of every configuration is known in advance (a search over
the flags can be scored against it: ``benchmarks/tune_truth.py``). The model, per GPU,
in GiB (documented in docs/sim.md, "The tuning surface"):

- weights ``W = params_b x 2`` (bf16), halved by ``--quantization fp8``; the static pool
  is ``F x gpu_memory_gb``, the KV cache what it holds beyond the weights, at
  ``16 x params_b`` KiB per token (128 KiB for an 8B model). Each running request
  reserves ``SLOT_TOKENS`` tokens, so the running limit is ``kv_tokens // SLOT_TOKENS``
  (at most ``--max-running``). A KV pool under ``MIN_KV_GIB``: SGLang's ``Not enough
  memory. Please try to increase --mem-fraction-static`` at the KV-cache phase.
- outside the static pool the engine needs ``1.5 + params_b x (C x 3e-5 + N x 3e-3)``
  GiB (runtime, prefill activations of one chunk, CUDA-graph buffers up to batch N);
  fp8 halves the activations and the buffers. When ``(1 - F) x gpu_memory_gb`` is less,
  the start fails with CUDA out of memory while capturing CUDA graphs (SGLang's
  ``Capture cuda graph failed``). So the highest F that starts depends on the model's
  size, C, N, and the quantization.
- a decode step takes ``itl_ms x backend x quant x (1 + C / 32768)`` (a larger prefill
  chunk stalls decode longer), times ``GRAPH_SPEEDUP`` while at most N requests run (the
  step replays a captured graph), stretched by ``batch_slowdown`` per other request as
  always; the first token takes ``ttft_ms x backend x quant x (1 + 4096 / C)`` (a smaller
  chunk splits a prompt into more steps).
- startup: loading ``params_b x 2 / 2`` s (x 1.25 with fp8, quantized while loading), a
  JIT compile of the backend's kernels that a warm cache skips, a CUDA-graph capture of
  ``2 + 0.1 x N`` s, and fixed phases.

Capacity under an SLO (closed loop, no jitter, no prefill cost): the largest
concurrency c at most the running limit whose step time meets the TPOT bound, when the
first token meets the TTFT bound; 0 when it does not.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

__all__ = [
    "ATTENTION_BACKENDS",
    "GRID",
    "QUANTIZATIONS",
    "Flags",
    "Outcome",
    "capacity",
    "evaluate",
    "grid",
    "tpot_ms",
    "truth_capacity",
]

# (decode step factor, first-token factor, JIT compile seconds on a cold cache, warm)
ATTENTION_BACKENDS: dict[str, tuple[float, float, float, float]] = {
    "fa3": (1.00, 1.00, 0.0, 0.0),  # kernels shipped compiled
    "flashinfer": (1.15, 0.95, 60.0, 2.0),  # FlashInfer's JIT, cached in ~/.cache/flashinfer
    "triton": (1.30, 1.20, 40.0, 3.0),  # Triton's JIT, cached in ~/.triton/cache
    "torch_native": (2.00, 2.50, 0.0, 0.0),
}
# the attention backend's JIT cache: the environment variable that moves it, the folder
# under it (or under the home folder), as servegate.startup.caches reads them
JIT_CACHES: dict[str, tuple[str, str]] = {
    "flashinfer": ("FLASHINFER_WORKSPACE_BASE", ".cache/flashinfer"),
    "triton": ("TRITON_HOME", ".triton/cache"),
}
QUANTIZATIONS = ("none", "fp8")
FP8_SPEED = 0.90  # fp8 GEMMs: every step and first token 10 % faster
FP8_LOAD = 1.25  # weights quantized while loading
GRAPH_SPEEDUP = 0.75  # a replayed CUDA graph: no launch overhead
SLOT_TOKENS = 4096  # KV tokens each running request reserves
MIN_KV_GIB = 1.0
RUNTIME_GIB = 1.5
ACT_GIB_PER_TOKEN_B = 3e-5  # prefill activations per chunk token per billion parameters
GRAPH_GIB_PER_BS_B = 3e-3  # CUDA-graph buffers per captured batch size per billion
KV_KIB_PER_B = 16.0  # KV cache per token per billion parameters (128 KiB for 8B)

# The documented grid (docs/sim.md): tune_truth.py evaluates every point of it.
GRID: dict[str, tuple[Any, ...]] = {
    "mem_fraction_static": (0.80, 0.85, 0.88, 0.91, 0.94, 0.96),
    "cuda_graph_max_bs": (32, 64, 128, 160, 256),
    "chunked_prefill_size": (2048, 4096, 8192, 16384),
    "attention_backend": tuple(ATTENTION_BACKENDS),
    "quantization": QUANTIZATIONS,
}
# The SLO and the base model of the documented optimum.
TRUTH_SLO = {"ttft_ms": 100.0, "tpot_ms": 30.0}
TRUTH_BASE = {"itl_ms": 10.0, "ttft_ms": 40.0, "batch_slowdown": 0.02, "max_running": 256}


@dataclass(frozen=True, slots=True, kw_only=True)
class Flags:
    """SGLang's tuning flags, and the simulated model and GPU they apply to."""

    mem_fraction_static: float = 0.88
    cuda_graph_max_bs: int = 160
    chunked_prefill_size: int = 8192
    attention_backend: str = "flashinfer"
    quantization: str = "none"
    model_params_b: float = 8.0
    gpu_memory_gb: float = 80.0


@dataclass(frozen=True, slots=True, kw_only=True)
class Outcome:
    """What a start with these flags does: fails out of memory, or serves this fast."""

    oom_phase: str | None  # "capture_cuda_graphs" (F too high), "kv_cache" (too low), None
    weights_gib: float
    kv_gib: float
    kv_tokens: int
    dynamic_gib: float  # what the engine needs outside the static pool
    free_gib: float  # what the static pool leaves it
    max_running: int
    itl_ms: float  # one decode step with one request running, without a graph
    ttft_ms: float
    graph_max_bs: int
    graph_speedup: float
    phases: dict[str, float]  # seconds of the phases the flags set (cold or warm cache)

    @property
    def startup_s(self) -> float:
        """Seconds of the phases the flags set (the fixed ones add FIXED_PHASES_S)."""
        return sum(self.phases.values())


# the phases the flags do not change (seconds): dist_init, kv_cache, attention_backend,
# http_start, warmup
FIXED_PHASES = {
    "dist_init": 2.0,
    "kv_cache": 1.0,
    "attention_backend": 0.5,
    "http_start": 1.0,
    "warmup": 3.0,
}


def check(flags: Flags) -> Flags:
    """``flags`` when each is in range; ValueError with one sentence naming the fix."""
    if not 0.0 < flags.mem_fraction_static < 1.0:
        raise ValueError("--mem-fraction-static must be between 0 and 1, e.g. 0.88.")
    if flags.cuda_graph_max_bs < 0:
        raise ValueError("--cuda-graph-max-bs must be >= 0 (0: no CUDA graphs), e.g. 160.")
    if flags.chunked_prefill_size < 1:
        raise ValueError("--chunked-prefill-size must be at least 1 token, e.g. 8192.")
    if flags.attention_backend not in ATTENTION_BACKENDS:
        raise ValueError(
            f"--attention-backend {flags.attention_backend}: choose one of "
            f"{', '.join(ATTENTION_BACKENDS)}."
        )
    if flags.quantization not in QUANTIZATIONS:
        raise ValueError(
            f"--quantization {flags.quantization}: choose one of {', '.join(QUANTIZATIONS)}."
        )
    if flags.model_params_b <= 0:
        raise ValueError("--model-params-b must be > 0 (billions of parameters), e.g. 8.")
    if flags.gpu_memory_gb <= 0:
        raise ValueError("--gpu-memory-gb must be > 0, e.g. 80.")
    return flags


def evaluate(
    flags: Flags,
    *,
    itl_ms: float = 10.0,
    ttft_ms: float = 20.0,
    max_running: int = 256,
    warm: bool = False,
) -> Outcome:
    """The start and the serving that ``flags`` give, from the base model's timings."""
    check(flags)
    size = flags.model_params_b
    fp8 = flags.quantization == "fp8"
    weights = size * (1.0 if fp8 else 2.0)
    static = flags.mem_fraction_static * flags.gpu_memory_gb
    kv = static - weights
    kv_tokens = max(0, int(kv * 1024 * 1024 / (KV_KIB_PER_B * size)))
    shrink = 0.5 if fp8 else 1.0
    dynamic = RUNTIME_GIB + size * shrink * (
        flags.chunked_prefill_size * ACT_GIB_PER_TOKEN_B
        + flags.cuda_graph_max_bs * GRAPH_GIB_PER_BS_B
    )
    free = flags.gpu_memory_gb - static
    oom: str | None = None
    if kv < MIN_KV_GIB:
        oom = "kv_cache"
    elif dynamic > free:
        oom = "capture_cuda_graphs"
    step, first, cold_jit, warm_jit = ATTENTION_BACKENDS[flags.attention_backend]
    speed = FP8_SPEED if fp8 else 1.0
    chunk = flags.chunked_prefill_size
    load = size * 2.0 / 2.0 * (FP8_LOAD if fp8 else 1.0)
    phases = {
        "load_weights": load,
        "jit_compile": warm_jit if warm else cold_jit,
        "capture_cuda_graphs": 2.0 + 0.1 * flags.cuda_graph_max_bs
        if flags.cuda_graph_max_bs
        else 0.0,
    }
    return Outcome(
        oom_phase=oom,
        weights_gib=weights,
        kv_gib=kv,
        kv_tokens=kv_tokens,
        dynamic_gib=dynamic,
        free_gib=free,
        max_running=max(1, min(max_running, kv_tokens // SLOT_TOKENS)),
        itl_ms=itl_ms * step * speed * (1.0 + chunk / 32768),
        ttft_ms=ttft_ms * first * speed * (1.0 + 4096 / chunk),
        graph_max_bs=flags.cuda_graph_max_bs,
        graph_speedup=GRAPH_SPEEDUP if flags.cuda_graph_max_bs else 1.0,
        phases=phases,
    )


def tpot_ms(outcome: Outcome, running: int, batch_slowdown: float) -> float:
    """One decode step's milliseconds while ``running`` requests run."""
    graph = outcome.graph_speedup if running <= outcome.graph_max_bs else 1.0
    return outcome.itl_ms * graph * (1.0 + batch_slowdown * max(0, running - 1))


def capacity(
    outcome: Outcome, *, ttft_slo_ms: float, tpot_slo_ms: float, batch_slowdown: float
) -> int | None:
    """The largest concurrency meeting both bounds; 0 when none does, None when the
    start fails (out of memory)."""
    if outcome.oom_phase is not None:
        return None
    if outcome.ttft_ms > ttft_slo_ms:
        return 0
    best = 0
    for c in range(1, outcome.max_running + 1):
        if tpot_ms(outcome, c, batch_slowdown) > tpot_slo_ms:
            break
        best = c
    return best


def grid(space: Mapping[str, tuple[Any, ...]] = GRID) -> Iterator[Flags]:
    """Every combination of the values in ``space`` (keys: `Flags` fields)."""
    keys = list(space)
    for values in itertools.product(*(space[k] for k in keys)):
        yield replace(Flags(), **dict(zip(keys, values, strict=True)))


def truth_capacity(flags: Flags) -> int | None:
    """The capacity of ``flags`` under the documented SLO and base model."""
    base = TRUTH_BASE
    outcome = evaluate(
        flags,
        itl_ms=base["itl_ms"],
        ttft_ms=base["ttft_ms"],
        max_running=int(base["max_running"]),
    )
    return capacity(
        outcome,
        ttft_slo_ms=TRUTH_SLO["ttft_ms"],
        tpot_slo_ms=TRUTH_SLO["tpot_ms"],
        batch_slowdown=base["batch_slowdown"],
    )
