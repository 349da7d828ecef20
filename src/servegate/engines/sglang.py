"""SGLang (``python -m sglang.launch_server``): profile as data.

The ready line is printed after the warmup request; ``/health`` answers 503 until then
and ``/v1/models`` answers 200 during warmup, so it is never used. A scheduler that dies
at the C++ level can leave the HTTP process alive, hence the essential children.
"""

from __future__ import annotations

from servegate.engines.common import UVICORN_PHASE, common_fatal
from servegate.engines.profile import EngineProfile, Phase, Signature

__all__ = ["PROFILE"]

_ROOT_CAUSE = "the root cause is the traceback above this line (--json keeps 300 lines)"
_OOM_HINT = (
    "lower --mem-fraction-static, --max-running-requests, --chunked-prefill-size or "
    "--cuda-graph-max-bs, or free the GPU"
)

PROFILE = EngineProfile(
    name="sglang",
    default_port=30000,
    probe_path="/health",
    ready_lines=(r"The server is fired up and ready to roll!",),
    fatal=(
        Signature(
            pattern=r"Not enough memory\. Please try to increase --mem-fraction-static",
            kind="oom",
            title="not enough memory for the KV cache",
            hint="increase --mem-fraction-static or lower --max-running-requests / "
            "--context-length",
        ),
        Signature(
            pattern=r"The memory capacity is unbalanced",
            kind="gpu-busy",
            title="GPU memory is unbalanced across ranks",
            hint="another process holds memory on one GPU (often an orphan of an earlier "
            "run): free it",
        ),
        Signature(
            pattern=r"Scheduler hit an exception",
            kind="engine-init",
            title="the scheduler raised an exception",
            hint=_ROOT_CAUSE,
            wrapper=True,
        ),
        Signature(
            pattern=r"DataParallelController hit an exception",
            kind="engine-init",
            title="the data-parallel controller raised an exception",
            hint=_ROOT_CAUSE,
            wrapper=True,
        ),
        Signature(
            pattern=r"Detokenizer hit an exception",
            kind="engine-init",
            title="the detokenizer raised an exception",
            hint=_ROOT_CAUSE,
            wrapper=True,
        ),
        Signature(
            pattern=r"Received sigquit from a child process",
            kind="child-exit",
            title="a child process failed (sigquit)",
            hint=_ROOT_CAUSE,
            wrapper=True,
        ),
        Signature(
            pattern=r"scheduler died during initialization",
            kind="child-exit",
            title="a scheduler died during initialization",
            hint="exit code -9 usually means the OS OOM killer: check host memory; "
            "otherwise see the traceback above",
            wrapper=True,
        ),
        Signature(
            pattern=r"Initialization failed\. warmup error",
            kind="engine-init",
            title="the warmup request failed",
            hint="the first generation failed: see the traceback above "
            "(JIT toolchain, kernels, sampling parameters)",
            wrapper=True,
        ),
        Signature(
            pattern=r"crashed with exit code .* Triggering SIGQUIT",
            kind="child-exit",
            title="a subprocess crashed",
            hint=_ROOT_CAUSE,
            wrapper=True,
        ),
        *common_fatal(oom_hint=_OOM_HINT),
    ),
    phases=(
        Phase(name="parse_args", start=(r"server_args=ServerArgs\(",)),
        Phase(
            name="init_distributed",
            start=(r"Init torch distributed begin",),
            end=(r"Init torch distributed ends",),
        ),
        Phase(name="load_weights", start=(r"Load weight begin",), end=(r"Load weight end",)),
        Phase(
            name="allocate_kv_cache",
            start=(r"KV Cache is allocated",),
            end=(r"Memory pool end",),
        ),
        Phase(
            name="init_attention_backend",
            start=(r"Init attention backend begin",),
            end=(r"Init attention backend end",),
        ),
        Phase(
            name="capture_cuda_graphs",
            start=(r"Capture cuda graph begin",),
            end=(r"Capture cuda graph end",),
        ),
        Phase(
            name="capture_draft_cuda_graphs",
            start=(r"Capture draft cuda graph begin",),
            end=(r"Capture draft cuda graph end",),
        ),
        UVICORN_PHASE,
        Phase(
            name="warmup",
            start=(r"Uvicorn running on ",),
            end=(r"The server is fired up and ready to roll!",),
        ),
    ),
    essential_children=(r"sglang::scheduler", r"sglang::detokenizer"),
    metric_names={
        "prompt_tokens": "sglang:prompt_tokens_total",
        "generation_tokens": "sglang:generation_tokens_total",
        "spec_drafts": None,
        "spec_draft_tokens": None,
        "spec_accepted_tokens": None,
        "running": "sglang:num_running_reqs",
        "waiting": "sglang:num_queue_reqs",
        "ttft_seconds": "sglang:time_to_first_token_seconds",
        "itl_seconds": "sglang:inter_token_latency_seconds",
    },
)
