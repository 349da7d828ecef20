"""servegate: launch, gate, benchmark and compare LLM inference servers.

    with servegate.launch(["python3", "-m", "vllm.entrypoints.openai.api_server", ...],
                          engine="vllm", port=8000) as server:
        print(server.url)

The gate's names (``launch``, ``wait``, ``Server``, ``StopReport``, ``Verdict``) load on
first use, so that ``servegate stop`` and ``import servegate`` stay quick.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from servegate._version import __version__
from servegate.errors import (
    BenchError,
    ConfigError,
    GateError,
    PortInUseError,
    ServegateError,
    ServerCrashed,
    ServerNotFound,
    ServerTimeout,
    StoreVersionError,
    UsageError,
)

if TYPE_CHECKING:
    from servegate.gate import Verdict, wait
    from servegate.launch import Server, StopReport, launch

__all__ = [
    "BenchError",
    "ConfigError",
    "GateError",
    "PortInUseError",
    "ServegateError",
    "Server",
    "ServerCrashed",
    "ServerNotFound",
    "ServerTimeout",
    "StopReport",
    "StoreVersionError",
    "UsageError",
    "Verdict",
    "__version__",
    "launch",
    "wait",
]

_LAZY = {
    "launch": "servegate.launch",
    "Server": "servegate.launch",
    "StopReport": "servegate.launch",
    "wait": "servegate.gate",
    "Verdict": "servegate.gate",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'servegate' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
