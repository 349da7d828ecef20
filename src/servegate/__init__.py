"""servegate: launch, gate, benchmark and compare LLM inference servers.

    with servegate.launch(["python3", "-m", "vllm.entrypoints.openai.api_server", ...],
                          engine="vllm", port=8000) as server:
        print(server.url)
"""

from __future__ import annotations

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

__all__ = [
    "BenchError",
    "ConfigError",
    "GateError",
    "PortInUseError",
    "ServegateError",
    "ServerCrashed",
    "ServerNotFound",
    "ServerTimeout",
    "StoreVersionError",
    "UsageError",
    "__version__",
]
