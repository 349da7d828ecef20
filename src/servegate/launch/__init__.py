"""Start servers, keep track of them, and stop their whole process tree.

    from servegate.launch import launch
    with launch(cmd, engine="vllm", port=8000) as server:
        ...                                   # server.url, server.alive()
    # leaving the block stopped every process of the tree

See ``server.launch`` for the arguments, ``tree`` for how a tree is stopped, and
``keeper`` for the dead-man switch that takes the tree down with its launcher.
"""

from __future__ import annotations

from servegate.launch.server import Server, launch
from servegate.launch.tree import StopReport

__all__ = ["Server", "StopReport", "launch"]
