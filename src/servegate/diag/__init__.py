"""Where a server is stuck: stack dumps of its whole process tree.

    from servegate.diag import dump_tree
    stacks = dump_tree(pid)
    stacks.summary            # "12 of 16 processes in ncclCommInitRank"

Python processes are read with py-spy (``pip install 'servegate[diag]'``); every
process also gets its state and kernel wait channel from /proc. See docs/gate.md,
"Stack dumps".
"""

from __future__ import annotations

from servegate.diag.dump import INSTALL_HINT, PTRACE_HINT, dump_pids, dump_tree, is_python, py_spy
from servegate.diag.stacks import Frame, ProcessStack, Stacks, ThreadStack, summarise

__all__ = [
    "INSTALL_HINT",
    "PTRACE_HINT",
    "Frame",
    "ProcessStack",
    "Stacks",
    "ThreadStack",
    "dump_pids",
    "dump_tree",
    "is_python",
    "py_spy",
    "summarise",
]
