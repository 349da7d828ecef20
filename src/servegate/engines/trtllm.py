"""TensorRT-LLM (``trtllm-serve``): profile as data.

uvicorn starts only after the model is built and warmed up; ``/health`` checks only the
executor, so the probe is ``/health_generate``, which runs one real 1-token generation.
MPI workers live in other process groups: stopping relies on the descendant snapshot.
"""

from __future__ import annotations

from servegate.engines.common import COMMON_FATAL, UVICORN_PHASE
from servegate.engines.profile import EngineProfile, Phase, Signature

__all__ = ["PROFILE"]

PROFILE = EngineProfile(
    name="trtllm",
    default_port=8000,
    probe_path="/health_generate",
    ready_lines=(r"Application startup complete\.", r"Uvicorn running on "),
    fatal=(
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
        Signature(
            pattern=r"MPI_ABORT",
            kind="mpi",
            title="an MPI rank aborted",
            hint="one rank failed: its traceback is above; check every GPU is visible",
            wrapper=True,
        ),
        *COMMON_FATAL,
    ),
    phases=(
        Phase(
            name="cuda_graph_warmup",
            start=(r"Run generation-only CUDA graph warmup",),
        ),
        Phase(name="piecewise_cuda_graph_warmup", start=(r"Running piecewise CUDA graph warmup",)),
        UVICORN_PHASE,
    ),
    metrics_path="/prometheus/metrics",
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
