"""TensorRT-LLM (``trtllm-serve``): profile as data.

uvicorn starts only after the model is built and warmed up; ``/health`` checks only the
executor, so the probe is ``/health_generate``, which runs one real 1-token generation.
MPI workers live in other process groups: stopping relies on the descendant snapshot.

The executor's failures arrive in two shapes: a rank's own line
(``[TRT-LLM] [E] Failed to initialize executor on rank N: <cause>``) or an exception
line (``RuntimeError: Executor creation failed due to insufficient GPU memory.``),
followed by the proxy's generic ``Executor worker returned error``. TensorRT's engine
loader names a version or GPU mismatch (``The engine plan file is not compatible ...``).
The command line is click's: ``Error: No such option: --x``.
"""

from __future__ import annotations

from servegate.engines.common import COMMON_PROGRESS, UVICORN_PHASE, common_fatal
from servegate.engines.profile import EngineProfile, Phase, Signature

__all__ = ["PROFILE"]

_OOM_HINT = (
    "lower --kv_cache_free_gpu_memory_fraction, --max_batch_size, --max_num_tokens or "
    "--max_seq_len, or spread the model over more GPUs (--tp_size / --pp_size)"
)
_KV_HINT = (
    "the KV cache cannot hold one whole sequence: raise --kv_cache_free_gpu_memory_fraction "
    "or lower --max_seq_len"
)
_ENGINE_HINT = (
    "the TensorRT engine was built by another TensorRT / TensorRT-LLM version: rebuild it "
    "with trtllm-build of the installed version (or serve the Hugging Face checkpoint)"
)
_ARCH_HINT = (
    "this TensorRT-LLM version cannot serve the model's architecture: check its supported "
    "models, upgrade TensorRT-LLM, or serve the model with another engine"
)
_ARGS_HINT = (
    "trtllm-serve rejected a flag or its value: check trtllm-serve serve --help of this "
    "version (its options use underscores: --tp_size, --max_batch_size)"
)
_ABORT_HINT = (
    "a rank aborted on an uncaught C++ exception: the what() line is the cause; "
    "see the lines above it"
)
_GPUS_HINT = (
    "--tp_size x --pp_size asks for more GPUs than this node shows: lower them, check "
    "CUDA_VISIBLE_DEVICES, or launch across nodes with mpirun / trtllm-llmapi-launch"
)

PROFILE = EngineProfile(
    name="trtllm",
    default_port=8000,
    probe_path="/health_generate",
    # trtllm-serve's uvicorn; tritonserver (the TensorRT-LLM backend) says it serves once
    # every model loaded: "Started HTTPService at 0.0.0.0:8000", and its gRPC service
    ready_lines=(
        r"Application startup complete\.",
        r"Uvicorn running on ",
        r"Started HTTPService at ",
        r"Started GRPCInferenceService at ",
    ),
    ready_before_bind=(r"Application startup complete\.",),
    fatal=(
        # executor creation (py_executor_creator.py explains OOMs this way)
        Signature(
            pattern=r"Executor creation failed due to insufficient GPU memory",
            kind="oom",
            title="the executor does not fit in GPU memory",
            hint=_OOM_HINT,
        ),
        Signature(
            pattern=r"Executor creation failed with an error which might indicate insufficient",
            kind="oom",
            title="the executor probably does not fit in GPU memory",
            hint=_OOM_HINT,
        ),
        Signature(
            pattern=r"Executor creation failed with NCCL error",
            kind="nccl",
            title="NCCL failed while the executor was created",
            hint="rerun with NCCL_DEBUG=INFO; check that every GPU is visible and that no "
            "stale process holds one",
        ),
        Signature(
            pattern=r"maxTokensInPagedKvCache.*must be large enough",
            kind="oom",
            title="the KV cache cannot hold one sequence",
            hint=_KV_HINT,
        ),
        Signature(
            pattern=r"Cuda Runtime \(out of memory\)",
            kind="oom",
            title="CUDA out of memory in the TensorRT-LLM runtime",
            hint=_OOM_HINT,
        ),
        Signature(
            pattern=r"CUDA runtime error in .*: out of memory",
            kind="oom",
            title="CUDA out of memory in the TensorRT-LLM runtime",
            hint=_OOM_HINT,
        ),
        # the engine file and the plugins it was built with
        Signature(
            pattern=r"The engine plan file is not compatible with this version of TensorRT",
            kind="engine-version",
            title="the engine was built by another TensorRT version",
            hint=_ENGINE_HINT,
        ),
        Signature(
            pattern=r"getPluginCreator could not find plugin",
            kind="engine-version",
            title="the engine needs a plugin this TensorRT-LLM does not register",
            hint=_ENGINE_HINT,
        ),
        # the plugins' deserialisation: engine data written by another TensorRT-LLM
        # (gptAttentionCommon's TLLM_CHECK(d == a + length), TensorRT's own loader)
        Signature(
            pattern=r"Assertion failed: d == a \+ length",
            kind="engine-version",
            title="a plugin cannot read the engine: it was built by another TensorRT-LLM",
            hint=_ENGINE_HINT,
        ),
        Signature(
            pattern=r"Failed to deserialize cuda engine",
            kind="engine-version",
            title="the engine cannot be deserialized (built by another version, or damaged)",
            hint=_ENGINE_HINT,
        ),
        Signature(
            pattern=r"The engine plan file is generated on an incompatible device",
            kind="cuda-arch",
            title="the engine was built for another GPU",
            hint="rebuild the engine with trtllm-build on this GPU model",
        ),
        # the model
        Signature(
            pattern=r"Error: .*is not supported in TRT-LLM yet",
            kind="unsupported-model",
            title="TensorRT-LLM does not support this model architecture",
            hint=_ARCH_HINT,
        ),
        Signature(
            pattern=r"Error: Unknown architecture for AutoModelForCausalLM",
            kind="unsupported-model",
            title="TensorRT-LLM does not support this model architecture",
            hint=_ARCH_HINT,
        ),
        # the command line (click) and what it asks of the machine
        Signature(
            pattern=r"Only \d+ GPUs are available, but \d+ are required",
            kind="bad-args",
            title="more GPUs asked for than this node has",
            hint=_GPUS_HINT,
            narrow=True,
        ),
        Signature(
            pattern=r"Error: No such option: ",
            kind="bad-args",
            title="trtllm-serve does not know a flag",
            hint=_ARGS_HINT,
        ),
        Signature(
            pattern=r"Error: Invalid value for ",
            kind="bad-args",
            title="a flag has an invalid value",
            hint=_ARGS_HINT,
        ),
        Signature(
            pattern=r"Error: Missing argument ",
            kind="bad-args",
            title="the model argument is missing",
            hint=_ARGS_HINT,
        ),
        Signature(
            pattern=r"Error: Got unexpected extra argument",
            kind="bad-args",
            title="an unexpected extra argument",
            hint=_ARGS_HINT,
        ),
        Signature(
            pattern=r"CUDA error: out of memory",
            kind="oom",
            title="CUDA out of memory",
            hint=_OOM_HINT,
        ),
        Signature(
            pattern=r"!!! Segfault encountered !!!",
            kind="segfault",
            title="segmentation fault in the executor",
            hint="often during CUDA-graph warmup: try a smaller cuda_graph_config batch list "
            "or disable CUDA graphs to confirm",
        ),
        Signature(
            pattern=r"CppExecutorError",
            kind="engine-init",
            title="the C++ executor failed",
            hint="see the executor error above; check the engine was built for this GPU",
            wrapper=True,
        ),
        Signature(
            pattern=r"Executor worker returned error",
            kind="engine-init",
            title="an executor worker failed",
            hint="see the worker traceback above",
            wrapper=True,
        ),
        # Open MPI refuses to start the ranks: more than the node has, or no MPI at all
        Signature(
            pattern=r"There are not enough slots available in the system",
            kind="mpi",
            title="mpirun asked for more ranks than this node has slots",
            hint="lower -n (it must equal tp_size x pp_size) or pass --oversubscribe / a "
            "hostfile with more slots",
        ),
        Signature(
            pattern=r"An error occurred in MPI_Init",
            kind="mpi",
            title="MPI could not start",
            hint="check the MPI installation (the container's), that it is started by "
            "mpirun when the world size is above 1, and the MPI / UCX settings",
        ),
        # tritonserver: gRPC core's own error tree when a port is taken; tritonserver's
        # main.cc line after it names the service and the socket (and decides)
        Signature(
            pattern=r"No address added out of total \d+ resolved",
            kind="port-in-use",
            title="a server port could not be bound",
            hint="another process (or another tritonserver rank) holds the port: stop it, "
            "or pass other --grpc-port / --http-port / --metrics-port",
            wrapper=True,
        ),
        Signature(
            pattern=r"failed to start \w+ (?:service|endpoint): .*already in use",
            kind="port-in-use",
            title="a tritonserver port is already in use",
            hint="another process (or another tritonserver rank) holds the port: stop it, "
            "or pass other --grpc-port / --http-port / --metrics-port",
        ),
        Signature(
            pattern=r"MPI_ABORT",
            kind="mpi",
            title="an MPI rank aborted",
            hint="one rank failed: its traceback is above; check every GPU is visible",
            wrapper=True,
        ),
        *common_fatal(oom_hint=_OOM_HINT, args_hint=_ARGS_HINT),
        # after the specific CUDA errors above and in the shared set
        Signature(
            pattern=r"CUDA error: ",
            kind="cuda-error",
            title="CUDA error",
            hint="a CUDA runtime or hardware failure (NVLink, ECC, Xid): check nvidia-smi "
            "and dmesg, then rerun; a repeat on one GPU points at that GPU",
        ),
        # common/cudaUtils.h check(): "CUDA runtime error in <call>: <error>", any error
        # (its out-of-memory form is matched above)
        Signature(
            pattern=r"CUDA runtime error in ",
            kind="cuda-error",
            title="a CUDA runtime call failed in TensorRT-LLM",
            hint="the matched line names the call and the error; 'operation not supported' "
            "means this GPU, driver or virtualisation lacks the feature (e.g. memory pools "
            "under vGPU/WSL): upgrade the driver or use another GPU",
        ),
        # an uncaught C++ exception (TllmException) aborts the rank: its what() line is
        # the cause, and names an MPI failure when there is one
        Signature(
            pattern=r"Failed: MPI error",
            kind="mpi",
            title="an MPI call failed",
            hint="check that every rank started (mpirun -n / --tp_size), that the GPUs see "
            "each other, and the MPI / UCX settings",
        ),
        Signature(
            pattern=r"terminate called after throwing an instance of",
            kind="abort",
            title="uncaught C++ exception",
            hint=_ABORT_HINT,
            wrapper=True,
        ),
        Signature(
            pattern=r"what\(\):  ",
            kind="abort",
            title="uncaught C++ exception",
            hint=_ABORT_HINT,
        ),
        # a rank's own report, whatever its cause: the cause follows on the same line
        Signature(
            pattern=r"Failed to initialize executor on rank \d+",
            kind="engine-init",
            title="an executor rank failed to start",
            hint="the rank's error is on the matched line; its traceback follows",
            narrow=True,
        ),
    ),
    phases=(
        Phase(
            name="cuda_graph_warmup",
            # "generation-only" in some releases, "generation only" in others
            start=(r"Run generation[- ]only CUDA graph warmup",),
        ),
        Phase(name="piecewise_cuda_graph_warmup", start=(r"Running piecewise CUDA graph warmup",)),
        UVICORN_PHASE,
    ),
    progress=COMMON_PROGRESS,
    metrics_path="/prometheus/metrics",
    metric_prefix="trtllm_",
    metric_names={
        "prompt_tokens": "trtllm_prompt_tokens_total",
        "generation_tokens": "trtllm_generation_tokens_total",
        "spec_drafts": None,
        "spec_draft_tokens": "trtllm_spec_decode_num_draft_tokens_total",
        "spec_accepted_tokens": "trtllm_spec_decode_num_accepted_tokens_total",
        "running": "trtllm_num_requests_running",
        "waiting": "trtllm_num_requests_waiting",
        "ttft_seconds": "trtllm_time_to_first_token_seconds",
        "itl_seconds": "trtllm_time_per_output_token_seconds",
    },
)
