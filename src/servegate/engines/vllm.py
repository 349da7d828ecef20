"""vLLM (``vllm serve``): profile as data.

The socket is bound early but only listens once the engine is up, and ``/health``
does not generate, so READY also needs one real 1-token completion. The root cause of
an init failure is printed far above the final ``Engine core initialization failed``.
After READY, ``EngineDeadError`` is printed by a normal stop too, and an engine death
ends the API server with exit code 0: a dead engine is known by its essential child
``VLLM::EngineCore`` (or a ``VLLM::Worker``) exiting, not by the log or the exit code.
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

_ROOT_CAUSE = "the root cause is printed above the final traceback (--json keeps 300 lines)"
_OOM_HINT = (
    "lower --gpu-memory-utilization (room for CUDA graphs and other processes), "
    "--max-num-seqs or --max-model-len, add --enforce-eager, or free the GPU"
)
_KV_HINT = (
    "the KV cache cannot hold one request of --max-model-len: raise "
    "--gpu-memory-utilization, lower --max-model-len, or add GPUs (--tensor-parallel-size)"
)
_NCCL_HINT = (
    "rerun with NCCL_DEBUG=INFO; check NCCL_SOCKET_IFNAME and NCCL_P2P_DISABLE, that "
    "--tensor-parallel-size GPUs are visible and no stale process holds one; "
    "--disable-custom-all-reduce rules out vLLM's own all-reduce"
)
_DISTRIBUTED_HINT = (
    "a peer rank died or cannot be reached: the first error of another rank is above; "
    "across nodes check VLLM_HOST_IP, GLOO_SOCKET_IFNAME and the Ray cluster"
)
_CUDA_GRAPH_HINT = (
    "add --enforce-eager to run without CUDA graphs, or capture fewer sizes "
    "(--max-num-seqs, --compilation-config cudagraph_capture_sizes)"
)
_MODEL_HINT = (
    "check --model (a folder with config.json or a Hub id); for a gated or private repo "
    "accept its terms on the Hub and set HF_TOKEN"
)

PROFILE = EngineProfile(
    name="vllm",
    default_port=8000,
    probe_path="/health",
    # 0.32 says "Starting vLLM server on http://…"; older releases "Starting vLLM API server"
    ready_lines=(
        r"Application startup complete\.",
        r"Starting vLLM API server",
        r"Starting vLLM server on http://",
        r"Starting vLLM server on https://",
        # uvicorn's own line, printed once it listens (vLLM 0.5 and other releases that
        # print no line of their own after it)
        r"Uvicorn running on ",
    ),
    # 0.32 prints its "Starting vLLM server on https://..." before uvicorn has loaded its
    # TLS files (a key that is no PEM fails after it: "ssl.SSLError: [SSL] PEM lib"): with
    # no probe, that one is a ready line only once nothing failed right after it
    ready_before_bind=(r"Application startup complete\.", r"Starting vLLM server on https://"),
    generate_check=True,
    fatal=(
        Signature(
            pattern=r"Free memory on device .* on startup is less than desired GPU memory "
            r"utilization",
            kind="gpu-busy",
            title="not enough free GPU memory at startup",
            hint="another process holds GPU memory (often an orphan of an earlier run): "
            "free it or lower --gpu-memory-utilization",
        ),
        # the CPU backend's own ("Available memory on node 0 (19.94/23.59 GiB) on startup
        # is less than desired CPU memory utilization"): the memory it would size itself
        # to is more than the machine has free
        Signature(
            pattern=r"on startup is less than desired CPU memory utilization",
            kind="oom",
            title="not enough free memory on the node at startup",
            hint="set VLLM_CPU_KVCACHE_SPACE (GiB for the KV cache) or lower "
            "--gpu-memory-utilization; free the machine's memory",
        ),
        Signature(
            pattern=r"No available memory for the cache blocks",
            kind="oom",
            title="no memory left for the KV cache",
            hint="increase --gpu-memory-utilization or use a smaller model or quantization",
        ),
        Signature(
            pattern=r"is larger than the available KV cache memory",
            kind="oom",
            title="the KV cache cannot hold one request of max model length",
            hint=_KV_HINT,
        ),
        # the same check's opening words, for a line a terminal or a paste cut before
        # "which is larger than the available KV cache memory"
        Signature(
            pattern=r"To serve at least one request with the models?'s? max seq len",
            kind="oom",
            title="the KV cache cannot hold one request of max model length",
            hint=_KV_HINT,
        ),
        # vLLM before 0.8: the same check, counted in tokens
        Signature(
            pattern=r"is larger than the maximum number of tokens that can be stored in KV cache",
            kind="oom",
            title="the KV cache cannot hold one request of max model length",
            hint=_KV_HINT,
        ),
        Signature(
            # not the warning that VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 turns it into ("... in
            # model's config.json). VLLM_ALLOW_LONG_MAX_MODEL_LEN must be used with extreme
            # caution."): that start goes on; the error says "To allow overriding this
            # maximum, set the env var VLLM_ALLOW_LONG_MAX_MODEL_LEN=1." before those words
            pattern=r"User-specified max_model_len .* is greater than the derived max_model_len"
            r"(?!.*\)\. VLLM_ALLOW_LONG_MAX_MODEL_LEN must be used)",
            kind="max-model-len",
            title="--max-model-len is longer than the model allows",
            hint="lower --max-model-len to the model's max_position_embeddings (its "
            "config.json) or leave it out",
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
            pattern=r"Engine core initialization failed",
            kind="engine-init",
            title="engine core initialization failed",
            hint=_ROOT_CAUSE,
            wrapper=True,
        ),
        Signature(
            pattern=r"EngineCore failed to start",
            kind="engine-init",
            title="the engine core failed to start",
            hint=_ROOT_CAUSE,
            wrapper=True,
        ),
        # vLLM 0.6-0.7 (the V0 engine in its own process)
        Signature(
            pattern=r"Engine process failed to start",
            kind="engine-init",
            title="the engine process failed to start",
            hint=_ROOT_CAUSE,
            wrapper=True,
        ),
        Signature(
            pattern=r"(?:EngineCore|WorkerProc) hit an exception",
            kind="engine-init",
            title="the engine core or a worker raised an exception",
            hint=_ROOT_CAUSE,
            wrapper=True,
        ),
        Signature(
            pattern=r"WorkerProc initialization failed",
            kind="engine-init",
            title="a worker failed to initialize",
            hint=_ROOT_CAUSE,
            wrapper=True,
        ),
        Signature(
            pattern=r"Exception in worker .* while processing method",
            kind="engine-init",
            title="a worker raised an exception",
            hint=_ROOT_CAUSE,
            wrapper=True,
        ),
        Signature(
            pattern=r"Error executing method .* This might cause deadlock",
            kind="engine-init",
            title="a worker raised an exception",
            hint=_ROOT_CAUSE,
            wrapper=True,
        ),
        Signature(
            pattern=r"EngineDeadError",
            kind="engine-dead",
            title="the engine core died",
            hint=_ROOT_CAUSE,
            wrapper=True,
        ),
        Signature(
            pattern=r"EngineCore encountered a fatal error",
            kind="engine-dead",
            title="the engine core died",
            hint=_ROOT_CAUSE,
            wrapper=True,
        ),
        Signature(
            pattern=r"died unexpectedly, shutting down executor",
            kind="child-exit",
            title="a worker process died",
            hint="exit code -9 usually means the OS OOM killer; otherwise see the worker's "
            "traceback above",
            wrapper=True,
        ),
    ),
    phases=(
        # 0.32 prints no "vLLM API server version" (a banner instead) and no "Waiting for
        # init message": its first line of its own is "non-default args: {...}", and the
        # engine core's first is "Initializing a V1 LLM engine"; from there it starts its
        # workers (imports, gloo or NCCL) until one starts to load the model
        Phase(
            name="frontend_init",
            start=(r"vLLM API server version", r"non-default args: "),
            end=(r"Using max model len",),
        ),
        Phase(
            name="engine_init",
            start=(r"Using max model len", r"Waiting for init message from front-end"),
            end=(r"Initializing a V1 LLM engine",),
        ),
        Phase(name="start_workers", start=(r"Initializing a V1 LLM engine",)),
        Phase(name="init_distributed", start=(r"vLLM is using nccl==",)),
        Phase(
            name="load_weights",
            start=(r"Starting to load model",),
            end=(r"Model loading took", r"Loading weights took"),
        ),
        Phase(
            name="torch_compile",
            start=(r"Dynamo bytecode transform time", r"Start compiling function"),
            end=(r"torch\.compile takes",),
        ),
        # the CPU backend warms up (and compiles) before it sizes the KV cache
        Phase(
            name="warmup_compile",
            start=(r"Warming up model for the compilation",),
            end=(r"Warming up done",),
        ),
        Phase(
            name="profile_kv_cache",
            start=(r"Available KV cache memory:", r"GiB for KV cache on node"),
            end=(r"Maximum concurrency for", r"CPU KV cache size:"),
        ),
        Phase(
            name="capture_cuda_graphs",
            start=(r"Capturing CUDA graphs \(",),
            end=(r"Graph capturing finished in",),
        ),
        Phase(
            name="api_server",
            start=(r"init engine \(profile, create kv cache, warmup model\) took",),
            end=(r"Starting vLLM API server", r"Starting vLLM server on http"),
        ),
        UVICORN_PHASE,
    ),
    progress=(
        *SHARDS_PROGRESS,
        # "Capturing CUDA graphs (decode, FULL):  52%|...| 35/67 [00:03<00:03, ...]"
        Progress(
            pattern=r"Capturing CUDA graphs \(.*?(?P<done>\d+)/(?P<total>\d+)\b",
            unit="batch sizes",
            phase="capture_cuda_graphs",
        ),
        # 0.32: one line per model compiled ahead of time and saved to the compile cache
        # (on CPU inside warmup_compile; it follows "Compiling model again due to a load
        # failure" when the cached one could not be loaded)
        Progress(pattern=r"saved AOT compiled function to ", unit="graphs", count=True),
        # one line per compiled graph, or per graph loaded from the torch.compile cache
        Progress(
            pattern=r"Compiling a graph for ", unit="graphs", phase="torch_compile", count=True
        ),
        Progress(
            pattern=r"Directly load the compiled graph\(s\) for ",
            unit="graphs",
            phase="torch_compile",
            count=True,
        ),
        *COMMON_PROGRESS,
    ),
    essential_children=(r"VLLM::EngineCore", r"VLLM::Worker"),
    metric_prefix="vllm:",
    metric_names={
        "prompt_tokens": "vllm:prompt_tokens_total",
        "generation_tokens": "vllm:generation_tokens_total",
        "spec_drafts": "vllm:spec_decode_num_drafts_total",
        "spec_draft_tokens": "vllm:spec_decode_num_draft_tokens_total",
        "spec_accepted_tokens": "vllm:spec_decode_num_accepted_tokens_total",
        "running": "vllm:num_requests_running",
        "waiting": "vllm:num_requests_waiting",
        "ttft_seconds": "vllm:time_to_first_token_seconds",
        "itl_seconds": "vllm:inter_token_latency_seconds",
    },
)
