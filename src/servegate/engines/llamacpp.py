"""llama.cpp (``llama-server``, and ``python -m llama_cpp.server``): profile as data.

llama-server starts its HTTP server before the model loads: ``/health`` answers 503
``Loading model`` until it is loaded, while ``/v1/models`` already answers 200, so only
``/health`` counts. llama-cpp-python's server (uvicorn) opens its port only once the
model is loaded, prints ``Uvicorn running on http`` then, and has no ``/health`` route
at all: ``probe_absent_ok`` lets a 404 there confirm a ready line (a 503 never does).
Its ``Application startup complete`` is not a ready line: it precedes a failed bind.
Ready and fatal strings differ between releases; every spelling seen is listed.

llama.cpp prints the specific cause of a failed start first (``cudaMalloc failed: out
of memory``, ``failed to open GGUF file``, ``unknown model architecture``) and then a
cascade of generic lines from each caller (``failed to load model``, ``unable to load
model``, ``exiting due to model loading error``), never the other way round. So the
first fatal line decides, and it is the most specific one printed: the generic lines
decide only when they are all there is. The exception is a C++ exception that nobody
catches: ``terminate called ...`` comes first and its ``what():  <cause>`` line next,
then SIGABRT; the ``terminate`` line is a wrapper and the ``what()`` line the cause.
One failure is not final: when reserving the compute buffers fails with pipeline
parallelism on, llama.cpp logs the allocator's out-of-memory lines, then ``compute buffer
allocation failed, retrying without pipeline parallelism``, and goes on loading; those
signatures are ``withdrawn_by`` that line.
"""

from __future__ import annotations

from servegate.engines.common import COMMON_PROGRESS, UVICORN_PHASE, common_fatal
from servegate.engines.profile import EngineProfile, Phase, Signature

__all__ = ["PROFILE"]

_OOM_HINT = (
    "offload fewer layers (lower -ngl), shrink the context (-c) or the batch (-b / -ub), "
    "use a smaller quantization, or free the GPU (nvidia-smi shows who holds it)"
)
_KV_HINT = (
    "the KV cache does not fit: lower the context (-c) or --parallel, quantize the cache "
    "(--cache-type-k q8_0 --cache-type-v q8_0), or offload fewer layers (-ngl)"
)
_MODEL_HINT = (
    "check the -m / --model path and that the GGUF file is complete and was made by a "
    "llama.cpp converter of this version"
)
# the line before a failed context creation that says why (llama_init_from_model's own
# refusal: "V cache quantization requires flash_attn", "n_ctx ... exceeds ..."), not
# its INFO lines ("llama_init_from_model: n_ctx = 4096")
_CONTEXT_WHY = (
    r"llama_init_from_model: .*\b(?:requires?|not supported|unsupported|invalid|must|cannot"
    r"|exceeds?|too (?:large|small|many))\b"
    # the C++ exception the context's constructor threw ("failed to initialize the
    # context: std::bad_alloc" for an n_ctx no buffer holds)
    r"|llama_init_from_model: failed to initialize the context: \S"
)
# the backend's own refusal printed just above the graph allocator's summary ("ggml_
# gallocr_reserve_n: failed to allocate CPU buffer of size N"): the CPU backend's
# "_alloc_buffer: failed to allocate buffer of size N", Vulkan's "Requested buffer size
# exceeds device buffer size limit", a device's "allocation of size N failed"
_ALLOC_WHY = (
    r"_alloc_buffer: failed to allocate buffer of size \d+|\bexceeds (?:the )?device "
    r"(?:\w+ ){0,3}limit\b|\ballocation of size \d+ failed"
)
_ARCH_HINT = (
    "this llama.cpp build does not know the model's architecture: update llama.cpp "
    "(for llama-cpp-python, a release that vendors a newer llama.cpp)"
)
_ARGS_HINT = (
    "llama-server rejected a flag: check its spelling and value in llama-server --help of "
    "this build (older builds lack newer flags such as -hf)"
)
_PORT_HINT = "the port is taken or the host is wrong: pick another --port or --host"
_DOWNLOAD_HINT = (
    "the model download (-hf) failed: check the repository name, HF_TOKEN for a gated "
    "model and network access, or pass a local file with -m"
)
_ABORT_HINT = (
    "the server aborted on an uncaught C++ exception: the what() line is the cause; "
    "see the lines above it"
)

# llama_context's sched_reserve, when reserving the compute buffers with pipeline
# parallelism failed (the allocator has already logged its out-of-memory lines): it
# retries with one copy of the graph and usually goes on loading
_RETRY_WITHOUT_PP = r"compute buffer allocation failed, retrying without pipeline parallelism"
# the estimate of memory before the load (-fit, on by default) loads the model's
# metadata once; when that fails, llama-server says so and loads for real, which fails
# again in the same words if the model is at fault, and may succeed if the estimate was
_FIT_FAILED = r"common_fit_params: encountered an error while trying to fit params"

_CUDA_ERROR = Signature(
    pattern=r"CUDA error: ",
    kind="cuda-error",
    title="CUDA error",
    hint="a CUDA runtime failure: check the driver (nvidia-smi), the GPU's health (Xid "
    "errors in dmesg) and that the build matches the installed CUDA",
)

# most specific first: when several match one line, the first one wins
_FATAL: tuple[Signature, ...] = (
    # out of memory, in each spelling of the allocator's callers
    Signature(
        pattern=r"cudaMalloc failed: out of memory",
        kind="oom",
        title="CUDA out of memory (cudaMalloc)",
        hint=_OOM_HINT,
        withdrawn_by=_RETRY_WITHOUT_PP,
    ),
    Signature(
        pattern=r"failed to allocate buffer for kv cache",
        kind="oom",
        rooted=True,
        title="the KV cache does not fit in memory",
        hint=_KV_HINT,
        # the backend's allocator says so first, with the size it could not get
        # ("ggml_backend_cpu_buffer_type_alloc_buffer: failed to allocate buffer of size
        # 17179869216"): the root of this consequence
        explained_by=r"_alloc_buffer: failed to allocate buffer of size \d+",
    ),
    Signature(
        pattern=r"unable to allocate \S+ buffer",
        kind="oom",
        rooted=True,
        title="a model buffer could not be allocated",
        hint=_OOM_HINT,
    ),
    Signature(
        pattern=r"failed to allocate \S+ buffer of size",
        kind="oom",
        rooted=True,
        title="a buffer could not be allocated",
        hint=_OOM_HINT,
        withdrawn_by=_RETRY_WITHOUT_PP,
        explained_by=_ALLOC_WHY,
    ),
    Signature(
        pattern=r"failed to allocate compute buffers",
        kind="oom",
        rooted=True,
        title="the compute buffers do not fit in memory",
        hint=_OOM_HINT,
        withdrawn_by=_RETRY_WITHOUT_PP,
        explained_by=_ALLOC_WHY,
    ),
    Signature(
        pattern=r"CUDA error: out of memory",
        kind="oom",
        title="CUDA out of memory",
        hint=_OOM_HINT,
    ),
    # the model itself
    # no architecture at all (the key missing or empty): the file is damaged, not newer
    Signature(
        pattern=r"unknown model architecture: ''",
        kind="model-load",
        title="the GGUF file names no model architecture",
        hint=_MODEL_HINT,
    ),
    Signature(
        pattern=r"unknown model architecture: ",
        kind="unsupported-model",
        title="llama.cpp does not know this model architecture",
        hint=_ARCH_HINT,
    ),
    # no projector type at all (the key missing from a projector's GGUF: "unknown
    # projector type:" with nothing after it): the file is incomplete, not newer
    Signature(
        pattern=r"unknown projector type: ?$",
        kind="model-load",
        title="the projector's GGUF file names no projector type",
        hint=_MODEL_HINT,
    ),
    # a type the model uses that this build does not know yet (a tokenizer, a
    # multimodal projector): a model newer than the engine, before the loader's
    # "error loading model" / "failed to load model" of the same line
    Signature(
        pattern=r"unknown (?:pre-tokenizer|projector) type: ",
        kind="unsupported-model",
        title="llama.cpp does not know a type this model uses",
        hint=_ARCH_HINT,
    ),
    Signature(
        pattern=r"unknown tokenizer: ",
        kind="unsupported-model",
        title="llama.cpp does not know the tokenizer this model uses",
        hint=_ARCH_HINT,
    ),
    Signature(
        pattern=r"failed to open GGUF file",
        kind="model-load",
        title="the GGUF file could not be opened",
        hint=_MODEL_HINT,
    ),
    # gguf.cpp's own errors: bad magic (an old GGML file, a Git LFS pointer), truncated
    # or corrupt data
    Signature(
        pattern=r"gguf_init_from_file",
        kind="model-load",
        title="the file is not a readable GGUF model",
        hint=_MODEL_HINT,
    ),
    # the loader's summary of any of the above: generic
    Signature(
        pattern=r"llama_model_loader: failed to load model",
        kind="model-load",
        rooted=True,
        title="the model failed to load",
        hint=_MODEL_HINT,
    ),
    Signature(
        pattern=r"ValueError: Model path does not exist:",
        kind="model-load",
        title="the model path does not exist",
        hint="check the --model path (llama-cpp-python wants a GGUF file)",
    ),
    # a Vulkan call's own error code inside the loader's line ("error loading model:
    # vk::PhysicalDevice::createDevice: ErrorExtensionNotPresent"): the device or its
    # driver failed, not the model (its out-of-memory codes are the oom signatures')
    Signature(
        pattern=r"error loading model: vk::\w+(?:::\w+)*: ?Error(?!OutOf)\w+",
        kind="cuda-error",
        title="a Vulkan call failed",
        hint="the Vulkan device or its driver refused the call: update the GPU driver and "
        "its Vulkan runtime (vulkaninfo lists the device and its extensions), or pick "
        "another device or backend",
        # the driver's own out-of-memory line above it ("radv/amdgpu: Not enough memory
        # for command submission", then "vk::Queue::submit: ErrorDeviceLost"): the lost
        # device is its consequence
        explained_by=r"(?i)\bnot enough (?:device |gpu |video |host )?memory\b"
        r"|\bout of (?:device |gpu |video |host )?memory\b",
        narrow=True,
    ),
    # "llama_model_load: error loading model: <why>" and the older bare spelling; a
    # backend's buffer allocation that failed above it is the root ("ggml_backend_metal_
    # buffer_from_ptr: error: failed to allocate buffer, size = 0.00 MiB")
    Signature(
        pattern=r"error loading model: ",
        kind="model-load",
        rooted=True,
        title="the model failed to load",
        hint=_MODEL_HINT,
        withdrawn_by=_FIT_FAILED,
        explained_by=r"^ggml_\w*buffer\w*: (?:error: )?failed to allocate buffer",
    ),
    # -hf downloads (common/arg.cpp)
    Signature(
        pattern=r"error from HF API, response code",
        kind="download",
        title="the Hugging Face API refused the model download",
        hint=_DOWNLOAD_HINT,
    ),
    Signature(
        pattern=r"model is private or does not exist",
        kind="download",
        title="the Hugging Face repository is private or does not exist",
        hint=_DOWNLOAD_HINT,
    ),
    # the command line (common/arg.cpp)
    Signature(
        pattern=r"error: invalid argument: ",
        kind="bad-args",
        title="llama-server does not know a flag",
        hint=_ARGS_HINT,
    ),
    Signature(
        pattern=r"error: unknown argument: ",
        kind="bad-args",
        title="llama-server does not know a flag",
        hint=_ARGS_HINT,
    ),
    # the older hand-written parser (common.cpp, llamafile, the examples): a flag that
    # lacks its value or has a bad one
    Signature(
        pattern=r"error: invalid parameter for argument: ",
        kind="bad-args",
        title="a flag is missing its value or has a bad one",
        hint=_ARGS_HINT,
    ),
    # llamafile's v2 server: "PROGRAM: --host unknown argument" (the flag first)
    Signature(
        pattern=r"(?:^|\s)-{1,2}[\w-]+ unknown argument",
        kind="bad-args",
        title="llama-server does not know a flag",
        hint=_ARGS_HINT,
    ),
    Signature(
        pattern=r"error while handling argument",
        kind="bad-args",
        rooted=True,
        title="a flag has an invalid value",
        hint=_ARGS_HINT,
    ),
    # the HTTP port; a host that is not loopback nor every address: most often not an
    # address of this machine (a name that resolves elsewhere, another box's IP, an IPv6
    # address in brackets, "[::]", which it takes as a name), the line being the same
    # for both
    Signature(
        pattern=r"couldn't bind HTTP server socket, hostname: (?!0\.0\.0\.0,|127(?:\.\d+){3},"
        r"|localhost,|::1?,|/)[^,\s]+, port: ",
        kind="bad-args",
        title="the HTTP server could not bind its socket on that host",
        hint="--host must be an address of this machine (0.0.0.0: all of them, 127.0.0.1: "
        "this machine only); the same line means a taken port: check --port too",
    ),
    # a port below 1024 on a host of this machine: a user who is not root may not bind
    # it (CAP_NET_BIND_SERVICE); the line is the same for a taken one
    Signature(
        pattern=r"couldn't bind HTTP server socket, hostname: [^,\s]+, port: "
        r"(?:[1-9]\d{0,2}|10[01]\d|102[0-3])\b",
        kind="permission",
        title="the HTTP server could not bind a privileged port",
        hint="ports below 1024 need root or CAP_NET_BIND_SERVICE: pick --port 1024 or "
        "above (as root, the port is taken: see what listens on it with ss -ltnp)",
        narrow=True,
    ),
    Signature(
        pattern=r"couldn't bind HTTP server socket",
        kind="port-in-use",
        title="the HTTP server could not bind its socket",
        hint=_PORT_HINT,
    ),
    Signature(
        pattern=r"exiting due to HTTP server error",
        kind="port-in-use",
        title="the HTTP server could not start",
        hint=_PORT_HINT,
    ),
    # generic lines each caller prints after the cause: they decide only alone, the
    # first of them (the loader's own) being the most precise
    Signature(
        pattern=r"failed to load model",
        kind="model-load",
        rooted=True,
        title="the model failed to load",
        hint=_MODEL_HINT,
        withdrawn_by=_FIT_FAILED,
        # the loader's own reason above it where it did not decide by itself (a wrapper
        # relays llama-server's stderr inside its HTTP answer: "status=500 body=...
        # error loading model: illegal split file idx: 3 ..."): the specific line
        # and a -hf repository that could not be fetched ("get_repo_commit: error: HTTPLIB
        # failed: ..."), after which the loader has no file at all ("exactly one out
        # metadata, path_model, and file must be defined")
        explained_by=r"error loading model: \S|\bget_repo_\w+: error: \S",
    ),
    Signature(
        pattern=r"unable to load model",
        kind="model-load",
        rooted=True,
        title="the model failed to load",
        hint=_MODEL_HINT,
    ),
    Signature(
        pattern=r"exiting due to model loading error",
        kind="model-load",
        rooted=True,
        title="the model failed to load",
        hint=_MODEL_HINT,
        # the chat template's own error above it (the jinja engine's "Error: Expected
        # iterable or object type in for loop", the server's "chat template parsing
        # error: ..."): what failed to load; a speculative decoding's draft or MTP
        # context the model cannot give ("context type MTP requested but model doesn't
        # contain MTP layers", "[spec] failed to measure MTP context memory: ...")
        explained_by=r"^Error: \S|\bchat template (?:parsing )?error\b"
        r"|\b(?:MTP|draft|speculative)\b.{0,60}\b(?:requested but|failed to (?:measure|create"
        r"|load|init))\b",
    ),
    Signature(
        pattern=r"failed to create context with model",
        kind="model-load",
        rooted=True,
        title="the model's context could not be created",
        hint=_OOM_HINT,
        explained_by=_CONTEXT_WHY,
    ),
    Signature(
        pattern=r"Failed to create llama_context",
        kind="model-load",
        rooted=True,
        title="the model's context could not be created",
        hint=_OOM_HINT,
        explained_by=_CONTEXT_WHY,
    ),
    Signature(
        pattern=r"terminate called after throwing an instance of",
        kind="abort",
        title="uncaught C++ exception",
        hint=_ABORT_HINT,
        wrapper=True,
    ),
    Signature(
        pattern=r"terminate called without an active exception",
        kind="abort",
        title="the server called std::terminate",
        hint=_ABORT_HINT,
        wrapper=True,
    ),
)

PROFILE = EngineProfile(
    name="llamacpp",
    default_port=8080,
    probe_path="/health",
    probe_absent_ok=True,
    ready_lines=(
        r"model loaded",
        r"listening on http",
        r"all slots are idle",
        r"Uvicorn running on http",
    ),
    fatal=(
        *_FATAL,
        *common_fatal(oom_hint=_OOM_HINT, port_hint=_PORT_HINT, args_hint=_ARGS_HINT),
        # any other CUDA runtime error ggml reports (after the specific ones above)
        _CUDA_ERROR,
        # an uncaught exception's message, when no signature above knows it
        Signature(
            pattern=r"what\(\):  ",
            kind="abort",
            title="uncaught C++ exception",
            hint=_ABORT_HINT,
        ),
    ),
    phases=(
        Phase(name="load_model", start=(r"loading model",), end=(r"model loaded",)),
        Phase(
            name="warmup",
            start=(r"warming up the model",),
            end=(r"all slots are idle", r"listening on http"),
        ),
        UVICORN_PHASE,
    ),
    progress=COMMON_PROGRESS,
    metric_prefix="llamacpp:",
    metric_names={
        "prompt_tokens": "llamacpp:prompt_tokens_total",
        "generation_tokens": "llamacpp:tokens_predicted_total",
        "spec_drafts": "llamacpp:spec_decode_num_drafts_total",
        "spec_draft_tokens": "llamacpp:spec_decode_num_draft_tokens_total",
        "spec_accepted_tokens": "llamacpp:spec_decode_num_accepted_tokens_total",
        "running": "llamacpp:requests_processing",
        "waiting": "llamacpp:requests_deferred",
        "ttft_seconds": None,
        "itl_seconds": None,
    },
)
