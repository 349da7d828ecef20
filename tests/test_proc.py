"""Which process a recorded PID is: a start recorded before the boot time moved still
names its process; another start, a zombie or an ended process does not."""

from __future__ import annotations

import os
import subprocess
import sys

import psutil

from servegate._proc import BOOT_SHIFT_S, same_process, start_ticks


def test_a_start_recorded_before_the_clock_moved_still_names_its_process() -> None:
    """Linux gives the boot time in whole seconds of the wall clock: a start recorded when
    it read one second less (the clock set or slewed since) is the same process."""
    created = psutil.Process().create_time()
    assert same_process(os.getpid(), created)
    assert same_process(os.getpid(), created + 1.0)
    assert same_process(os.getpid(), created - 1.0)


def test_another_start_is_another_process() -> None:
    """A start one clock tick off, or long before (the PID's earlier owner), is not it."""
    created = psutil.Process().create_time()
    tick = 1.0 / os.sysconf("SC_CLK_TCK")
    assert not same_process(os.getpid(), created + tick)
    assert not same_process(os.getpid(), created - 0.5)
    assert not same_process(os.getpid(), created - BOOT_SHIFT_S - 3600.0)


def test_a_zombie_or_an_ended_process_is_not_alive() -> None:
    """A child that has exited but is not reaped yet (a zombie) does not count, nor one
    that is gone."""
    proc = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                            stdin=subprocess.PIPE)  # fmt: skip
    created = psutil.Process(proc.pid).create_time()
    ticks = start_ticks(proc.pid)
    assert same_process(proc.pid, created)
    assert proc.stdin is not None
    proc.stdin.close()
    # wait for the exit without reaping it: the kernel keeps the zombie until wait()
    os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)
    assert psutil.Process(proc.pid).status() == psutil.STATUS_ZOMBIE
    assert start_ticks(proc.pid) == ticks
    assert not same_process(proc.pid, created)
    proc.wait(timeout=30)
    assert not same_process(proc.pid, created)
    assert proc.returncode == 0
