"""Families of crash kinds, and the words that name one in an ordinary error line.

A fatal signature (``engines/<engine>.py``) names its kind exactly and decides on sight.
Many failures end in a line no signature names, because the same words also appear in
lines an engine prints and survives (``ImportError`` of an optional kernel, ``undefined
symbol`` in a flash-attn import that falls back, tritonserver's ``failed to load`` of
one optional model). Once a verdict is a CRASH for another reason (the process exited,
a wrapper line waited, an essential child died), the line chosen as its cause
(``gate/cause.py``) is read for these words, and its kind is the first family that
they name, in this order:

========== ===================================================================
family     kinds
========== ===================================================================
memory     ``oom``, ``gpu-busy``
disk       ``disk`` (no space, quota, read-only), ``permission`` (denied, EACCES)
port       ``port-in-use``
model      ``model-load`` (files, config, gated or private repos, tokens),
           ``unsupported-model``
install    ``install`` (imports, undefined symbols, missing libraries, version
           mismatches, failed builds), ``engine-version``
cuda       ``cuda-arch`` (kernel image, PTX, ptxas, compute capability),
           ``cuda-error``, ``cuda-graph``
distributed ``nccl``, ``distributed`` (gloo, c10d, the store), ``mpi`` (MPI, world
           size)
arguments  ``bad-args``, ``max-model-len``
download   ``download`` (the Hub or the network)
engine     ``engine-init``, ``engine-dead``, ``child-exit``, ``shard``, ``webserver``
process    ``exit``, ``killed``, ``segfault``, ``abort`` (a process a wrapper ran that
           died of SIGSEGV or SIGABRT: before install), ``fatal-python``
timeout    ``stuck``, ``stall``, ``deadline``
========== ===================================================================

Kinds are a contract (scripts, the start history and the campaign's flag search read
them): a kind is added, never renamed. The family (the verdict's ``family``) is the
coarse class for a reader who does not need the kind.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = [
    "ADAPTER_FILES",
    "ADAPTER_METHOD",
    "FAMILY",
    "KIND_HINTS",
    "SHM_TOO_SMALL",
    "Words",
    "family_of",
    "kind_order",
    "words_hint",
    "words_kind",
]

# Words with a fix narrower than their kind's (gate/decide.py picks that fix by them):
# the shared-memory folder too small for the engine's buffers (a container's 64 MiB
# /dev/shm: "Insufficient space in /dev/shm for shared-memory allocation")
SHM_TOO_SMALL = r"\bInsufficient space in /dev/shm\b"
# a LoRA adapter made with a method the engine does not implement ("vLLM does not yet
# support DoRA."), or that trains whole modules vLLM does not serve ("vLLM only supports
# modules_to_save being either None or a list containing lm_head and embed_tokens")
ADAPTER_METHOD = (
    r"\b(?:does not|doesn't) (?:yet )?support (?:DoRA|LoRA bias)\b"
    r"|\bonly supports modules_to_save being\b"
)
# an adapter's own files that do not make a LoRA adapter: its config without the keys
# LoRA needs ("Missing required configuration fields: {'r', 'lora_alpha'}", "Failed to
# load LoRA adapter chat: 'target_modules'"), cut short or with a value of the wrong type
# (SGLang's "Failed to load LoRA adapter chat: Unterminated string starting at: line 8",
# "... unsupported operand type(s) for /: 'int' and 'str'"), its weights under names no
# LoRA layer has ("... lora_A.default.weight is unsupported LoRA weight")
ADAPTER_FILES = (
    r"\bMissing required configuration fields\b|\bis unsupported LoRA weight\b"
    r"|\bFailed to load LoRA adapter \S+: (?:'\w+'$|Unterminated string\b"
    r"|Expecting (?:value|property name|',' delimiter)\b|Extra data: line \d"
    r"|Invalid control character\b|unsupported operand type\(s\))"
)

FAMILY: dict[str, str] = {
    "oom": "memory",
    "gpu-busy": "memory",
    "disk": "disk",
    "permission": "disk",
    "port-in-use": "port",
    "model-load": "model",
    "unsupported-model": "model",
    "install": "install",
    "engine-version": "install",
    "cuda-arch": "cuda",
    "cuda-error": "cuda",
    "cuda-graph": "cuda",
    "nccl": "distributed",
    "distributed": "distributed",
    "mpi": "distributed",
    "bad-args": "arguments",
    "max-model-len": "arguments",
    "download": "download",
    "engine-init": "engine",
    "engine-dead": "engine",
    "child-exit": "engine",
    "shard": "engine",
    "webserver": "engine",
    "exit": "process",
    "killed": "process",
    "segfault": "process",
    "abort": "process",
    "fatal-python": "process",
    "stuck": "timeout",
    "stall": "timeout",
    "deadline": "timeout",
    "signature": "user",  # a --crash pattern of the user's
}


def family_of(kind: str | None) -> str | None:
    """The family of a kind (``oom`` -> ``memory``); None for None or an unknown kind."""
    return None if kind is None else FAMILY.get(kind)


# Engine-neutral hints, for a kind found by its words where the engine's profile has no
# signature of that kind (a profile's own hint, naming its flags, is used when it has one)
KIND_HINTS: dict[str, str] = {
    "oom": "lower the server's memory share, batch size or context length, or free the GPU "
    "(nvidia-smi shows who holds it)",
    "disk": "free space where the engine writes (the model cache, /tmp, the compile caches) "
    "or point them elsewhere (HF_HOME, TMPDIR, the engine's cache variables)",
    "permission": "the engine cannot read or write a path it needs: check the owner and mode "
    "of the model folder and the caches (HF_HOME, ~/.cache), or run as their owner",
    "port-in-use": "another process holds the port: stop it or pick another port",
    "model-load": "check the model path or Hub id and that its files are complete; for a "
    "gated or private repo accept its terms on the Hub and set HF_TOKEN",
    "unsupported-model": "this engine version does not support the model's architecture: "
    "upgrade it, or serve the model with another engine",
    "install": "the environment is incomplete or mismatched: install the engine and its "
    "native libraries into a clean environment (or use its container) so that they match "
    "torch, CUDA and the driver",
    "cuda-arch": "the kernels were not built for this GPU (or the CUDA toolkit does not know "
    "it): install a build for its compute capability, or a newer CUDA",
    "cuda-error": "a CUDA failure: the matched line names it; rerun with "
    "CUDA_LAUNCH_BLOCKING=1 to find the call, and check the GPU's health (nvidia-smi, dmesg)",
    "cuda-graph": "run without CUDA graphs to confirm, then capture fewer batch sizes",
    "nccl": "rerun with NCCL_DEBUG=INFO; check NCCL_SOCKET_IFNAME, that every GPU is "
    "visible and that no stale process holds one",
    "distributed": "a peer of the distributed group died or cannot be reached: the first "
    "error of another rank is above; check the rendezvous address and the firewall",
    "mpi": "check that every rank started (mpirun -n equals the world size the engine asks "
    "for: tensor x pipeline parallel), that the GPUs see each other, and the MPI settings",
    "bad-args": "check the flag's spelling and value for this engine version (its --help)",
    "max-model-len": "lower the context length to what the model allows",
    "download": "the model could not be fetched: check the network, a proxy, the Hub id, or "
    "use local files (HF_HUB_OFFLINE=1 with a filled cache)",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class Words:
    """Words that name a kind in an error line (matched without regard to case)."""

    kind: str
    title: str  # what the verdict's reason says it is
    pattern: str
    hint: str | None = None  # what to do, where it is not the kind's own hint


def words_hint(words: Words, hints: Mapping[str, str] | None = None) -> str | None:
    """The hint for a line ``words`` named: theirs, else the profile's for the kind
    (``hints``), else the kind's own."""
    if words.hint is not None:
        return words.hint
    return (hints or {}).get(words.kind, KIND_HINTS.get(words.kind))


# First match wins: the root of a chain of failures first (a missing library before the
# CUDA error it causes, an out-of-memory before the NCCL error of a rank that lost it).
_WORDS: tuple[Words, ...] = (
    Words(
        kind="oom",
        title="out of memory",
        pattern=r"out of memory|\bOOM\b|OutOfMemory|insufficient (?:gpu |device |host )?memory"
        r"|not enough (?:gpu |device |free |host )?memory|cannot allocate memory"
        r"|failed to allocate|memory allocation failed|\bENOMEM\b|std::bad_alloc"
        r"|CUBLAS_STATUS_ALLOC_FAILED"
        # an allocator call that failed ("Failed to CUDA calloc 67108864 bytes" under an
        # NCCL error's "Last error:", "cudaMalloc failed")
        r"|failed to (?:cuda ?)?[cm]alloc\b|\b(?:cuda)?[cm]alloc(?:Async|Host)? failed"
        # a backend's allocator (Vulkan, SYCL, Metal, HIP): "Device memory allocation of
        # size N failed", ErrorOutOfDeviceMemory, UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY
        r"|\ballocation of (?:size )?\d+\S*(?: bytes)? failed|OutOf(?:Device|Host|Pool)Memory"
        r"|OUT_OF_(?:DEVICE|HOST|POOL)_MEMORY"
        r"|OOMKilled|\bOOM[- ]kill"  # Kubernetes' reason, the kernel's killer
        # Python's and numpy's ("_ArrayMemoryError: Unable to allocate 64.0 GiB for an
        # array with shape ...")
        r"|MemoryError\b|\bunable to allocate [\d.]+ ?[KMGTP]i?B\b"
        # vLLM's CPU backend: "Available memory on node 0 (22.08/23.59 GiB) on kv cache
        # allocation is less than requested memory for kv (64.0 GiB)"
        r"|\b(?:available|free) memory\b.{0,80}?\bis less than\b",
    ),
    # a port number no socket can have (urllib's "Port out of range 0-65535", the socket
    # module's "bind(): port must be 0-65535"): the option that gave it, not the network
    Words(
        kind="bad-args",
        title="a port number outside 0-65535",
        pattern=r"\bport (?:number )?(?:is )?out of range\b|\bport must be 0-65535\b",
    ),
    Words(
        kind="disk",
        title="no space left on a disk, or a read-only one",
        pattern=r"no space left on device|\bENOSPC\b|disk quota exceeded|\bEDQUOT\b"
        r"|read-only file system|\bEROFS\b|\[Errno 30\]|disk (?:is )?full"
        # a file grown past the size limit of the process (`ulimit -f`: "[Errno 27] File
        # too large" where the shared memory or a cache file is written)
        r"|\[Errno 27\] File too large|\bEFBIG\b"
        # numpy's short write to a full disk ("OSError: 47232 requested and 42976
        # written"): the rest did not fit
        r"|\b\d+ requested and \d+ written\b"
        # the shared-memory folder too small for the engine's buffers
        rf"|{SHM_TOO_SMALL}",
    ),
    Words(
        kind="port-in-use",
        title="the port is already in use",
        pattern=r"address already in use|\bEADDRINUSE\b|port \d+ is (?:already )?in use"
        r"|(?:socket|port|address)\b.{0,80}\balready in use"
        r"|port is already (?:in use|allocated)|only one usage of each socket address"
        r"|(?:failed to|could not|couldn't|cannot|unable to) bind"
        # torch.distributed's store: "The server socket has failed to listen on any local
        # network address. port: 29500, ... EADDRINUSE"
        r"|server socket has failed to listen|failed to listen on .{0,80}\bport\b"
        # a port a server waited for and found taken ("metrics_port at 40290 is not
        # available in 30 seconds. metrics_port is used by a process already.")
        r"|\bport\b[^.]{0,60}\bis not available\b|\bis used by (?:a|another) process\b",
    ),
    # a listen address with no port, or not one ("listen tcp: address 8000: missing port
    # in address", Go's net package): the option's value is wrong, nothing holds a port
    Words(
        kind="bad-args",
        title="the listen address is not host:port",
        pattern=r"missing port in address|too many colons in address|invalid port\b",
    ),
    # a model whose repository runs its own code, started without the flag that allows
    # it (transformers: "... contains custom code which must be executed ... Please pass
    # the argument `trust_remote_code=True`"): the command lacks an option
    Words(
        kind="bad-args",
        title="the model runs its own code",
        hint="the model's repository runs its own code: read that code, then add "
        "--trust-remote-code (trust_remote_code=True) to the command",
        pattern=r"\btrust_remote_code=True\b|\bcontains custom code which must be executed"
        r"|\brequires you to execute the configuration file\b",
    ),
    Words(
        kind="model-load",
        title="the model's Hub repo refused this token",
        pattern=r"\b401\b|\b403\b|unauthorized|forbidden|gated repo|invalid (?:user )?token"
        r"|token is (?:invalid|expired)|access to model .* is restricted|HF_TOKEN"
        r"|GatedRepoError|RepositoryNotFound|Repository Not Found|RevisionNotFound"
        r"|(?<!Local)EntryNotFoundError"
        # a Hub id that is neither a repo nor a local folder ("Invalid repository ID or
        # local directory specified: 'Qwen/Qwen-Image-Edit-2509'")
        r"|invalid repo(?:sitory)?[ _-]?id\b",
    ),
    # a file of the model that is there but cannot be read: a weights file cut short or
    # corrupt (safetensors' header), a config.json that is no JSON, a folder with no
    # configuration at all, a field of config.json of the wrong type (transformers'
    # checked configuration classes: "Field 'num_attention_heads' expected int, got str";
    # an option's wrong type is argparse's "invalid int value"); before engine-version,
    # whose "deserializ" safetensors shares, and before bad-args, whose enum rule "is not
    # a valid X" would take "valid JSON"
    Words(
        kind="model-load",
        title="a file of the model is damaged, incomplete or missing",
        pattern=r"SafetensorError|safetensors_rust|Error while deserializing header"
        r"|HeaderTooLarge|MetadataIncompleteBuffer|InvalidHeaderDeserialization"
        r"|(?:config|configuration) file at .* is not a valid JSON|not a valid JSON file"
        r"|no (?:supported |valid )?config(?:uration)? (?:format|file)s? (?:was |were )?found"
        r"|\bField '\w+' expected \w+, got \w+"
        # sizes of config.json that do not fit each other ("The hidden size (128) is not a
        # multiple of the number of attention heads (3)"); an override of them is the
        # command's (gate/flags.py)
        r"|\bis not a multiple of the number of attention heads\b"
        # an adapter's or a model's folder with no weights in it ("/a/sql-lora doesn't
        # contain tensors")
        r"|\b(?:doesn't|does not) contain (?:any )?tensors\b"
        # a dtype the model's config.json spells short ("dtype": "bf16"), looked up on
        # torch; a long name torch lacks (float8_e4m3fn) is an old torch: install's
        r"|module 'torch' has no attribute '(?:b?fp?\d+|bfloat|half\d+)'",
    ),
    # urllib3's retry of an HTTP connection pool: the URL it names may hold a model file
    # (".../resolve/main/config.json"), whose words are model-load's below
    Words(
        kind="download",
        title="the model could not be downloaded",
        pattern=r"MaxRetryError|HTTPS?ConnectionPool\(host="
        # a download that says it failed, whatever file it fetched ("error downloading or
        # loading vocab file: failed to download or load vocab file")
        r"|error downloading|failed to download|download(?:ing)? failed"
        # llama.cpp's -hf fetch of a repository's files: no connection, or a build
        # without TLS ("get_repo_commit: error: HTTPS is not supported")
        r"|\bget_repo_\w+: error: |\bHTTPLIB failed\b|\bHTTPS is not supported\b",
    ),
    # a device API's own error code (Vulkan's vk::...: ErrorX, Gaudi's synStatus), which
    # a loader's "error loading model" wraps: the device or its driver failed, not the model
    Words(
        kind="cuda-error",
        title="the accelerator's device or driver failed",
        pattern=r"\bvk::\w+(?:::\w+)*: ?Error\w+|\bVK_ERROR_\w+|\bsynStatus=\d+"
        r"|device acquire failed|\b(?:no |)(?:device|accelerator) not found\b(?! in)"
        # the other vendors' runtimes, as CUDA's errors are (their out-of-memory words are
        # memory's, above): Ascend's torch_npu and CANN ("NPU function error: call
        # aclnnInplaceCopy failed", "PTA call acl api failed", ACL_ERROR_*), Intel's XPU,
        # Moore Threads' MUSA, Cambricon's MLU (CNRT, CNNL), Habana's HPU
        r"|\b(?:NPU|XPU|MUSA|MLU|HPU|CANN|ACL|CNRT|CNNL|ROCm)(?: \w+)? (?:error|failure)\b"
        r"|\bcall acl\w* (?:api )?failed|\bacl api failed|\bACL_ERROR_\w+|\bacl(?:rt|nn)\w+ failed"
        r"|\b(?:musa|cnrt|cnnl|hpu|xpu)(?:Error|_ERROR|_STATUS_ERROR)\w*"
        # Triton with no GPU driver to load ("RuntimeError: 0 active drivers ([]). There
        # should only be one.")
        r"|\b0 active drivers\b",
    ),
    Words(
        kind="permission",
        title="permission denied",
        pattern=r"permission denied|\bEACCES\b|\bEPERM\b|operation not permitted"
        r"|access (?:is )?denied|not writable"
        # a folder the process may not write ("RuntimeError: Unable to write to
        # NIM_CACHE_PATH (/mnt/models/cache)")
        r"|\b(?:unable to|cannot|can't|could not|couldn't) write to\b",
    ),
    # a message that asks for another value of an option ("... is only supported on
    # Blackwell GPUs (SM100). Please use a different backend."): the user's choice is
    # what must change, whatever the reason it gives (a GPU generation: cuda-arch below)
    Words(
        kind="bad-args",
        title="an option's value is not accepted here: the message asks for another",
        pattern=r"please (?:use|choose|select|pick|set|specify|try) (?:a |an )?(?:different"
        r"|another|other) (?:[\w-]+ )?(?:backend|option|value|flag|setting|method|mode"
        r"|dtype|argument|implementation)s?\b",
    ),
    # one option's value against another's, each named as the engine spells it
    # ("max_tokens_per_mm_item (2496) is larger than max_num_batched_tokens (2048)")
    Words(
        kind="bad-args",
        title="two options' values do not fit together",
        pattern=r"\b[a-z]+(?:_[a-z]+){2,}\b`? \(?\d+\)? (?:is|must be) (?:larger|greater|bigger"
        r"|smaller|less|more|fewer|higher|lower) than (?:the )?`?[a-z]+(?:_[a-z]+){2,}\b",
    ),
    # a feature that only another vendor's or kind of accelerator has, asked of this
    # platform ("CPU Offloading is currently only supported on CUDA-alike and XPU GPUs"
    # under vLLM for CPU): the option must go; a GPU generation is cuda-arch's, below
    Words(
        kind="bad-args",
        title="an option asks for a feature this platform does not have",
        pattern=r"(?:only|not|n't) (?:be )?supported (?:on|by|for) (?:the )?(?:[\w-]+ ){0,2}"
        r"(?:CUDA-alike|XPU|ROCm|TPU|HPU|HIP|NPU)\b"
        # ... or a device kind the process was not given ("InstantTensor requires a
        # CUDA-compatible device (including CUDA and ROCm); got 'cpu'.")
        r"|\brequires? (?:an? )?[\w-]*(?:CUDA|GPU|accelerator)[\w-]* device\b[^.]{0,60}"
        r"\bgot '?cpu\b",
    ),
    Words(
        kind="cuda-arch",
        title="the kernels were not built for this GPU",
        pattern=r"no kernel image|invalid device function|compute capability|\bptxas\b"
        r"|\bPTX\b|TORCH_CUDA_ARCH_LIST|cuda arch|gpu architecture"
        r"|\bsm_?\d{2,3}a?\b.*(?:not|unsupported|no longer)|(?:not|un)supported.*\bsm_?\d{2,3}"
        r"|not compatible with the current pytorch installation"
        r"|(?:not supported|unsupported) (?:on|by|in) (?:this|your|the current) (?:gpu|architecture)"
        r"|only supports? (?:ampere|hopper|turing|volta|blackwell)"
        # a prebuilt engine's profiles, each for given GPUs, none for this one (NVIDIA NIM:
        # "Could not find a profile that is currently runnable with the detected hardware")
        r"|\bprofiles? that (?:is|are) (?:currently )?runnable with the detected hardware"
        r"|\bno (?:compatible|runnable) profiles? (?:found|for)\b"
        r"|minimum capability|current capability"  # vLLM's quantization methods
        # a dtype only one GPU generation has: the fnuz FP8 types of AMD's MI300 (gfx942),
        # which a kernel built for another generation, or another generation, refuses
        r"|\bfloat8_e[45]m[23]fnuz\b|\bfnuz\b"
        # a backend or kernel that a GPU generation cannot run ("The 'fa3' backend is not
        # supported on Blackwell GPUs", "only supported on Hopper")
        r"|(?:only|not|n't) (?:be )?supported (?:on|by|for) (?:[\w()-]+ ){0,3}(?:gpus?"
        r"|(?<!model )architectures?)\b|(?:only|not|n't) (?:be )?supported (?:on|by|for) (?:the )?"
        r"(?:nvidia )?(?:ampere|hopper|turing|volta|blackwell|ada|pascal|maxwell)\b"
        # a GPU kernel or pipeline the backend cannot build or find for this device, as
        # CUDA's "no kernel image" (Metal's "failed to compile pipeline:", then "Function
        # kernel_mul_mv_ext_bf16_f32 was not found in the library"; a Vulkan shader)
        r"|failed to (?:compile|create|build) (?:the )?(?:compute )?(?:pipeline|shader)s?\b"
        r"|\b(?:kernel|function|pipeline|shader)\b.{0,120}\bnot found in (?:the )?"
        r"(?:metal |default )?library",
    ),
    Words(
        kind="engine-version",
        title="the engine was built by another TensorRT or TensorRT-LLM version",
        pattern=r"deserializ|engine plan file|serialized engine|TensorRT version"
        r"|built (?:with|by) (?:a )?(?:different|another|newer|older) version"
        r"|Serialization assertion|Version tag does not match",
    ),
    # a process that a wrapper ran died of a signal (subprocess's "died with
    # <Signals.SIGSEGV: 11>", a shell's "Segmentation fault (core dumped)"): before
    # install, whose CalledProcessError the same line holds
    Words(
        kind="segfault",
        title="a process crashed with a segmentation fault",
        pattern=r"\bSIGSEGV\b|segmentation fault|\bsegfault\b|signal 11\b"
        # Windows' status of a process that touched memory it may not (an access
        # violation: the segfault of that platform), in hex, by name, or as the unsigned
        # or signed number a wrapper prints ("exit status 3221225477")
        r"|\b0xc0000005\b|STATUS_ACCESS_VIOLATION|\b3221225477\b|-1073741819\b",
    ),
    Words(
        kind="abort",
        title="a process aborted itself",
        pattern=r"\bSIGABRT\b|^Aborted(?: \(core dumped\))?$"
        # Windows' fail-fast status (abort(), a failed check, a stack buffer overrun), in
        # hex, by name, or as the unsigned or signed number a wrapper prints
        r"|\b0xc0000409\b|STATUS_STACK_BUFFER_OVERRUN|\b3221226505\b|-1073740791\b",
    ),
    # Windows' status of a process that ran a CPU instruction this machine lacks (AVX2,
    # AVX-512: SIGILL's counterpart, the bare exit with its hint), as a wrapper prints it
    Words(
        kind="exit",
        title="the process ran a CPU instruction this machine lacks",
        pattern=r"\b0xc000001d\b|STATUS_ILLEGAL_INSTRUCTION|\b3221225501\b|-1073741795\b",
    ),
    # a template's placeholder left in a configuration (tritonserver's config.pbtxt
    # "backend: ${triton_backend}"): whatever the line goes on to miss, the model's
    # configuration is what is wrong
    Words(
        kind="model-load",
        title="the model's configuration holds a template placeholder never filled in",
        pattern=r"'\$\{\w+\}'|\"\$\{\w+\}\"",
    ),
    # an assertion of llama.cpp's model loader on the file's metadata ("llama-model.cpp:
    # 1420: GGML_ASSERT(hparams.rope_scaling_type_train != ...) failed"): the GGUF holds
    # values the loader cannot take
    Words(
        kind="model-load",
        title="the model file's metadata fails the loader's checks",
        pattern=r"\b(?:llama-model(?:-loader)?|llama-vocab|llama-arch|gguf)\.cpp:\d+: GGML_ASSERT\(",
    ),
    # the process sees no GPU at all, whatever exception says so (TGI's "ImportError:
    # CUDA is not available"): the device is what is missing, not a module; before
    # install, whose ImportError the same line holds
    Words(
        kind="cuda-error",
        title="the process sees no usable GPU",
        pattern=r"\bCUDA is not available|no CUDA GPUs are available|no CUDA-capable device"
        # torch asked for a GPU on a machine without one, or without its driver loaded
        # (--device cuda on a CPU box): the device, not a package, is missing
        r"|found no NVIDIA driver",
    ),
    Words(
        kind="install",
        title="a module or native library is missing or does not match",
        pattern=r"no module named|ModuleNotFoundError|ImportError|cannot import name"
        r"|undefined symbol|cannot open shared object file|\bGLIBC(?:XX)?_\d"
        # an exception that says only that a library is not there ("RuntimeError: NIXL is
        # not available": the KV connector's package not installed); not a device's
        r"|\b\w*Error: (?!CUDA\b|GPU\b|MPS\b|XPU\b|NPU\b)[A-Za-z][\w.-]* is not available\.?\s*$"
        # a library's loader that could not load one of its own (oneMKL's "Intel oneMKL
        # FATAL ERROR: Cannot load /v/torch/lib/libtorch_cpu.so.")
        r"|\bCannot load \S+\.so\b"
        r"|version mismatch|mismatch(?:es)? the version|incompatible (?:version|with)"
        r"|compiled (?:against|with) .*version|driver version is insufficient"
        r"|not compiled with CUDA|NVIDIA driver on your system is too old"
        r"|requires? .*(?:version|>=|==)|please (?:install|upgrade|update|reinstall)"
        r"|pip install|is not installed|not found in \$?PATH|command not found"
        # a program the engine runs that its install lacks ("VLLM_RUST_FRONTEND_PATH=auto
        # but the vllm-rs binary was not found at ...")
        r"|\b(?:binary|executable) (?:was )?not found\b"
        # a package the engine needs at a version it does not have ("Please use torchao
        # version >= 0.15.0 to load torchao safetensors checkpoint")
        r"|\b[Pp]lease use [\w.-]+ version\s*(?:>=|==|\d)"
        r"|got an unexpected keyword argument|module '[\w.]+' has no attribute"
        r"|got multiple values for (?:keyword )?argument"
        # a package installed under another name, or half installed: its metadata is not
        # there ("PackageNotFoundError: No package metadata was found for vllm")
        r"|PackageNotFoundError|No package metadata was found for"
        r"|unable to find backend library|failed to build|returned non-zero exit status"
        # tritonserver looks for a Python backend's model.py where a backend is missing
        r"|unable to find '[^']*/model\.py'"
        r"|exit status \d+|error: command '[^']*(?:gcc|g\+\+|nvcc|cc|ninja)"
        r"|ninja: build stopped|CalledProcessError|compilation terminated"
        r"|\.h: No such file or directory"
        # a compiler's or linker's own error line in a build (a JIT kernel's): a header
        # or a library it cannot find, a symbol it cannot resolve
        r"|fatal error: [^:]{1,200}: No such file or directory|\bcannot find -l[\w+.-]"
        # the compiler driver without its compiler proper (g++ with no cc1plus, a PATH
        # or an install cut short)
        r"|fatal error: cannot execute\b"
        r"|collect2: error|undefined reference to|\bnvcc fatal\b"
        # the dynamic loader's own failures, and a build tool that is not installed
        r"|error while loading shared libraries|symbol lookup error|wrong ELF class"
        r"|not found \(required by|No such file or directory: '(?:ninja|nvcc|gcc|g\+\+|c\+\+"
        r"|cc|clang|cmake|make|hipcc)'|forward compatibility was attempted"
        # a wrapper ran a program by a path that holds nothing ("Failed to run the vllm
        # server: [Errno 2] No such file or directory: '/usr/local/bin/vllm'")
        r"|No such file or directory: ['\"](?:[^'\"]*/)?s?bin/[^'\"/]+['\"]"
        r"|failed to find C compiler|could not select device driver|nvidia-container-cli"
        # the container runtime refused the image or the container: the engine never ran
        # (no image for this platform, the NVIDIA hook's requirement, runc's create)
        r"|no matching manifest|manifest unknown|image platform .{0,60}does not match"
        r"|OCI runtime (?:create|exec) failed|requirement error: unsatisfied condition"
        # Windows' status of a program whose DLL is missing (STATUS_DLL_NOT_FOUND)
        r"|\b0xc0000135\b|STATUS_DLL_NOT_FOUND"
        r"|\bto be installed\b"
        # a Python older than a dependency's code: a class subscripted as a generic type
        # (type 'array.array' is not subscriptable before 3.12, 'list' before 3.9), a
        # union written with | before 3.10
        r"|\btype '[\w.]+' is not subscriptable|unsupported operand type\(s\) for \|: 'type'"
        # a package's own loader of its native library or extension (llama-cpp-python's
        # "Shared library with base name 'llama' not found", macOS's dyld, Windows')
        r"|(?:shared|native|dynamic) (?:library|libraries|object|extension)\b.{0,80}"
        r"\bnot (?:be )?(?:found|loaded)|Library not loaded|DLL load failed"
        r"|(?:could not|cannot|can't|unable to|failed to) (?:find|load|open) (?:the )?"
        r"(?:shared|native|dynamic) (?:library|object|extension)",
    ),
    Words(
        kind="nccl",
        title="NCCL failed",
        pattern=r"\bnccl",
    ),
    Words(
        kind="cuda-error",
        title="a CUDA kernel failed",
        pattern=r"illegal memory access|illegal address|device-side assert|misaligned address"
        r"|uncorrectable (?:nvlink|ecc)|\bXid\b",
    ),
    Words(
        kind="cuda-graph",
        title="CUDA-graph capture failed",
        pattern=r"cuda ?graph|stream is capturing|StreamCapture",
    ),
    Words(
        kind="cuda-error",
        title="a CUDA call failed",
        pattern=r"cuda error|cudaError|CUDA kernel failed|CUBLAS_STATUS|CUDNN_STATUS"
        r"|cudnn error|cuda runtime error|CUDA_ERROR_|\bCUresult\b|cuda driver|error \[CUDA\]"
        r"|no CUDA GPUs are available|CUDA is not available|no CUDA-capable device"
        # the same for ROCm and oneAPI (their out-of-memory codes are memory's, above)
        r"|\bhip ?error|HSA_STATUS_ERROR|memory access fault|\b(?:UR_RESULT|PI|ZE_RESULT)_ERROR_"
        r"|device lost|DEVICE_LOST|cudaGetDeviceCount"
        # CUDA initialised before a fork, used again in the child
        r"|re-?initiali[sz]e CUDA"
        # a model or kernel that needs a GPU this process does not have ("Sharded Llama
        # requires CUDA."; a required CUDA version is install's, above)
        r"|\brequires? (?:a )?(?:CUDA|GPU)\b(?![ -]?(?:version|toolkit|memory|\d|>|=))",
    ),
    Words(
        kind="mpi",
        title="MPI failed, or its world size does not match",
        pattern=r"\bMPI_|\bmpi4py\b|open mpi|\bORTE\b|\bPMIx?\b|\borted\b|\bmpirun\b"
        r"|not enough slots|world[ _]size|\bmpi ?(?:error|size|rank|world)",
    ),
    Words(
        kind="distributed",
        title="the distributed group failed",
        pattern=r"\bgloo\b|\bc10d\b|TCPStore|rendezvous|DistStoreError|DistNetworkError"
        r"|DistBackendError|ProcessGroup|torch\.distributed|connection (?:closed|reset) by peer"
        # the engines' ZeroMQ sockets between processes or nodes (an address the node
        # does not hold)
        r"|\bZMQError\b|cannot assign requested address|\bEADDRNOTAVAIL\b"
        # the libraries that move tensors between GPUs and nodes for the group: NVSHMEM
        # (DeepEP's all-to-all), the KV transfer engines of disaggregated serving
        # (Mooncake, NIXL), and a socket family the node's network does not offer
        r"|nvshmem|\bmooncake\b|\bnixl\b|transfer[ _-]?engine"
        r"|address family not supported|\bEAFNOSUPPORT\b",
    ),
    Words(
        kind="max-model-len",
        title="the context length is longer than the model allows",
        pattern=r"(?:max[_-]model[_-]len|context[_ -]length|max[_ -]seq[_ -]len"
        r"|max_position_embeddings)\b.*(?:greater|larger|longer|exceed|too)",
    ),
    Words(
        kind="bad-args",
        title="a flag or its value is not accepted",
        pattern=r"unrecognized (?:arguments?|option)|invalid (?:option|choice|value)"
        r"|unknown (?:argument|option|flag)|unexpected argument|requires an argument"
        r"|missing (?:required )?argument|arguments are required|no such option"
        r"|must be (?:one of|divisible by|a multiple of|greater than|less than|between"
        r"|positive)|is not divisible by|expected one argument"
        r"|is not a valid (?-i:[A-Z][a-z]\w*)"
        # an exception that calls an option's named value invalid ("KeyError: 'invalid
        # tool call parser: openai (chose from { ... })'"), or lists what to choose from
        r"|\binvalid (?:[\w-]+ ){0,3}(?:parser|backend|choice|option|mode|strategy|provider)s?\b"
        r"|\(cho(?:o)?se from\b"
        # what the model's files say against what an argument says ("Quantization method
        # specified in the model config (compressed-tensors) does not match the
        # quantization method specified in the `quantization` argument (awq)"): the
        # argument must change
        r"|\bspecified (?:in|by|with) the [`'\"]?-{0,2}[\w-]+[`'\"]? (?:argument|flag|option)\b"
        # a flag named as the argument refused ("Invalid argument: --chat-template, use
        # one of the built-in templates"; not errno's "[Errno 22] Invalid argument")
        r"|invalid (?:argument|parameter)s?:? ['\"`]?--?[a-z]"
        # a file an option names that is not there, read as a path ("The supplied chat
        # template string (tool_use) appears path-like, but doesn't exist!")
        # torch's device string the user gave (--device gpu): "Expected one of cpu, cuda,
        # ... device type at start of device string: gpu"
        r"|\bdevice type at start of device string\b"
        # a message that says which option the file belongs to ("CLIP cannot be used as
        # main model, use it with --mmproj instead")
        r"|\buse it with --[a-z][\w-]* instead\b"
        r"|appears path-like|(?:chat[ _-]template|--[a-z][\w-]*)\b.{0,60}\b(?:does not|doesn't)"
        r" exist"
        # two features the user turned on together that the engine cannot combine ("Vlm
        # do not work with prefix caching yet", "... is not supported with speculative
        # decoding"): one of the options must go
        r"|\b(?:do(?:es)? not|don't|doesn't|cannot|can't) (?:yet )?(?:work|be used) (?:together )?with"
        r"|\bnot (?:yet )?(?:supported|implemented|compatible) (?:together )?with (?:the )?"
        r"(?:prefix[ _-]caching|chunked[ _-]prefill|speculative|lora|cuda[ _-]?graphs?"
        r"|pipeline[ _-]parallel|tensor[ _-]parallel|quantiz|sliding[ _-]window|fp8"
        r"|kv[ _-]cache)"  # an enum's value from a flag ('fp9' is not a valid CacheDType)
        # TGI's launcher; a bound between two flags ("`max_input_tokens`(65537) must be <
        # `max_total_tokens`"); a ValueError that names the option it refuses (snake_case
        # or a flag) and what it must be; a flag given where a positional argument is
        # wanted; a dtype or a method a quantization scheme does not take
        # uvicorn's import string of the app (a command argument) names no app:
        # 'Error loading ASGI app. Attribute "app" not found in module "x"'
        r"|Error loading ASGI app"
        r"|ArgumentValidation|\bmust be (?:[<>]=? ?[\w`'\"]|(?:at (?:least|most)|smaller|larger"
        r"|less|greater)\b)|ValueError: \W?(?:--)?[a-z]+_[a-z_]+\b\W?.{0,60}\bmust\b"
        r"|as a positional argument|not supported for quantization"
        # a number option (or the variable that sets it) given another kind of value
        r"|invalid literal for int\(\) with base \d+: '[^']*[^\d\s'][^']*'"
        # an option that needs the model built with a feature ("When KV cache block reuse
        # is set, model has to be built with paged context FMHA support")
        r"|\bwhen .{0,60}\bis (?:set|enabled|on)\b.{0,40}\b(?:has|have|needs?) to be built with"
        # pydantic's validation of a server's settings or arguments (llama-cpp-python's
        # Settings, a ServerArgs); a model's own ModelConfig says what in its detail lines
        r"|validation errors? for \w*(?:Settings|Args|Arguments|Options|Params|Parameters)\b"
        # a size that the shard / tensor-parallel count does not divide
        r"|not (?:compatible with|divisible by) .{0,40}\b(?:shard(?:s|ing)?|tensor[ _-]parallel"
        r"|tp[ _]size|gpus)\b|cannot be (?:split|sharded|divided) (?:evenly )?(?:over|across"
        r"|into|by|among)\b"
        # an option that needs another one ("V cache quantization requires flash_attn",
        # "... requires --enable-x")
        r"|(?:\b|_)(?:cache|quantization|quantized|dtype|backend|mode)(?:_\w+)?\b.{0,40}\brequires? "
        r"(?:--?[a-z][\w-]*|[a-z]+_[a-z_]+\b|flash[ _-]?att\w*)(?! version)"
        # an option the engine takes only for some models or with another option ("`limit_
        # mm_per_prompt` is only supported for multimodal models"; a GPU generation is
        # cuda-arch's, above)
        r"|\bis only (?:supported|allowed|available|valid) (?:for|with|when)\b"
        # a value the engine takes with one setting but not with another ("--port 0 is not
        # supported with multiple TCP addresses")
        r"|\bis not (?:supported|allowed) with (?:multiple|several|more than one)\b"
        # a split mode that needs devices the build or the machine does not have
        # ("LLAMA_SPLIT_MODE_TENSOR needs >= 1 devices" under -sm tensor on a CPU build)
        r"|SPLIT_MODE_\w+ needs\b"
        # a unix socket's path longer than the kernel takes (--uds under a deep folder)
        r"|\bAF_UNIX path too long\b"
        # a setting the model's back end cannot take ("Using FP8 KV cache and scaling
        # factors provided but model %s does not support loading scaling factors.")
        r"|\bprovided but (?:the )?model\b.{0,40}\bdoes not support\b"
        # a feature asked of a model that does not have it ("context type MTP requested
        # but model doesn't contain MTP layers"): the option must go, or the model change
        r"|\brequested,? but (?:the )?model (?:does not|doesn't) (?:contain|have|support)\b"
        # a split mode the device cannot do ("device CUDA0 does not support split buffers"
        # under --split-mode row): the option must change
        r"|\bdoes not support split buffers\b"
        # a pattern option's regular expression that does not compile (llama.cpp's
        # std::regex under -ot / --override-tensor: "error loading model: Mismatched '('
        # and ')' in regular expression")
        r"|\bin regular expression\b|\bregex_error\b|\bin (?:bracket|brace) expression\b"
        # a configuration file the user gave that is not there or does not parse
        # (llama-cpp-python's "Config file /etc/llama/models.json not found!", llama-server's
        # "failed to parse server config file: ..."), YAML's syntax errors in one ("found
        # character '\t' that cannot start any token", "mapping values are not allowed here")
        r"|\bconfig file \S+ (?:not found|does not exist)|\bconfig file must be (?:of )?an? \w"
        r"|failed to parse (?:\w+ )?config(?:uration)? file"
        # llama-server's own configuration files ("failed to open MCP config file: ...",
        # "failed to parse UI config: [json.exception.parse_error.101] ...")
        r"|(?:failed to|cannot|could not|couldn't|unable to) (?:open|parse) (?:the )?"
        r"(?:server |ui |web ?ui |mcp |preset |router )config(?:uration)?(?: file)?\b(?!\.)"
        # a grammar option that does not parse ("error parsing grammar: expecting ')'",
        # "failed to parse grammar"), a tool the server does not have
        r"|\b(?:failed to parse|error parsing) grammar\b|\bunknown tool\b"
        r"|cannot start any token|mapping values are not allowed here"
        r"|while (?:scanning|parsing) an? (?:simple key|block mapping|flow mapping|block collection"
        r"|alias|anchor|tag|quoted scalar|plain scalar|directive|block scalar)"
        # PyYAML's problem under that context ("expected alphabetic or numeric character,
        # but found '\n'", "expected <block end>, but found '<scalar>'")
        r"|^expected (?:alphabetic or numeric character|<[\w ]+>|'[^']{1,3}'(?: or '[^']{1,3}')*)"
        r",? but found\b"
        # a server's TLS key or certificate file that is not a PEM of its kind (uvicorn's
        # load_cert_chain: "ssl.SSLError: [SSL] PEM lib (_ssl.c:3905)"), or a key that is
        # not the certificate's ("[X509: KEY_VALUES_MISMATCH] key values mismatch")
        r"|\[SSL\] PEM lib|\bPEM routines\b|\bPEM_read_bio|\bKEY_VALUES_MISMATCH\b"
        # llama-cpp-python's llava chat formats without the projector option
        # ("AssertionError: clip model not found")
        r"|\bclip model not found\b"
        # a name looked up among those the engine has, which it lists ("Reasoning parser
        # 'deepseek-r1' not found. Available parsers: ..."); Python's logging level
        # ("ValueError: Unknown level: 'VERBOSE'", from a *_LOGGING_LEVEL variable)
        r"|\bnot found\.? (?:available|valid|supported) \w+(?: are)?:|\bunknown level: '"
        r"|\bavailable (?:tools|parsers|options|choices|values|backends|formats|modes"
        r"|methods)(?: are)?: "
        # an engine's variable whose value it rejects ("VLLM_PORT 'tcp://10.96.0.15:8000'
        # appears to be a URI")
        r"|\b(?:VLLM|SGLANG|TGI|TRTLLM|LLAMA_ARG)_[A-Z0-9_]+ '[^']*' (?:appears to be|is not"
        r" (?:a )?valid|must be)\b"
        # a URL the server builds from its own host and port that does not parse ("Failed
        # to parse: http://127.0.0.1:80800/model_info": a port above 65535)
        r"|\bfailed to parse: https?://"
        # CPU workers that the machine's NUMA nodes cannot each take (vLLM's CPU backend
        # under a parallel size: "Not enough allowed NUMA nodes to bind threads of 4 local
        # CPUWorkers")
        r"|\bnot enough allowed NUMA nodes\b"
        # a port out of range ("OverflowError: bind(): port must be 0-65535."); a value
        # above an option's maximum ("LoRA rank 64 is greater than max_lora_rank 16"); a
        # reasoning parser whose tokens the model's tokenizer lacks
        r"|\bport must be [01]-65535\b|\b\d+ is (?:greater|larger|more) than (?:the )?max_[a-z_]+\b"
        r"|\breasoning parser\b.{0,40}\bcould not (?:locate|find)\b"
        # a load format asked of a folder not saved in it (--load-format sharded_state on a
        # plain checkpoint: "only pre-sharded checkpoints are currently supported!")
        r"|\bonly pre-sharded checkpoints are (?:currently )?supported\b"
        # the parallel sizes and ranks the command set do not fit together (SGLang's
        # "parallel topology is inconsistent", under --node-rank 1 with --nnodes 1)
        r"|\bparallel topology is inconsistent\b"
        # a chat template option that names neither a template the engine has nor a file
        # (a URL: "Chat template https://... is not a built-in template name or a valid
        # chat template file path")
        r"|\bis not a built-in (?:chat )?template name\b",
    ),
    # a model newer than the engine: a tokenizer, projector or tensor type it does not
    # know (llama.cpp's "unknown pre-tokenizer type: 'qwen2'" inside "error loading
    # model"), before model-load's words of the same line
    Words(
        kind="unsupported-model",
        title="the model uses a type this engine version does not know",
        pattern=r"(?:unknown|unsupported|unrecognized) (?:pre-?tokenizer|projector"
        r"|vocab(?:ulary)?|rope(?: scaling)?|ggml|tensor|model) type\b"
        r"|unknown model architecture|\bunknown (?:pre-?)?tokenizer: "
        # a file format newer than the reader ("this GGUF file is version 99 but this
        # software only supports up to version 3")
        r"|\bonly supports? up to version\b"
        # a model class no registry holds ("Cannot find model module. 'MiniMaxM1ForCausalLM'
        # is not a registered model in the Transformers library")
        r"|\bnot (?:a )?registered (?:model|architecture)\b|cannot find model module"
        # a model class whose attention the engine cannot replace with its own ("Model
        # <class '...T5ForConditionalGeneration'> does not support custom attention
        # backends"; "reports it is not backend-compatible")
        r"|\bdoes not support custom attention backends?\b|\bis not backend-compatible\b"
        # a LoRA adapter made with a method the engine does not implement: another
        # adapter is the fix, not an option
        rf"|{ADAPTER_METHOD}",
    ),
    Words(
        kind="model-load",
        title="the model's files or configuration could not be loaded",
        pattern=r"should have a .model_type. key|config\.json|tokenizer|safetensors|\.gguf\b"
        r"|checkpoint|(?:missing|unexpected) keys?\b|size mismatch|shape mismatch"
        r"|not a valid model|can't load|error loading model|failed to load '"
        r"|failed to load (?:the |all )?models?|model loading|loading the model"
        r"|HFValidationError|repo id must|trust_remote_code"
        r"|weight \S+ does not exist"
        # torch's embedding given a token id past its rows: the tokenizer's vocabulary is
        # larger than the model's ("IndexError: index out of range in self")
        r"|\bindex out of range in self\b"
        # an adapter's own files that do not make a LoRA adapter
        rf"|{ADAPTER_FILES}"
        # a checkpoint's tensor the model's class has no place for ("There is no module or
        # parameter named 'lm_head.input_scale' in Qwen3_5MoeForCausalLM")
        r"|\bno (?:module or )?parameter named\b"
        # the tokenizer's vocabulary and its added tokens ("Non-consecutive added token
        # '<unk>' found ... in saved vocabulary")
        r"|\bvocab(?:ulary)?\b|\badded tokens?\b"
        # the model's chat template does not parse or render: minijinja's error (TGI's
        # router: "Error { kind: SyntaxError, detail: ..., name: ..., line: 7 }"), a
        # template's syntax error by name
        r"|\bError \{ kind: \w+, detail: |\btemplate\w*\b.{0,40}\b(?:syntax|parse) ?error"
        # a quantized layout the checkpoint does not hold ("Cannot load `awq` weight");
        # a tensor of the checkpoint whose shape the model's config does not expect
        r"|(?:cannot|can't|could not|unable to) load `?\w+`? weights?\b"
        r"|expanded size of the tensor .{0,40}must match the existing size"
        # a weight's or parameter's name the model class does not have (a KeyError
        # from load_weights: a checkpoint of another layout or architecture)
        r"|KeyError: ['\"][\w.]*\.(?:weight|bias|scales?|qweight|qzeros|g_idx"
        r"|weight_scale\w*|input_scale|\w*_proj)['\"]"
        # the standard library's JSON decoder failed on a file read at start
        # (a config.json or tokenizer file empty or cut; an HTTP body is requests')
        r"|\bjson\.decoder\.JSONDecodeError"
        # the decoder's message without its name (pydantic's "Value error, Expecting
        # value: ..."); requests' JSONDecodeError (an HTTP body) names itself
        r"|(?<!JSONDecodeError: )\bExpecting value: line \d+ column \d+"
        # tritonserver's model configuration file, and protobuf's parse of it
        r"|\bconfig\.pbtxt\b|inference\.ModelConfig\b|Error parsing text-format"
        # tritonserver's report of a model that did not load ("Model 'x' loading failed
        # with error: ..."), and an ensemble's step whose model did not ("ensemble 'e'
        # depends on 'x' which has no loaded version")
        r"|\bmodel '[^']+' loading failed\b|\bwhich has no loaded version\b"
        # a quantized model placed partly off the GPU ("Found modules on cpu/disk. Using
        # Exllama ... requires all the modules to be on GPU")
        r"|\bmodules? (?:on|to be on) (?:the )?(?:cpu|disk|gpu)\b",
    ),
    Words(
        kind="unsupported-model",
        title="the engine does not support this model",
        pattern=r"architectures? .*(?:not supported|unsupported|not (?:yet )?implemented)"
        r"|(?:unsupported|unknown|unrecognized) (?:model|architecture)"
        r"|model type .*(?:not supported|unsupported|unrecognized)"
        r"|(?:is )?not supported for \w*Model\b"
        # an attention kernel that takes only some head sizes: the model's head dimension
        # is not one of them ("assert Lq in {16, 32, 64, 128, 256}, where Lq = 80", "Head
        # size 80 is not supported by FlashAttention")
        r"|head[ _]?(?:dim(?:ension)?|size)s?\b.{0,60}\b(?:not supported|unsupported"
        r"|must be|only supports?)|\bassert (?:L[qkv]|head_?(?:dim|size)\w*|d_?head)"
        r" in [{\[(]\d+(?:, ?\d+)+",
    ),
    Words(
        kind="download",
        title="the model could not be downloaded",
        pattern=r"ConnectionError|max retries exceeded|temporary failure in name resolution"
        r"|name or service not known|huggingface\.co|LocalEntryNotFoundError|offline mode"
        r"|HF_HUB_OFFLINE|couldn't connect|could not connect|ReadTimeout"
        r"|certificate verify failed|\bdownload",
    ),
    # last: a message that names command-line options by their flags ("When no initial
    # --lora-paths is provided, you need to specify both --max-lora-rank and
    # --lora-target-modules"), whatever option the command gave: the fix is in the
    # command, where no family above named another
    Words(
        kind="bad-args",
        title="the message names the options to change",
        # as required, forbidden or exclusive: not as advice ("Decrease
        # --kv-cache-memory-bytes" under an out-of-memory)
        pattern=r"(?:you need to|\bmust\b|\brequires?\b|\brequired\b|cannot be used"
        r"|can't be used|mutually exclusive|only (?:valid|supported|allowed) (?:with|when))"
        r"[^.]{0,80}?(?<![\w-])--[a-z][a-z0-9]*(?:-[a-z0-9]+)+\b"
        r"|(?<![\w-])--[a-z][a-z0-9]*(?:-[a-z0-9]+)+\b[^.]{0,80}?(?:is required|are required"
        r"|\bmust be\b|cannot be used|can't be used|is not supported|mutually exclusive)",
    ),
)
_COMPILED: tuple[tuple[re.Pattern[str], Words], ...] = tuple(
    (re.compile(words.pattern, re.IGNORECASE), words) for words in _WORDS
)


# a sentence that only supposes ("If exit code is -9 (SIGKILL), a common cause is the OS
# OOM killer. Run `dmesg -T | grep -i oom` to check.", SGLang's report of a scheduler that
# died of anything): its words are advice, not what happened
_SUPPOSED = re.compile(r"(?:^|(?<=[.!?] ))(?:If |Run `)[^.!?]*(?:[.!?]|$)")


def words_kind(text: str) -> Words | None:
    """The first family whose words ``text`` holds, or None when it names none (a
    sentence that only supposes, or advises a command, names none)."""
    if "If " in text or "Run `" in text:
        text = _SUPPOSED.sub("", text)
    for pattern, words in _COMPILED:
        if pattern.search(text):
            return words
    return None


_ORDER: dict[str, int] = {}
for _index, _words in enumerate(_WORDS):
    _ORDER.setdefault(_words.kind, _index)


def kind_order(kind: str | None) -> int:
    """Where ``kind``'s words first stand in the order above (the root of a chain of
    failures first: memory before NCCL); after all of them for a kind no words name."""
    return _ORDER.get(kind or "", len(_WORDS))
