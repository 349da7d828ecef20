"""Fatal log signatures shared by every engine (CUDA, NCCL, sockets, the interpreter).

These come from the CUDA runtime, PyTorch, NCCL, FlashInfer, uvicorn, argparse and the C
runtime, so they read the same whichever engine prints them. Each engine module adds its
own.
"""

from __future__ import annotations

from servegate.engines.profile import Phase, Signature

__all__ = ["COMMON_FATAL", "UVICORN_PHASE", "common_fatal"]

_OOM_HINT = (
    "lower the server's GPU memory share, batch size or context length, "
    "or free the GPU (nvidia-smi shows who holds it)"
)
_NCCL_HINT = (
    "rerun with NCCL_DEBUG=INFO; check NCCL_SOCKET_IFNAME, that every GPU is visible "
    "and that no stale process holds one"
)
_PORT_HINT = (
    "another process holds the port: stop it (servegate ps / servegate stop) or pick another --port"
)
# argparse's last line, printed by every Python engine's command line
_ARGS_HINT = "check the flag's spelling and value for this engine version (its --help lists them)"


def common_fatal(
    *,
    oom_hint: str = _OOM_HINT,
    nccl_hint: str = _NCCL_HINT,
    port_hint: str = _PORT_HINT,
    args_hint: str = _ARGS_HINT,
) -> tuple[Signature, ...]:
    """The shared signatures, with an engine's own hints (its flags, not another's).

    Each keyword replaces the hint of one kind: ``oom_hint`` (oom), ``nccl_hint``
    (nccl), ``port_hint`` (port-in-use), ``args_hint`` (bad-args). The defaults name
    no engine's flags.
    """
    return (
        Signature(
            pattern=r"CUDA out of memory", kind="oom", title="CUDA out of memory", hint=oom_hint
        ),
        Signature(
            pattern=r"OutOfMemoryError", kind="oom", title="GPU out of memory", hint=oom_hint
        ),
        Signature(pattern=r"NCCL error", kind="nccl", title="NCCL error", hint=nccl_hint),
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
        ),
        Signature(
            pattern=r"CUDA error: an illegal memory access",
            kind="cuda-error",
            title="CUDA illegal memory access",
            hint="a kernel bug or a bad kernel choice: try another attention backend "
            "or disable CUDA graphs to locate it",
        ),
        Signature(
            pattern=r"CUDA error: no kernel image is available",
            kind="cuda-arch",
            title="no CUDA kernel image for this GPU",
            hint="the installed wheels were not built for this GPU: install a build "
            "for its compute capability",
        ),
        Signature(
            pattern=r"No supported CUDA architectures found",
            kind="cuda-arch",
            title="no supported CUDA architecture for a JIT kernel",
            hint="the CUDA toolkit is too old for this GPU or the kernel does not support it: "
            "upgrade CUDA or choose another attention backend",
        ),
        Signature(
            pattern=r"Address already in use",
            kind="port-in-use",
            title="address already in use",
            hint=port_hint,
        ),
        Signature(
            pattern=r"error while attempting to bind on address",
            kind="port-in-use",
            title="the HTTP port is already in use",
            hint=port_hint,
        ),
        Signature(
            pattern=r"error: unrecognized arguments",
            kind="bad-args",
            title="the command line has an unknown flag",
            hint=args_hint,
        ),
        Signature(
            pattern=r"error: argument .*: invalid",
            kind="bad-args",
            title="a flag has an invalid value",
            hint=args_hint,
        ),
        Signature(
            pattern=r"Segmentation fault",
            kind="segfault",
            title="segmentation fault",
            hint="a native extension crashed: check that torch, CUDA and the engine "
            "were built for each other",
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
