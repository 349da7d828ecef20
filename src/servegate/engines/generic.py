"""Any other server: the shared fatal signatures and an optional probe, nothing else.

READY comes from ``--ready`` lines and/or ``--health-url`` (any 2xx): a generic server
has no known readiness route, and an open port proves nothing.
"""

from __future__ import annotations

from servegate.engines.common import COMMON_FATAL, UVICORN_PHASE
from servegate.engines.profile import EngineProfile

__all__ = ["PROFILE"]

PROFILE = EngineProfile(
    name="generic",
    default_port=None,
    probe_path=None,
    ready_lines=(),
    fatal=COMMON_FATAL,
    phases=(UVICORN_PHASE,),
    metrics_path=None,
    metric_names=dict.fromkeys(
        (
            "prompt_tokens",
            "generation_tokens",
            "spec_drafts",
            "spec_draft_tokens",
            "spec_accepted_tokens",
            "running",
            "waiting",
            "ttft_seconds",
            "itl_seconds",
        )
    ),
)
