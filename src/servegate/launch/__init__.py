"""Start servers, keep track of them, and stop their whole process tree.

    from servegate.launch import launch
    with launch(cmd, engine="vllm", port=8000) as server:
        ...                                   # server.url, server.alive()
    # leaving the block stopped every process of the tree

See ``server.launch`` for the arguments, ``stop`` for stopping a server by name or
PID, ``tree`` for how a tree is stopped, and ``keeper`` for the dead-man switch that
takes the tree down with its launcher.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from servegate.launch.stop import Stopped, stop
from servegate.launch.tree import StopReport

if TYPE_CHECKING:
    from servegate.launch.server import Server, launch

__all__ = ["Server", "StopReport", "Stopped", "launch", "stop"]


def __getattr__(name: str) -> Any:
    # the launcher pulls in the gate (numpy); ps and stop need only state and tree
    if name in ("Server", "launch"):
        value = getattr(importlib.import_module("servegate.launch.server"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'servegate.launch' has no attribute {name!r}")
