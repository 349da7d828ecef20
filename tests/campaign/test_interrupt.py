"""Ctrl-C handling of a run: deferred during writes, never lost, handlers restored."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time

import pytest

from servegate.campaign.interrupt import Interrupted, Interrupts


def test_signal_during_a_shielded_write_is_raised_after_it() -> None:
    """A SIGINT inside ``shielded()`` lets the block finish, then raises Interrupted."""
    finished = False
    with Interrupts() as interrupts, pytest.raises(Interrupted) as info, interrupts.shielded():
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.05)
        finished = True
    assert finished
    assert info.value.exit_code == 130


def test_a_dropped_interrupt_is_raised_again_by_check() -> None:
    """If a layer swallows the exception, check() raises it; after acknowledge() it passes."""
    with Interrupts() as interrupts:
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(1)
        except BaseException:  # a layer that swallows everything
            pass
        assert interrupts.requested
        with pytest.raises(Interrupted) as info:
            interrupts.check()
        assert info.value.exit_code == 143
        interrupts.acknowledge()
        interrupts.check()


def test_handlers_are_restored_on_exit() -> None:
    """Leaving the block puts back the signal handlers that were there before."""
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    with Interrupts():
        assert signal.getsignal(signal.SIGINT) is not before[0]
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before


def test_the_stop_is_said_to_notify_only(capfd: pytest.CaptureFixture[str]) -> None:
    """The first signal's sentence goes to ``notify``; without one nothing is written
    (the library never prints; the command line's progress says it on stderr)."""
    said: list[str] = []
    for notify in (None, said.append):
        with Interrupts(notify) as interrupts, pytest.raises(Interrupted), interrupts.shielded():
            os.kill(os.getpid(), signal.SIGINT)
    assert capfd.readouterr() == ("", "")
    assert said == [
        "\nStopping: the server is stopped and the results so far are kept "
        "(press Ctrl-C again to stop now).\n"
    ]


def test_a_stop_inside_an_event_loop_is_raised_between_its_callbacks() -> None:
    """While an event loop runs, the signal is not raised inside the code it lands in
    (asyncio's own callbacks break when it is); the loop raises it at its next turn, and
    ``asyncio.run`` cancels the tasks left and ends."""
    landed: list[str] = []

    async def main() -> None:
        try:
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(10_000):  # the handler runs within these lines
                pass
            landed.append("after")
        except Interrupted:
            landed.append("inside")
            raise
        await asyncio.sleep(60)  # cancelled by asyncio.run's cleanup

    with Interrupts() as interrupts, pytest.raises(Interrupted) as info:
        asyncio.run(main())
    assert landed == ["after"]
    assert interrupts.requested and info.value.exit_code == 130


GATHER_STOP = """
import asyncio, os, signal, sys
from servegate.campaign.interrupt import Interrupted, Interrupts

fired = []

def tracer(frame, event, arg):
    # the signal lands in asyncio.gather's callback, after the child ended and before
    # the gather wakes its waiter: where a campaign's Ctrl-C once hung its load point
    if event == "call" and frame.f_code.co_name == "_done_callback" and not fired:
        fired.append(True)
        os.kill(os.getpid(), signal.SIGINT)
    return None

async def main():
    sys.settrace(tracer)
    await asyncio.gather(asyncio.sleep(0.01))
    await asyncio.sleep(60)

with Interrupts():
    try:
        asyncio.run(main())
    except Interrupted:
        print("stopped", fired)
"""


def test_a_stop_landing_in_a_gather_callback_ends_the_loop() -> None:
    """A Ctrl-C that lands in ``asyncio.gather``'s callback still ends ``asyncio.run``
    (raised there, it left a task nothing could wake, and the cleanup waited forever)."""
    out = subprocess.run(
        [sys.executable, "-c", GATHER_STOP], check=False, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "stopped [True]"
