"""Hugging Face TGI (``text-generation-launcher``): profile as data.

The router binds its port only after the shards are warm, right after ``Connected``.
Shards run in their own process groups, so stopping must use the descendant snapshot.

A shard's Python traceback is printed (through the launcher) before the launcher's own
``Shard 0 failed to start`` / ``Error: ShardCannotStart``: those are wrappers, and the
shard's exception line is the cause. The launcher's command line is parsed by clap,
whose errors read ``error: unexpected argument '--x' found``.
"""

from __future__ import annotations

from servegate.engines.common import COMMON_PROGRESS, common_fatal
from servegate.engines.profile import EngineProfile, Phase, Progress, Signature

__all__ = ["PROFILE"]

_SHARD_HINT = "see the shard's standard error output above; OOM and NCCL errors show there"
_OOM_HINT = (
    "lower --max-batch-prefill-tokens, --max-batch-total-tokens or --max-total-tokens, "
    "lower --cuda-memory-fraction if the GPU is shared, quantize (--quantize) or shard "
    "over more GPUs (--num-shard)"
)
_PORT_HINT = (
    "a port is taken: the router's --port or the shards' torch.distributed --master-port "
    "(29500); stop the other process or pick another port"
)
_ARGS_HINT = (
    "text-generation-launcher rejected a flag or its value: check it in --help of this "
    "TGI version (environment variables such as MAX_TOTAL_TOKENS set flags too)"
)
_ARCH_HINT = (
    "this TGI version has no implementation for the model: upgrade TGI or serve it with "
    "another engine"
)

PROFILE = EngineProfile(
    name="tgi",
    default_port=3000,
    probe_path="/health",
    ready_lines=(r"\bConnected\s*$",),
    fatal=(
        # warmup: the largest prefill batch does not fit (flash_causal_lm.py)
        Signature(
            pattern=r"Not enough memory to handle \d+ ",
            kind="oom",
            title="warmup ran out of GPU memory",
            hint=_OOM_HINT,
        ),
        Signature(
            pattern=r"Error: weight \S+ does not exist",
            kind="model-load",
            title="a weight the model needs is missing from the checkpoint",
            hint="the checkpoint does not match TGI's implementation of the model: check "
            "--model-id / --revision, or upgrade TGI for a newer architecture",
            narrow=True,
        ),
        Signature(
            pattern=r"Error: .*must be divisible by `num_shards`",
            kind="bad-args",
            title="the model cannot be split over this many shards",
            hint="pick a --num-shard that divides the model's attention heads",
            narrow=True,
        ),
        Signature(
            pattern=r"Error: sharded is not supported for",
            kind="unsupported-model",
            title="TGI cannot shard this model",
            hint="TGI has no sharded implementation for it: use --num-shard 1 on a larger "
            "GPU, or upgrade TGI",
            narrow=True,
        ),
        Signature(
            pattern=r"Error: Unsupported model type",  # not the raise line
            kind="unsupported-model",
            title="TGI does not support this model type",
            hint=_ARCH_HINT,
        ),
        # the launcher's command line (clap 4, and clap 3's older wording)
        Signature(
            pattern=r"error: unexpected argument '",
            kind="bad-args",
            title="the launcher does not know a flag",
            hint=_ARGS_HINT,
        ),
        Signature(
            pattern=r"error: invalid value '",
            kind="bad-args",
            title="a launcher flag has an invalid value",
            hint=_ARGS_HINT,
        ),
        Signature(
            pattern=r"error: Found argument '.*' which wasn't expected",
            kind="bad-args",
            title="the launcher does not know a flag",
            hint=_ARGS_HINT,
        ),
        Signature(
            pattern=r"error: the following required arguments were not provided",
            kind="bad-args",
            title="a required launcher flag is missing",
            hint=_ARGS_HINT,
        ),
        Signature(
            pattern=r"Error: ArgumentValidation\(",
            kind="bad-args",
            title="the launcher's flags contradict each other",
            hint=_ARGS_HINT,
        ),
        # consequences: each says that a part failed, and the cause is printed before
        # it (the shard's exception, the router's panic); listed from the most to the
        # least specific, which is how the cause is chosen among them when nothing
        # else was printed
        # signal 9 is SIGKILL: something outside killed the shard (the OS's OOM killer,
        # a container's memory limit), which is the killed kind, not the shard's own failure
        Signature(
            pattern=r"Shard process was signaled to shutdown with signal 9\b",
            kind="killed",
            title="a shard was killed (SIGKILL)",
            hint="signal 9 usually means the OS OOM killer or a container's memory limit: "
            "check host memory (dmesg) and the container's limit",
            wrapper=True,
        ),
        Signature(
            pattern=r"Shard process was signaled to shutdown with signal",
            kind="shard",
            title="a shard was killed by a signal",
            hint="signal 9 usually means the OS OOM killer: check host memory",
            wrapper=True,
        ),
        # the shard's gRPC interceptor, with the traceback after it
        Signature(
            pattern=r"Method \w+ encountered an error",
            kind="engine-init",
            title="a shard's method raised an exception",
            hint=_SHARD_HINT,
            wrapper=True,
        ),
        Signature(
            pattern=r"Shard .* failed to start",
            kind="shard",
            title="a shard failed to start",
            hint=_SHARD_HINT,
            wrapper=True,
        ),
        Signature(
            pattern=r"Shard .* crashed",
            kind="shard",
            title="a shard crashed",
            hint=_SHARD_HINT,
            wrapper=True,
        ),
        Signature(
            pattern=r"Shard status channel disconnected",
            kind="shard",
            title="the shard status channel disconnected",
            hint=_SHARD_HINT,
            wrapper=True,
        ),
        Signature(
            pattern=r"Webserver Crashed",
            kind="webserver",
            title="the router crashed",
            hint="see the router's error above (a panic, a failed warmup); a taken port "
            "shows as 'Failed to bind'",
            wrapper=True,
        ),
        Signature(
            pattern=r"Failed to bind to ",
            kind="port-in-use",
            title="the router could not bind its port",
            hint=_PORT_HINT,
        ),
        Signature(
            pattern=r"Download encountered an error",
            kind="download",
            title="the weights download failed",
            hint="check the model id, HF_TOKEN and network access, or point to local weights",
            # its line opens the download's traceback ("...: Traceback (most recent call
            # last):"): the exception that ends it is quoted (gate/cause.py)
            wrapper=True,
        ),
        Signature(
            pattern=r"text-generation-server not found in PATH",
            kind="install",
            title="text-generation-server is not installed",
            hint="install the TGI server package or use the official container",
        ),
        # models/__init__.py's FLASH_ATT_ERROR_MESSAGE, both wordings, raised by get_model
        Signature(
            pattern=r"Error: .*requires Flash Attention (?:CUDA kernels to be installed|"
            r"enabled models)",
            kind="install",
            title="this model (sharded) needs the flash-attention kernels, which are missing",
            hint="use the official TGI container, or install the flash-attention kernels "
            "(cd server && make install-flash-attention); or run unsharded",
            # models/__init__.py's warning of why the import failed (a missing
            # compiled module: "No module named 'vllm_cache_ops'") says what is missing
            explained_by=r"Could not import Flash Attention enabled models: ",
        ),
        # the launcher's last line, its LauncherError: which part it gave up on
        Signature(
            pattern=r"^Error: (?:ShardCannotStart|ShardFailed)\b",
            kind="shard",
            title="the launcher gave up: a shard failed",
            hint=_SHARD_HINT,
            wrapper=True,
        ),
        Signature(
            pattern=r"^Error: WebserverFailed\b",
            kind="webserver",
            title="the launcher gave up: the router failed",
            hint="see the router's error above (a panic, a failed warmup); a taken port "
            "shows as 'Failed to bind'",
            wrapper=True,
        ),
        Signature(
            pattern=r"^Error: DownloadError\b",
            kind="download",
            title="the launcher gave up: the weights download failed",
            hint="check the model id, HF_TOKEN and network access, or point to local weights",
            wrapper=True,
        ),
        *common_fatal(oom_hint=_OOM_HINT, port_hint=_PORT_HINT, args_hint=_ARGS_HINT),
        # torch's spelling of an OOM inside a CUDA-graph capture, before any CUDA error
        Signature(
            pattern=r"CUDA error: out of memory",
            kind="oom",
            title="CUDA out of memory",
            hint=_OOM_HINT,
        ),
        Signature(
            pattern=r"CUDA error: ",
            kind="cuda-error",
            title="CUDA error in a shard",
            hint="a CUDA runtime failure: check the driver (nvidia-smi), the GPU's health "
            "(Xid errors in dmesg) and that the image matches the installed driver",
        ),
    ),
    phases=(
        Phase(
            name="download_weights",
            start=(r"Starting check and download process",),
            end=(r"Successfully downloaded weights",),
        ),
        Phase(name="start_shards", start=(r"Starting shard",), end=(r"Shard ready in",)),
        Phase(name="start_router", start=(r"Starting Webserver",)),
        Phase(
            name="warmup",
            start=(r"Warming up model",),
            end=(r"Setting max batch total tokens to",),
        ),
    ),
    progress=(
        # text_generation_server's downloader: "Download: [2/4] -- ETA: 0:01:10.5"
        Progress(
            pattern=r"Download: \[(?P<done>\d+)/(?P<total>\d+)\] -- ETA",
            unit="files",
            phase="download_weights",
        ),
        *COMMON_PROGRESS,
    ),
    essential_children=(r"text-generation-server serve",),
    metric_prefix="tgi_",
    metric_names={
        "prompt_tokens": None,
        "generation_tokens": None,
        "spec_drafts": None,
        "spec_draft_tokens": None,
        "spec_accepted_tokens": None,
        "running": "tgi_batch_current_size",
        "waiting": "tgi_queue_size",
        "ttft_seconds": None,
        "itl_seconds": None,
    },
)
