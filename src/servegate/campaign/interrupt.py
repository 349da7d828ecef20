"""Ctrl-C and SIGTERM during a campaign: the first stops cleanly, the second stops now.

A campaign runs for hours; stopping it must never lose what was measured nor leave a
server holding the GPU. The first signal raises ``Interrupted`` in the runner (deferred
until a database write in progress has committed), which stops the server, marks the
attempt and the campaign interrupted and prints the results so far. A second signal
exits at once: the launch layer's keeper kills the server when this process dies, and
SQLite's journal keeps every committed result. What it says about the stop goes to
``notify`` (the command line's progress writes it on stderr); without one, nothing.

While an event loop runs (a load point's requests), the first signal is not raised
where it lands: asyncio's own callbacks are not safe against an exception raised in
their middle. One landing in ``asyncio.gather``'s callback, between its last child's end
and the wakeup of whoever waits on it, left a task that cancelling cannot wake, and
``asyncio.run``'s cleanup waited for it forever. The loop raises it instead, between
two callbacks, from where every task can be cancelled.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

__all__ = ["Interrupted", "Interrupts"]

_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupted(KeyboardInterrupt):
    """The user asked the campaign to stop (Ctrl-C or SIGTERM)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def exit_code(self) -> int:
        """128 + the signal number, as a shell reports a process ended by it."""
        return 128 + self.signum


class Interrupts:
    """Signal handlers for one campaign run; a context manager that restores the old ones."""

    def __init__(self, notify: Callable[[str], None] | None = None) -> None:
        self._notify = notify  # says the stop (from the signal handler: plain writes only)
        self.signum: int | None = None
        self._shield = 0
        self._pending = False
        self._acknowledged = False
        self._previous: dict[int, Any] = {}
        self._unraisable = sys.unraisablehook

    def __enter__(self) -> Interrupts:
        if threading.current_thread() is threading.main_thread():
            for sig in _SIGNALS:
                self._previous[sig] = signal.signal(sig, self._handle)
            self._unraisable = sys.unraisablehook
            sys.unraisablehook = self._unraisable_hook
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        if self._previous:
            sys.unraisablehook = self._unraisable
        self._previous.clear()

    def _unraisable_hook(self, info: Any) -> None:
        # a stop raised while a finalizer ran is dropped by Python; check() delivers it
        # later, so the "Exception ignored" report would only be noise
        if not isinstance(info.exc_value, Interrupted):
            self._unraisable(info)

    @property
    def requested(self) -> bool:
        """True once a stop was asked for."""
        return self.signum is not None

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.signum is not None:
            self._say("\nError: interrupted again; stopping now.\n")
            os._exit(128 + signum)
        self.signum = signum
        self._say(
            "\nStopping: the server is stopped and the results so far are kept "
            "(press Ctrl-C again to stop now).\n"
        )
        if self._shield:
            self._pending = True
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            raise Interrupted(signum) from None
        self._pending = True
        loop.call_soon_threadsafe(self._deliver)

    def _deliver(self) -> None:
        """Raise the stop that a signal left pending while an event loop ran (called by
        that loop between two callbacks); nothing if it was raised or answered already."""
        if self._pending and not self._shield and not self._acknowledged:
            self._pending = False
            assert self.signum is not None  # set by the handler before it scheduled this
            raise Interrupted(self.signum)

    def _say(self, text: str) -> None:
        if self._notify is not None:
            self._notify(text)

    @contextmanager
    def shielded(self) -> Iterator[None]:
        """Defer a first signal until the block (a database write) has finished."""
        self._shield += 1
        try:
            yield
        finally:
            self._shield -= 1
        if not self._shield and self._pending and self.signum is not None:
            self._pending = False
            raise Interrupted(self.signum)

    def check(self) -> None:
        """Raise ``Interrupted`` if a stop was asked for and the runner has not seen it.

        Raising from the signal handler is not enough on its own: Python drops an
        exception raised while a finalizer (``__del__``) runs, so the runner also calls
        this between steps and from the load generator's progress callback.
        """
        if self.signum is not None and not self._acknowledged:
            self._pending = False
            raise Interrupted(self.signum)

    def acknowledge(self) -> None:
        """The runner is stopping: later checks pass, so the cleanup can run."""
        self._acknowledged = True
