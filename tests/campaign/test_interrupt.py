"""Ctrl-C handling of a run: deferred during writes, never lost, handlers restored."""

from __future__ import annotations

import os
import signal
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
