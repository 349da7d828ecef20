"""Progress of a campaign on stderr: live on a terminal, plain lines otherwise.

stdout is kept for the results table; everything said while the campaign runs goes to
stderr. On a terminal a status line shows what is happening now (launching, request
counts of the running load point); elsewhere (a log file, CI, ``nohup``) each event is
one plain line, so the log reads well after the fact. ``NO_COLOR`` is respected by rich.
Every line passes ``servegate.redact`` first (inherited secrets, URL credentials).
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

from rich.console import Console
from rich.status import Status
from rich.text import Text

from servegate.redact import Redactor

__all__ = ["CampaignProgress"]


class CampaignProgress:
    """What the runner tells the user while a campaign runs."""

    def __init__(self, stream: TextIO | None = None, *, quiet: bool = False) -> None:
        self._stream = stream if stream is not None else sys.stderr
        self._live = self._stream.isatty() and not quiet
        self._quiet = quiet
        self._console = Console(file=self._stream, highlight=False, soft_wrap=True)
        self._status: Status | None = None
        self._last_update = 0.0
        self._redactor = Redactor.collect()

    # --- events ------------------------------------------------------------------------

    def info(self, message: str) -> None:
        """A plain step: a group starting, a point skipped, a server stopped."""
        self._line(message, style="")

    def good(self, message: str) -> None:
        """Something that went right: READY, a point measured."""
        self._line(message, style="green")

    def warning(self, message: str) -> None:
        """Something worth a look that does not stop the campaign."""
        self._line(f"warning: {message}", style="yellow", always=True)

    def failure(self, message: str, tail: tuple[str, ...] = ()) -> None:
        """A variant failed: its reason, then the last lines of its log."""
        self._line(message, style="bold red", always=True)
        for line in tail:
            self._line(f"    | {line}", style="dim", always=True)

    def activity(self, message: str) -> None:
        """What is happening now (live status line on a terminal; a line otherwise)."""
        if self._quiet:
            return
        if not self._live:
            self._line(message, style="")
            return
        message = self._redactor.text(message)
        if self._status is None:
            self._status = self._console.status(message)
            self._status.start()
        else:
            self._status.update(message)

    def counts(self, message: str) -> None:
        """A request count while a point runs: shown live on a terminal, never logged."""
        if not self._live or self._status is None:
            return
        now = time.monotonic()
        if now - self._last_update >= 0.2:
            self._last_update = now
            self._status.update(self._redactor.text(message))

    def done(self) -> None:
        """End the live status line (before the results are printed)."""
        if self._status is not None:
            self._status.stop()
            self._status = None

    # --- output ------------------------------------------------------------------------

    def _line(self, message: str, *, style: str, always: bool = False) -> None:
        if self._quiet and not always:
            return
        message = self._redactor.text(message)
        if self._live:
            self._console.print(Text(message, style=style))
        else:
            self._stream.write(message + "\n")
            self._stream.flush()
