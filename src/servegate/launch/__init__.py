"""Start servers, keep track of them, and stop their whole process tree.

    from servegate.launch import launch
    with launch(cmd, engine="vllm", port=8000) as server:
        ...                                   # server.url, server.alive()
    # leaving the block stopped every process of the tree

See ``server.launch`` for the arguments, ``stop`` for stopping a server by name or
PID, ``tree`` for how a tree is stopped, and ``keeper`` for the dead-man switch that
takes the tree down with its launcher.

The package is itself callable as its ``launch``: ``servegate.launch`` names both the
public function and this package, and any ``import servegate.launch.…`` makes the
package that attribute of ``servegate``, so ``servegate.launch(cmd, ...)`` must start a
server whichever it is (``servegate`` exports this package for that name).
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

from servegate.launch.stop import Stopped, stop
from servegate.launch.tree import StopReport

if TYPE_CHECKING:
    import inspect

    from servegate.launch.server import Server, launch

__all__ = ["Server", "StopReport", "Stopped", "launch", "stop"]


def __getattr__(name: str) -> Any:
    # the launcher pulls in the gate (numpy); ps and stop need only state and tree
    if name in ("Server", "launch"):
        value = getattr(importlib.import_module("servegate.launch.server"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'servegate.launch' has no attribute {name!r}")


class _CallablePackage(types.ModuleType):
    """This package, called as ``launch``: ``servegate.launch(cmd, engine=...)``."""

    def __call__(self, *args: Any, **kwargs: Any) -> Server:
        return self.launch(*args, **kwargs)  # type: ignore[no-any-return]

    @property
    def __signature__(self) -> inspect.Signature:
        import inspect

        return inspect.signature(self.launch)


sys.modules[__name__].__class__ = _CallablePackage
