"""Which process a recorded PID is, by start times that survive a change of the clock.

A record keeps a process's PID and its start (psutil's ``create_time``) so that a PID
reused by a later process is not taken for it. psutil computes that start as the
process's clock ticks since boot plus the boot time, and Linux gives the boot time
(``btime`` in /proc/stat) in whole seconds of the wall clock: when the clock is set or
slewed across a second, every later reading of the same process's start moves by one
second. Compared within milliseconds, a running server would then count as gone and be
left running by ``stop``, or a live runner's lock be taken. Here the recorded start is
compared with the process's ticks since boot, which never change; only the boot time it
was recorded with may differ, by whole seconds.
"""

from __future__ import annotations

import os

import psutil

__all__ = ["same_process", "start_ticks"]

BOOT_SHIFT_S = 2  # how far (whole seconds) the boot time may have moved since a start was recorded
_ROUNDING_S = 0.005  # a start recorded as ticks / rate + whole seconds, up to float rounding
_TOLERANCE_S = 0.05  # where /proc cannot be read: psutil's starts compared directly


def _stat(pid: int) -> list[str]:
    """The fields of /proc/PID/stat after the command's name (state first)."""
    with open(f"/proc/{pid}/stat", "rb") as stream:
        data = stream.read()
    return data[data.rindex(b")") + 2 :].decode().split()


def start_ticks(pid: int) -> int:
    """The process's start in clock ticks since boot (Linux); it never changes.

    Raises:
        OSError: no such process (or no /proc).
    """
    return int(_stat(pid)[19])


def same_process(pid: int, created: float) -> bool:
    """Whether ``pid`` is still the process that started at ``created`` (psutil's
    ``create_time`` when it was recorded), and not a zombie."""
    try:
        fields = _stat(pid)
    except (OSError, ValueError, IndexError):
        return _same_by_psutil(pid, created) if not os.path.isdir("/proc/self") else False
    if fields[0] == "Z":
        return False
    boot = created - int(fields[19]) / os.sysconf("SC_CLK_TCK")  # the boot time it used
    return (
        abs(boot - round(boot)) < _ROUNDING_S
        and abs(round(boot) - psutil.boot_time()) <= BOOT_SHIFT_S
    )


def _same_by_psutil(pid: int, created: float) -> bool:
    try:
        proc = psutil.Process(pid)
        return (
            abs(proc.create_time() - created) < _TOLERANCE_S
            and proc.status() != psutil.STATUS_ZOMBIE
        )
    except psutil.Error:
        return False
