"""llama.cpp (``llama-server``): profile as data.

The HTTP server starts before the model loads: ``/health`` answers 503 ``Loading model``
until it is loaded, while ``/v1/models`` already answers 200, so only ``/health`` counts.
Ready and fatal strings differ between releases; both spellings are listed.
"""

from __future__ import annotations

from servegate.engines.common import COMMON_FATAL
from servegate.engines.profile import EngineProfile, Phase, Signature

__all__ = ["PROFILE"]

PROFILE = EngineProfile(
    name="llamacpp",
    default_port=8080,
    probe_path="/health",
    ready_lines=(r"model loaded", r"listening on http", r"all slots are idle"),
    fatal=(
        Signature(
            pattern=r"exiting due to model loading error",
            kind="model-load",
            title="the model failed to load",
            hint="check the -m path, that the GGUF file is complete, and the memory "
            "needed for -ngl / -c",
        ),
        Signature(
            pattern=r"exiting due to HTTP server error",
            kind="port-in-use",
            title="the HTTP server could not start",
            hint="the port is taken or the host is wrong: pick another --port or --host",
        ),
        *COMMON_FATAL,
    ),
    phases=(
        Phase(name="load_model", start=(r"loading model",), end=(r"model loaded",)),
        Phase(
            name="warmup",
            start=(r"warming up the model",),
            end=(r"all slots are idle", r"listening on http"),
        ),
    ),
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
