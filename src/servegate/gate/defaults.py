"""The gate's time limits by default, defined once (read by the command line without
importing the gate itself).

``launch()`` from Python has no stall limit (``GateOptions.stall_s`` is None): a library
caller chooses one. The command line's ``--stall``, ``wait()`` and the pytest plugin
call a start silent for ``STALL_S`` stuck.
"""

from __future__ import annotations

__all__ = ["STALL_S", "TIMEOUT_S"]

TIMEOUT_S = 900.0  # the hard cap on a start: --timeout, launch(), wait(), the pytest plugin
STALL_S = 300.0  # no new output for this long: TIMEOUT (--stall, wait(), the pytest plugin)
