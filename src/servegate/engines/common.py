"""Fatal log signatures shared by every engine (CUDA, NCCL, sockets, the interpreter).

These come from the CUDA runtime, PyTorch, NCCL, gloo, torch.distributed, FlashInfer,
uvicorn, argparse, huggingface_hub and the C runtime, so they read the same whichever
engine prints them. Each engine module adds its own, and passes its own hints (its
flags) to ``common_fatal``.
"""

from __future__ import annotations

from servegate.engines.profile import Phase, Progress, Signature

__all__ = [
    "BUILD_ERROR",
    "COMMON_FATAL",
    "COMMON_PROGRESS",
    "SHARDS_PROGRESS",
    "UVICORN_PHASE",
    "common_fatal",
]

_OOM_HINT = (
    "lower the server's GPU memory share, batch size or context length, "
    "or free the GPU (nvidia-smi shows who holds it)"
)
_NCCL_HINT = (
    "rerun with NCCL_DEBUG=INFO; check NCCL_SOCKET_IFNAME, that every GPU is visible "
    "and that no stale process holds one"
)
_DISTRIBUTED_HINT = (
    "a peer of the distributed group died or cannot be reached: the first error of "
    "another rank is above; across nodes check the rendezvous address, "
    "GLOO_SOCKET_IFNAME and the firewall"
)
# a compiler's or linker's own error line in a build (a JIT kernel's): what explains a
# wrapper's "ninja exited with status 1" (the header or library it cannot find)
BUILD_ERROR = (
    r"fatal error: [^:]{1,200}: No such file or directory|\bcannot find -l[\w+.-]"
    r"|undefined reference to|\bnvcc fatal\b|\berror: #error\b"
)
_CUDA_GRAPH_HINT = "run without CUDA graphs to confirm, then capture fewer batch sizes"
_PORT_HINT = (
    "another process holds the port: stop it (servegate ps / servegate stop) or pick another --port"
)
_RENDEZVOUS_HINT = (
    "another process holds the torch.distributed rendezvous port (MASTER_PORT or the "
    "engine's distributed init address): stop it or pick another port"
)
# argparse's last line, printed by every Python engine's command line
_ARGS_HINT = "check the flag's spelling and value for this engine version (its --help lists them)"
_MODEL_HINT = (
    "check the model path or Hub id; for a gated or private repo accept its terms "
    "on the Hub and set HF_TOKEN"
)
_ARCH_HINT = (
    "this engine version (or its transformers) does not support the model's "
    "architecture: upgrade it, or check config.json's architectures"
)
_INSTALL_HINT = (
    "the interpreter that runs the command lacks the engine or one of its modules: install "
    "it there (python -m pip install ...), activate the right environment, or use the "
    "engine's container"
)
_ARCH_BUILD_HINT = (
    "the kernels were not built for this GPU: install a build for its compute capability "
    "(or a CUDA toolkit that knows it), or set TORCH_CUDA_ARCH_LIST for a source build"
)
_ILLEGAL_HINT = (
    "a kernel bug or a bad kernel choice: try another attention backend "
    "or disable CUDA graphs to locate it"
)


def common_fatal(
    *,
    oom_hint: str = _OOM_HINT,
    nccl_hint: str = _NCCL_HINT,
    distributed_hint: str = _DISTRIBUTED_HINT,
    cuda_graph_hint: str = _CUDA_GRAPH_HINT,
    port_hint: str = _PORT_HINT,
    args_hint: str = _ARGS_HINT,
    model_hint: str = _MODEL_HINT,
) -> tuple[Signature, ...]:
    """The shared signatures, with an engine's own hints (its flags, not another's).

    Each keyword replaces the hint of one kind: ``oom_hint`` (oom), ``nccl_hint``
    (nccl), ``distributed_hint`` (distributed: gloo, the torch.distributed store),
    ``cuda_graph_hint`` (cuda-graph: a failed CUDA-graph capture), ``port_hint``
    (port-in-use), ``args_hint`` (bad-args), ``model_hint`` (model-load). The defaults
    name no engine's flags. Order is priority: the first signature that matches a line
    names it, so a capture that failed because of an OOM or a lost peer is that cause.
    """
    return (
        # out of memory, in each spelling: torch's allocator, a CUDA call, ROCm
        Signature(
            pattern=r"CUDA out of memory", kind="oom", title="CUDA out of memory", hint=oom_hint
        ),
        Signature(
            pattern=r"OutOfMemoryError", kind="oom", title="GPU out of memory", hint=oom_hint
        ),
        Signature(
            pattern=r"CUDA error: out of memory",
            kind="oom",
            title="CUDA out of memory (a CUDA call failed)",
            hint=oom_hint,
        ),
        Signature(
            pattern=r"cudaErrorMemoryAllocation",
            kind="oom",
            title="CUDA out of memory (a CUDA call failed)",
            hint=oom_hint,
        ),
        Signature(
            pattern=r"HIP out of memory", kind="oom", title="GPU out of memory", hint=oom_hint
        ),
        # NCCL's report of a CUDA call that failed under it: its "Last error:" below says
        # which (an allocation: memory), so it waits for that line as a wrapper does
        Signature(
            pattern=r"NCCL error.*\bunhandled cuda error",
            kind="nccl",
            title="NCCL hit a CUDA error",
            hint=nccl_hint,
            wrapper=True,
        ),
        # NCCL, however torch or the engine's own wrapper spells it
        Signature(
            pattern=r"NCCL error(?!.*\bunhandled cuda error)",
            kind="nccl",
            title="NCCL error",
            hint=nccl_hint,
        ),
        Signature(pattern=r"NCCL Error \d", kind="nccl", title="NCCL error", hint=nccl_hint),
        Signature(
            pattern=r"ProcessGroupNCCL.*(?:Timeout|Watchdog caught)",
            kind="nccl",
            title="NCCL watchdog timeout",
            hint=nccl_hint,
        ),
        Signature(
            pattern=r"ncclUnhandledCudaError",
            kind="nccl",
            title="NCCL hit a CUDA error",
            hint=nccl_hint,
            wrapper=True,
        ),
        *(
            Signature(pattern=code, kind="nccl", title=f"NCCL error ({code})", hint=nccl_hint)
            for code in ("ncclSystemError", "ncclInternalError", "ncclRemoteError")
        ),
        # torch.distributed without NCCL: gloo's TCP transport, the rendezvous store
        # any of gloo's TCP transport (pair.cc: a peer closed; unbound_buffer.cc: a send
        # or receive timed out), also inside a CUDA-graph capture it broke
        Signature(
            pattern=r"gloo/transport/tcp/\w+\.cc",
            kind="distributed",
            title="a gloo connection to another rank failed",
            hint=distributed_hint,
        ),
        Signature(
            pattern=r"Connection closed by peer",
            kind="distributed",
            title="another rank closed its connection",
            hint=distributed_hint,
        ),
        Signature(
            pattern=r"Gloo connectFullMesh failed",
            kind="distributed",
            title="gloo could not connect every rank",
            hint=distributed_hint,
        ),
        Signature(
            pattern=r"DistStoreError",
            kind="distributed",
            title="the torch.distributed store failed (a rank did not join in time)",
            hint=distributed_hint,
        ),
        # the store's server could not listen on its port (EADDRINUSE, even when a
        # paste breaks that word): before DistNetworkError, which it is raised as
        Signature(
            pattern=r"server socket has failed to listen",
            kind="port-in-use",
            title="the torch.distributed rendezvous port is in use",
            hint=_RENDEZVOUS_HINT,
            narrow=True,
        ),
        Signature(
            pattern=r"DistNetworkError",
            kind="distributed",
            title="the torch.distributed store could not be reached",
            hint=distributed_hint,
        ),
        Signature(
            pattern=r"EADDRINUSE",
            kind="port-in-use",
            title="the torch.distributed rendezvous port is in use",
            hint=_RENDEZVOUS_HINT,
            narrow=True,
        ),
        # CUDA errors with a known meaning, then any other CUDA error
        Signature(
            pattern=r"no kernel image is available",
            kind="cuda-arch",
            title="no CUDA kernel image for this GPU",
            hint="the installed wheels were not built for this GPU: install a build "
            "for its compute capability",
        ),
        Signature(
            pattern=r"invalid device function",
            kind="cuda-arch",
            title="a CUDA kernel was not built for this GPU (invalid device function)",
            hint=_ARCH_BUILD_HINT,
        ),
        # ptxas (Triton's and torch's JIT) does not know the GPU's architecture
        Signature(
            pattern=r"is not defined for option 'gpu-name'",
            kind="cuda-arch",
            title="ptxas does not know this GPU's architecture",
            hint="the CUDA toolkit (ptxas) is older than the GPU: install a newer CUDA "
            "toolkit, or point TRITON_PTXAS_PATH at a ptxas that knows it",
        ),
        Signature(
            pattern=r"No supported CUDA architectures found",
            kind="cuda-arch",
            title="no supported CUDA architecture for a JIT kernel",
            hint="the CUDA toolkit is too old for this GPU or the kernel does not support it: "
            "upgrade CUDA or choose another attention backend",
        ),
        Signature(
            pattern=r"illegal memory access was encountered",
            kind="cuda-error",
            title="CUDA illegal memory access",
            hint=_ILLEGAL_HINT,
        ),
        Signature(
            pattern=r"cudaErrorIllegalAddress",
            kind="cuda-error",
            title="CUDA illegal memory access",
            hint=_ILLEGAL_HINT,
        ),
        Signature(
            pattern=r"device-side assert triggered",
            kind="cuda-error",
            title="a CUDA kernel assertion failed",
            hint="rerun with CUDA_LAUNCH_BLOCKING=1 to find the kernel; often an index out "
            "of range (a token id past the vocabulary)",
        ),
        Signature(
            pattern=r"uncorrectable (?:NVLink|ECC) error",
            kind="cuda-error",
            title="a GPU hardware error",
            hint="the GPU or its NVLink reported an uncorrectable error: check nvidia-smi -q "
            "and dmesg (Xid), reset or drain the GPU",
        ),
        # a failed CUDA-graph capture (after OOM and lost peers, which also break one)
        Signature(
            pattern=r"operation not permitted when stream is capturing",
            kind="cuda-graph",
            title="CUDA-graph capture failed: an operation not allowed during capture",
            hint=cuda_graph_hint,
        ),
        Signature(
            pattern=r"during CUDA graph capture",
            kind="cuda-graph",
            title="CUDA-graph capture failed: an operation not allowed during capture",
            hint=cuda_graph_hint,
        ),
        Signature(
            pattern=r"cudaErrorStreamCapture",
            kind="cuda-graph",
            title="CUDA-graph capture failed",
            hint=cuda_graph_hint,
        ),
        Signature(
            pattern=r"Capture cuda graph failed",
            kind="cuda-graph",
            title="CUDA-graph capture failed",
            hint=cuda_graph_hint,
            # a kernel that the capture built first (a JIT build) failed to build: the
            # compiler's or linker's own line says why
            explained_by=BUILD_ERROR,
        ),
        # a custom kernel's launch check (AWQ, GPTQ, Marlin, exllama: "CUDA kernel failed : ...")
        Signature(
            pattern=r"CUDA kernel failed",
            kind="cuda-error",
            title="a CUDA kernel failed",
            hint="see the CUDA error in the matched line; rerun with CUDA_LAUNCH_BLOCKING=1 "
            "to find the kernel",
        ),
        Signature(
            pattern=r"CUDA error: ",
            kind="cuda-error",
            title="CUDA error",
            hint="see the CUDA error in the matched line; rerun with CUDA_LAUNCH_BLOCKING=1 "
            "to find the call that failed",
        ),
        # the HTTP port
        Signature(
            pattern=r"Address already in use",
            kind="port-in-use",
            title="address already in use",
            hint=port_hint,
        ),
        # Go's net.OpError (ollama and other Go servers), in lower case; Windows's
        # WSAEADDRINUSE text, in English
        Signature(
            pattern=r"bind: address already in use",
            kind="port-in-use",
            title="address already in use",
            hint=port_hint,
        ),
        Signature(
            pattern=r"Only one usage of each socket address",
            kind="port-in-use",
            title="address already in use",
            hint=port_hint,
        ),
        # OpenSSL asks for the pass phrase of an encrypted TLS key on the terminal; a
        # server started with no terminal cannot answer, and fails to serve
        Signature(
            pattern=r"^Enter PEM pass phrase:",
            kind="bad-args",
            title="the TLS key is encrypted and no pass phrase can be typed",
            hint="give the server a key without a pass phrase (openssl pkey -in key.pem "
            "-out key-plain.pem) or the engine's key-password option",
            narrow=True,
        ),
        # uvicorn asked for workers or a reloader with an app object, not an import
        # string: WEB_CONCURRENCY (a platform's default) gives it workers; it exits (3)
        Signature(
            pattern=r"You must pass the application as an import string to enable "
            r"'reload' or 'workers'",
            kind="bad-args",
            title="uvicorn was asked for workers or a reloader the server cannot have",
            hint="unset WEB_CONCURRENCY (a platform's default number of workers) and "
            "drop --workers or --reload: the server runs one process",
            narrow=True,
        ),
        # EADDRNOTAVAIL (uvicorn and Go print it in lower case, Python's OSError as
        # "[Errno 99] Cannot ..."): the host is not an address of this machine, e.g.
        # localhost resolving to ::1 without IPv6 (a peer's address that a ZMQ or c10d
        # socket cannot take is distributed's)
        Signature(
            pattern=r"cannot assign requested address",
            kind="bad-args",
            title="the host address is not an address of this machine",
            hint="pick a host this machine has (0.0.0.0, 127.0.0.1) instead of a name that "
            "resolves elsewhere (localhost may resolve to ::1 without IPv6)",
            narrow=True,
        ),
        Signature(
            pattern=r"\[Errno 99\] Cannot assign requested address",
            kind="bad-args",
            title="the host address is not an address of this machine",
            hint="pick a host this machine has (0.0.0.0, 127.0.0.1) instead of a name that "
            "resolves elsewhere (localhost may resolve to ::1 without IPv6)",
            narrow=True,
        ),
        Signature(
            pattern=r"error while attempting to bind on address",
            kind="port-in-use",
            title="the HTTP port is already in use",
            hint=port_hint,
        ),
        # Go's listen failed in bind(): after the reasons above, the rest (a localised
        # WSAEADDRINUSE on Windows) is the port being taken
        Signature(
            pattern=r"listen tcp[46]? \S+: bind: ",
            kind="port-in-use",
            title="the port could not be bound (most often: in use)",
            hint=port_hint,
        ),
        # the command line (argparse's messages)
        Signature(
            pattern=r"error: unrecognized arguments",
            kind="bad-args",
            title="the command line has an unknown flag",
            hint=args_hint,
        ),
        # "PROG: error: argument --x/-y: 1 validation error for KVTransferConfig": a
        # JSON option's settings refused by pydantic; the lines below say which field and
        # what it must be ("kv_role", then "Input should be 'kv_producer', ..."): wait
        # for them, as for a wrapper's cause
        Signature(
            pattern=r"error: argument [^\s:]+: \d+ validation errors? for \w+\s*$",
            kind="bad-args",
            title="a flag has an invalid value",
            hint=args_hint,
            wrapper=True,
        ),
        # "PROG: error: argument --x/-y: MESSAGE": whatever the message (argparse's own
        # "invalid choice", or a type converter's "Value ... cannot be converted to ...")
        Signature(
            pattern=r"error: argument [^\s:]+: \S",
            kind="bad-args",
            title="a flag has an invalid value",
            hint=args_hint,
        ),
        Signature(
            pattern=r"error: the following arguments are required",
            kind="bad-args",
            title="a required argument is missing",
            hint=args_hint,
        ),
        Signature(
            pattern=r"error: ambiguous option",
            kind="bad-args",
            title="an abbreviated flag matches several flags",
            hint=args_hint,
        ),
        # getopt's messages (tritonserver, shell launchers, C programs)
        Signature(
            pattern=r": unrecognized option '",
            kind="bad-args",
            title="the command line has an unknown flag",
            hint=args_hint,
        ),
        Signature(
            pattern=r": invalid option -- '",
            kind="bad-args",
            title="the command line has an unknown flag",
            hint=args_hint,
        ),
        Signature(
            pattern=r": option '[^']+' requires an argument",
            kind="bad-args",
            title="a flag is missing its value",
            hint=args_hint,
        ),
        # a wrapper (GPUStack's worker, KServe's model server) that says the server it
        # runs failed to run or start, and why ("Failed to run the vllm server: [Errno 2]
        # No such file or directory: '/usr/local/bin/vllm'"), and keeps running itself:
        # the line ends the wait; its words after the colon give the kind. Not a line
        # that says it will try again (a retrying launcher)
        Signature(
            pattern=r"Failed to (?:run|start|launch|spawn|exec) (?:the )?(?:[\w.-]+ ){0,2}"
            r"(?:server|engine|backend)(?: process)?: (?!.*\b(?:[Rr]etry|[Rr]etrying|[Rr]estart))",
            kind="engine-init",
            title="the wrapper could not run the server",
            hint="the wrapper's line says why the server did not run: fix what it names (the "
            "server's executable or environment) and start it again",
            wrapper=True,
        ),
        # a supervisor (Lemonade, Tabby, Unsloth Studio, Jan, llama-swap) that says the
        # server process it runs ended, crashed or could not load ("llama-server process
        # has terminated with exit code: -1073740791", "llama-server <embedding> exited
        # with status code -1") and keeps running itself: the line ends the wait; its
        # words (a Windows status) or the cause line chosen above it give the kind
        *(
            Signature(
                pattern=pattern,
                kind="child-exit",
                title="the wrapper says the server it runs ended",
                hint="the server the wrapper runs ended before it was ready: run its command "
                "by hand to see its own output, or raise the wrapper's log level",
                wrapper=True,
            )
            for pattern in (
                r"\b[\w.-]*(?:server|engine|backend) process has terminated with exit code:? "
                r"(?=-?\d)",
                r"\b[\w.-]*(?:server|engine|backend)\b(?: <[\w.-]+>)? exited with status code "
                r"(?=-?\d)",
                # Unsloth Studio: "llama-server crashed at startup on both ... attempts"
                r"\b[\w.-]*(?:server|engine|backend)(?: process)? crashed at startup\b",
                # Jan: "Failed to load llama-server: llamacpp error: Process exited with
                # code ExitStatus(ExitStatus(3221225501))"
                r"\bFailed to load [\w.-]+-server: ",
                # llama-swap (Go): "[WARN] <model> ExitError >> exit status 127, exit code:
                # 127": the loader's or the server's line above it says why
                r"\bExitError >> exit status (?=\d)",
            )
        ),
        # the interpreter: python -m of a module that is not installed (no traceback)
        Signature(
            pattern=r"Error while finding module specification for",
            kind="install",
            title="the engine's module is not installed for this interpreter",
            hint=_INSTALL_HINT,
        ),
        Signature(
            pattern=r"python[\d.]*: No module named ",
            kind="install",
            title="the engine's module is not installed for this interpreter",
            hint=_INSTALL_HINT,
        ),
        # the model: Hub access, a wrong path, missing files
        Signature(
            pattern=r"You are trying to access a gated repo",
            kind="model-load",
            title="the model is a gated Hub repo this token cannot read",
            hint=model_hint,
        ),
        Signature(
            pattern=r"Cannot access gated repo",
            kind="model-load",
            title="the model is a gated Hub repo this token cannot read",
            hint=model_hint,
        ),
        Signature(
            pattern=r"GatedRepoError",
            kind="model-load",
            title="the model is a gated Hub repo this token cannot read",
            hint=model_hint,
        ),
        *(
            Signature(
                pattern=pattern,
                kind="model-load",
                title="no such model repo on the Hub",
                hint=model_hint,
            )
            for pattern in (r"RepositoryNotFoundError", r"Repository Not Found for url")
        ),
        Signature(
            pattern=r"is not a local folder and is not a valid model identifier",
            kind="model-load",
            title="the model path is neither a folder nor a Hub id",
            hint=model_hint,
        ),
        Signature(
            pattern=r"does not appear to have a file named",
            kind="model-load",
            title="the model folder lacks a file it needs",
            hint=model_hint,
        ),
        Signature(
            pattern=r"Cannot find any model weights",
            kind="model-load",
            title="no model weights found",
            hint=model_hint,
        ),
        # the model's architecture is one this engine (or its transformers) lacks
        Signature(
            pattern=r"are not supported for now",
            kind="unsupported-model",
            title="the engine does not support this model's architecture",
            hint=_ARCH_HINT,
        ),
        Signature(
            pattern=r"does not recognize this architecture",
            kind="unsupported-model",
            title="transformers does not know this model's architecture",
            hint=_ARCH_HINT,
        ),
        # the process itself
        Signature(
            pattern=r"Segmentation fault",
            kind="segfault",
            title="segmentation fault",
            hint="a native extension crashed: check that torch, CUDA and the engine "
            "were built for each other",
        ),
        Signature(
            # the interpreter failing to start (an encoding, its standard library):
            # what it lacked follows at once ("LookupError: unknown encoding: utf8mb4",
            # "ModuleNotFoundError: No module named 'encodings'")
            pattern=r"Fatal Python error: init_\w+: ",
            kind="fatal-python",
            title="Python could not start",
            hint="the interpreter could not initialise: the line under it says what it "
            "lacked (an encoding, its standard library)",
            wrapper=True,
        ),
        Signature(
            pattern=r"Fatal Python error",
            kind="fatal-python",
            title="fatal Python error",
            hint="the interpreter aborted in native code: check the extension "
            "versions and the faulthandler dump above",
        ),
    )


COMMON_FATAL: tuple[Signature, ...] = common_fatal()

# uvicorn's startup lines, printed by every Python engine with an HTTP front end
UVICORN_PHASE = Phase(
    name="http_startup",
    start=(r"Started server process", r"Waiting for application startup"),
    end=(r"Application startup complete", r"Uvicorn running on "),
)


# tqdm's "n/total" with its unit_scale suffixes (1.23G/4.56G) before the "[elapsed<..." part
_TQDM_NUM = r"\d+(?:\.\d+)?[kMGTPE]?"

# Progress every Python engine prints through the same libraries. huggingface_hub's
# download bars (unit B, scaled: "model-00001-of-00004.safetensors:  45%|...| 2.25G/4.98G
# [00:10<00:12, 225MB/s]"; the Xet backend's "model.safetensors: downloading bytes" bar
# too) are told apart from other bars by their byte rate, and found by the weights'
# file extension (a literal of 7 bytes or more keeps every pattern on the gate's fast
# path); its snapshot_download counts files ("Fetching 4 files:  25%|...| 1/4").
# FlashInfer logs each JIT module it builds or loads ("flashinfer.jit: Loading JIT ops:
# norm"). Triton and TorchInductor print nothing per kernel: their work shows in the
# caches (servegate.startup) and the telemetry, not in the log.
_DOWNLOAD = (
    rf"[^|]*\|[^|]*\|\s*(?P<done>{_TQDM_NUM})/(?P<total>{_TQDM_NUM})\s*\[[^\]]*[kMGTPE]?i?B/s"
)
COMMON_PROGRESS: tuple[Progress, ...] = (
    Progress(pattern=r"\.safetensors:" + _DOWNLOAD, unit="bytes", opens="download"),
    Progress(pattern=r"\.gguf: " + _DOWNLOAD, unit="bytes", opens="download"),
    Progress(
        pattern=r"Fetching \d+ files:.*?(?P<done>\d+)/(?P<total>\d+)\b",
        unit="files",
        opens="download",
    ),
    Progress(
        pattern=r"flashinfer\.jit: Loading JIT ops: ",
        unit="JIT ops",
        opens="jit_compile",
        count=True,
    ),
)

_SHARDS = r":.*?(?P<done>\d+)/(?P<total>\d+)\b"
# vLLM and SGLang load weights through the same bar format (vLLM's weight_utils):
# "Loading safetensors checkpoint shards:  50% Completed | 2/4 [00:01<00:01, ...]",
# "Multi-thread loading shards:  50% Completed | 2/4"
SHARDS_PROGRESS: tuple[Progress, ...] = (
    Progress(
        pattern=r"Loading \w+ checkpoint shards" + _SHARDS, unit="shards", phase="load_weights"
    ),
    Progress(
        pattern=r"Multi-thread loading (?:pt checkpoint )?shards" + _SHARDS,
        unit="shards",
        phase="load_weights",
    ),
)
