"""Hugging Face TGI (``text-generation-launcher``): profile as data.

The router binds its port only after the shards are warm, right after ``Connected``.
Shards run in their own process groups, so stopping must use the descendant snapshot.
"""

from __future__ import annotations

from servegate.engines.common import COMMON_FATAL
from servegate.engines.profile import EngineProfile, Phase, Signature

__all__ = ["PROFILE"]

_SHARD_HINT = "see the shard's standard error output above; OOM and NCCL errors show there"

PROFILE = EngineProfile(
    name="tgi",
    default_port=3000,
    probe_path="/health",
    ready_lines=(r"\bConnected\s*$",),
    fatal=(
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
            pattern=r"Shard process was signaled to shutdown with signal",
            kind="shard",
            title="a shard was killed by a signal",
            hint="signal 9 usually means the OS OOM killer: check host memory",
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
            hint="see the router's error above; a taken port shows as 'Failed to bind'",
        ),
        Signature(
            pattern=r"Failed to bind to ",
            kind="port-in-use",
            title="the router could not bind its port",
            hint="another process holds the port: stop it or pick another --port",
        ),
        Signature(
            pattern=r"Download encountered an error",
            kind="download",
            title="the weights download failed",
            hint="check the model id, HF_TOKEN and network access, or point to local weights",
        ),
        Signature(
            pattern=r"text-generation-server not found in PATH",
            kind="install",
            title="text-generation-server is not installed",
            hint="install the TGI server package or use the official container",
        ),
        Signature(
            pattern=r"^Error: (?:ShardCannotStart|ShardFailed|WebserverFailed|DownloadError)",
            kind="engine-init",
            title="the launcher gave up",
            hint=_SHARD_HINT,
            wrapper=True,
        ),
        *COMMON_FATAL,
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
    essential_children=(r"text-generation-server serve",),
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
