"""llama.cpp (``llama-server``, and ``python -m llama_cpp.server``): profile as data.

llama-server starts its HTTP server before the model loads: ``/health`` answers 503
``Loading model`` until it is loaded, while ``/v1/models`` already answers 200, so only
``/health`` counts. llama-cpp-python's server (uvicorn) opens its port only once the
model is loaded, prints ``Uvicorn running on http`` then, and has no ``/health`` route
at all: ``probe_absent_ok`` lets a 404 there confirm a ready line (a 503 never does).
Its ``Application startup complete`` is not a ready line: it precedes a failed bind.
Ready and fatal strings differ between releases; both spellings are listed.
"""

from __future__ import annotations

from servegate.engines.common import COMMON_FATAL, UVICORN_PHASE
from servegate.engines.profile import EngineProfile, Phase, Signature

__all__ = ["PROFILE"]

_MODEL_HINT = (
    "check the -m / --model path, that the GGUF file is complete, and the memory "
    "needed for -ngl / -c"
)
_PORT_HINT = "the port is taken or the host is wrong: pick another --port or --host"

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
        Signature(
            pattern=r"exiting due to model loading error",
            kind="model-load",
            title="the model failed to load",
            hint=_MODEL_HINT,
        ),
        Signature(
            pattern=r"ValueError: Model path does not exist:",
            kind="model-load",
            title="the model path does not exist",
            hint="check the --model path (llama-cpp-python wants a GGUF file)",
        ),
        # llama-server prints its own final line right after this one: wait for it
        Signature(
            pattern=r"failed to open GGUF file",
            kind="model-load",
            title="the GGUF file could not be opened",
            hint=_MODEL_HINT,
            wrapper=True,
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
        *COMMON_FATAL,
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
