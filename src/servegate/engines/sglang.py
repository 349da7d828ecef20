"""SGLang (``python -m sglang.launch_server``): profile as data.

The ready line is printed after the warmup request; ``/health`` answers 503 until then
and ``/v1/models`` answers 200 during warmup, so it is never used. A scheduler that dies
at the C++ level can leave the HTTP process alive, hence the essential children.
"""

from __future__ import annotations

from servegate.engines.common import (
    COMMON_PROGRESS,
    SHARDS_PROGRESS,
    UVICORN_PHASE,
    common_fatal,
)
from servegate.engines.profile import EngineProfile, Phase, Progress, Signature

__all__ = ["PROFILE"]

_ROOT_CAUSE = "the root cause is the traceback above this line (--json keeps 300 lines)"
_OOM_HINT = (
    "lower --mem-fraction-static, --max-running-requests, --chunked-prefill-size or "
    "--cuda-graph-max-bs, or free the GPU"
)
_NCCL_HINT = (
    "rerun with NCCL_DEBUG=INFO; check NCCL_SOCKET_IFNAME, that --tp GPUs are visible "
    "and no stale process holds one; --disable-custom-all-reduce rules out SGLang's own "
    "all-reduce"
)
_DISTRIBUTED_HINT = (
    "a peer rank died or cannot be reached: the first error of another rank is above; "
    "across nodes check --dist-init-addr, --nnodes / --node-rank, GLOO_SOCKET_IFNAME and "
    "that every node started"
)
_CUDA_GRAPH_HINT = (
    "confirm with --disable-cuda-graph, then lower --cuda-graph-max-bs; with "
    "--enable-torch-compile, try without it"
)
_MODEL_HINT = (
    "check --model-path (a folder with config.json or a Hub id); for a gated or private "
    "repo accept its terms on the Hub and set HF_TOKEN"
)

PROFILE = EngineProfile(
    name="sglang",
    default_port=30000,
    probe_path="/health",
    # the warmup's own line; a paste that starts later shows the server serving: a
    # /health_generate answered 200 (it runs a real generation)
    ready_lines=(
        r"The server is fired up and ready to roll!",
        r'"GET /health_generate HTTP/1\.[01]" 200',
    ),
    fatal=(
        Signature(
            pattern=r"Not enough memory\. Please try to increase --mem-fraction-static",
            kind="oom",
            title="not enough memory for the KV cache",
            hint="increase --mem-fraction-static or lower --max-running-requests / "
            "--context-length",
        ),
        Signature(
            pattern=r"runs out of memory\. Please set a smaller number",
            kind="oom",
            title="the request or token pool ran out of memory",
            hint="lower --max-running-requests, or raise --mem-fraction-static",
        ),
        Signature(
            pattern=r"(?:Prefill|Decode) out of memory",
            kind="oom",
            title="the KV cache ran out of memory",
            hint=_OOM_HINT,
        ),
        Signature(
            pattern=r"The memory capacity is unbalanced",
            kind="gpu-busy",
            title="GPU memory is unbalanced across ranks",
            hint="another process holds memory on one GPU (often an orphan of an earlier "
            "run): free it",
        ),
        # raised as ValueError; a bare "Warning: ..." line is only a warning
        Signature(
            pattern=r"Error: (?:Warning: )?User-specified context_length",
            kind="max-model-len",
            title="--context-length is longer than the model allows",
            hint="lower --context-length to the model's limit, or set "
            "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1 if the model supports more",
        ),
        # the model registry skips a model module that fails to import ("Ignore import
        # error when loading sglang.srt.models.X: ..."), so the architecture then looks
        # unsupported: that import error is the cause
        Signature(
            pattern=r"are not supported for now",
            kind="unsupported-model",
            title="SGLang does not support this model's architecture",
            hint="upgrade SGLang, or check config.json's architectures; if an 'Ignore import "
            "error' line names the model's module, fix that import (a missing or mismatched "
            "package, a failed kernel build)",
            explained_by=r"Ignore import error when loading",
        ),
        Signature(
            pattern=r"Unsupported architectures: ",
            kind="unsupported-model",
            title="SGLang does not support this model's architecture",
            hint="upgrade SGLang, or check config.json's architectures",
            explained_by=r"Ignore import error when loading",
        ),
        *common_fatal(
            oom_hint=_OOM_HINT,
            nccl_hint=_NCCL_HINT,
            distributed_hint=_DISTRIBUTED_HINT,
            cuda_graph_hint=_CUDA_GRAPH_HINT,
            model_hint=_MODEL_HINT,
        ),
        # wrappers: they say that something failed; the cause is printed near them
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
            pattern=r"TpModelWorkerClient hit an exception",
            kind="engine-init",
            title="the model worker thread raised an exception",
            hint=_ROOT_CAUSE,
            wrapper=True,
        ),
        # SGLang before 0.3
        Signature(
            pattern=r"Exception in (?:run_tp_server|ModelRpcClient|ModelTpServer)",
            kind="engine-init",
            title="a model worker raised an exception",
            hint=_ROOT_CAUSE,
            wrapper=True,
        ),
        # which child and how it ended (its exit code, -9 a SIGKILL) says more than the
        # parent's "Received sigquit" after it
        Signature(
            # not a child that a stop ended (-15, -2): what a SIGTERM to the group prints
            pattern=r"crashed with exit code (?!-(?:15|2)\b).* Triggering SIGQUIT",
            kind="child-exit",
            title="a subprocess crashed",
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
            pattern=r"Rank \d+ scheduler is dead",
            kind="child-exit",
            title="a scheduler process died",
            hint="exit code -9 usually means the OS OOM killer: check host memory; "
            "otherwise see the traceback above",
            wrapper=True,
        ),
        # the diffusion server's warmup (multimodal_gen's http_server)
        Signature(
            pattern=r"Server warmup failed; aborting startup",
            kind="engine-init",
            title="the warmup request failed",
            hint="the server could not answer its own warmup: see the exception after this "
            "line (an HTTP proxy in the environment, a client library mismatch)",
            wrapper=True,
        ),
        # the warmup thread itself raised before its request (an input file that
        # --debug-tensor-dump-input-file names is missing): nothing warms the server up,
        # and /health answers 503 for as long as it runs
        Signature(
            pattern=r"^Exception in thread .*\(_(?:wait_and_)?warmup\w*\):",
            kind="engine-init",
            title="the warmup thread raised an exception",
            hint="the server will never be ready: see the exception after this line",
            wrapper=True,
        ),
        Signature(
            pattern=r"Initialization failed\. warmup error",
            kind="engine-init",
            title="the warmup request failed",
            hint="the first generation failed: see the traceback above "
            "(JIT toolchain, kernels, sampling parameters, an HTTP proxy in the environment)",
            wrapper=True,
        ),
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
    progress=(
        *SHARDS_PROGRESS,
        # "Capturing batches (bs=128 avail_mem=57.52 GB):   5%|...| 1/20 [00:00<00:03, ...]"
        Progress(
            pattern=r"Capturing batches \(bs=.*?(?P<done>\d+)/(?P<total>\d+)\b",
            unit="batch sizes",
            phase="capture_cuda_graphs",
        ),
        *COMMON_PROGRESS,
    ),
    essential_children=(r"sglang::scheduler", r"sglang::detokenizer"),
    metric_prefix="sglang:",
    extra_metric_names={"spec_accept_length": "sglang:spec_accept_length"},
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
