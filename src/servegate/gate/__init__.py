"""The readiness gate: READY, CRASH or TIMEOUT, decided the moment it is known.

    from servegate.gate import wait
    verdict = wait(log_path="server.log", pid=1234, engine="sglang", port=30000)

``wait`` (``running``) gates a server someone else started (from its log file, PID
and/or URL) and never kills anything; ``servegate.launch`` starts a server and gates it
with the same machinery: ``decide.Gate``, the event loop that decides the verdict. How
the verdict is decided: docs/gate.md.

The names load on first use: the verdict and its states without the gate's machinery
(numpy), so that ``servegate history`` and the keeper stay quick to start.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from servegate.gate.options import GateOptions, check_log_path
    from servegate.gate.running import wait
    from servegate.gate.verdict import (
        DetectedBy,
        Kind,
        PhaseSpan,
        Status,
        Verdict,
        raise_for_verdict,
    )

__all__ = [
    "DetectedBy",
    "GateOptions",
    "Kind",
    "PhaseSpan",
    "Status",
    "Verdict",
    "check_log_path",
    "raise_for_verdict",
    "wait",
]

_HOME = {
    "GateOptions": "servegate.gate.options",
    "check_log_path": "servegate.gate.options",
    "wait": "servegate.gate.running",
    **dict.fromkeys(
        ("DetectedBy", "Kind", "PhaseSpan", "Status", "Verdict", "raise_for_verdict"),
        "servegate.gate.verdict",
    ),
}


def __getattr__(name: str) -> Any:
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module 'servegate.gate' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
