"""Linux's process controls (``prctl``), in one place: die with the parent, a name, reaping.

    die_with_parent(signal.SIGKILL)   # the kernel signals us when our parent ends
    set_name("jit-compile")           # what ps and top show (15 bytes)
    become_subreaper()                # orphaned descendants are re-parented to us

Each answers whether it took effect, and is a no-op answering False elsewhere (not
Linux, no C library). The C function is looked up once, when this module is imported:
``die_with_parent`` may run as a ``preexec_fn``, between ``fork`` and ``exec``, where
loading a library is not safe. A child that runs this module's code from a string
(``python -c``) imports it as ``servegate._os`` like any other caller.
"""

from __future__ import annotations

import ctypes
import signal
import sys
from collections.abc import Callable

__all__ = ["become_subreaper", "die_with_parent", "set_name"]

# prctl options, <linux/prctl.h>
PR_SET_PDEATHSIG = 1
PR_SET_NAME = 15
PR_SET_CHILD_SUBREAPER = 36


def _load() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl: Callable[..., int] = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    return prctl


_PRCTL = _load()


def _prctl(option: int, value: int | bytes) -> bool:
    if _PRCTL is None:
        return False
    return _PRCTL(option, value, 0, 0, 0) == 0


def die_with_parent(sig: int = signal.SIGTERM) -> bool:
    """Have the kernel send ``sig`` to this process when its parent ends, however it ends.

    The signal is tied to the parent *thread* that started this process. A parent that
    ended before this call is not caught: compare ``os.getppid()`` with the parent's PID
    afterwards.
    """
    return _prctl(PR_SET_PDEATHSIG, int(sig))


def set_name(name: str) -> bool:
    """Name this thread (the process, when called from its main thread) for ps and top:
    the first 15 bytes of ``name``."""
    return _prctl(PR_SET_NAME, name.encode()[:15])


def become_subreaper() -> bool:
    """Have orphaned descendants re-parented to this process, rather than to init."""
    return _prctl(PR_SET_CHILD_SUBREAPER, 1)
