"""servegate: launch, gate, benchmark and compare LLM inference servers.

    with servegate.launch(["python3", "-m", "vllm.entrypoints.openai.api_server", ...],
                          engine="vllm", port=8000) as server:
        print(server.url)

The gate's names (``launch``, ``wait``, ``Server``, ``StopReport``, ``Verdict``) load on
first use, so that ``servegate stop`` and ``import servegate`` stay quick. ``launch`` is
the package ``servegate.launch``, callable as its function ``launch``: an ``import
servegate.launch.…`` anywhere makes the package this attribute, so it is that always.
The module's public names are ``__all__`` and nothing else (tests/test_package.py).
"""

from __future__ import annotations

import importlib as _importlib
import typing as _typing

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

if _typing.TYPE_CHECKING:
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

_LAZY = {  # name -> (module, its attribute; None: the module itself)
    "launch": ("servegate.launch", None),
    "Server": ("servegate.launch", "Server"),
    "StopReport": ("servegate.launch", "StopReport"),
    "wait": ("servegate.gate", "wait"),
    "Verdict": ("servegate.gate", "Verdict"),
}


def __getattr__(name: str) -> _typing.Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'servegate' has no attribute {name!r}")
    module, attribute = _LAZY[name]
    value = _importlib.import_module(module)
    if attribute is not None:
        value = getattr(value, attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
