"""Progress of a campaign on stderr: live on a terminal, plain lines otherwise.

stdout is kept for the results table; everything said while the campaign runs goes to
stderr. On a terminal a status line shows what is happening now (launching, request
counts of the running load point); elsewhere (a log file, CI, ``nohup``) each event is
one plain line, so the log reads well after the fact. ``NO_COLOR`` is respected by rich.
Every line passes ``servegate.redact`` first (inherited secrets, URL credentials).

Before each server start the runner says where the campaign stands and how long it
has left (``campaign: 2/6 starts done, 1/3 variants done; about 4m10s left``): the
start-up ETAs of the starts still to come, from the start history, plus the benchmark
time measured so far in this run per measurement (``TimeLeft``).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TextIO

from rich.console import Console
from rich.status import Status
from rich.text import Text

from servegate._text import printable
from servegate.redact import Redactor

__all__ = ["CampaignProgress", "TimeLeft", "duration"]


def duration(seconds: float) -> str:
    """``41s``, ``4m10s``, ``1h05m``: a time left as one reads it."""
    whole = max(0, round(seconds))
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{whole // 3600}h{whole // 60 % 60:02d}m"


@dataclass(kw_only=True)
class TimeLeft:
    """A campaign's time left: the history ETA of each start still to come (else the
    start-up times measured in this run), plus its measurements at the benchmark time
    per measurement measured in this run."""

    startups: list[float] = field(default_factory=list)  # seconds to a verdict, this run
    bench_s: float = 0.0  # benchmark seconds measured in this run
    bench_tasks: int = 0  # ... over this many measurements

    def started(self, seconds: float) -> None:
        """A start reached its verdict after ``seconds``."""
        self.startups.append(seconds)

    def benched(self, seconds: float, tasks: int) -> None:
        """A started server measured ``tasks`` points in ``seconds``."""
        if tasks > 0:
            self.bench_s += seconds
            self.bench_tasks += tasks

    def estimate(self, upcoming: Sequence[tuple[float | None, int]]) -> float | None:
        """Seconds left for ``upcoming`` starts, each (its history ETA or None, its
        measurements); None while something has nothing to go on yet."""
        total = 0.0
        for eta_s, tasks in upcoming:
            if eta_s is not None:
                total += eta_s
            elif self.startups:
                total += statistics.median(self.startups)
            else:
                return None
            if tasks:
                if not self.bench_tasks:
                    return None
                total += tasks * self.bench_s / self.bench_tasks
        return total


class CampaignProgress:
    """What the runner tells the user while a campaign runs."""

    def __init__(self, stream: TextIO | None = None, *, quiet: bool = False) -> None:
        """Progress on ``stream`` (the command line passes stderr); without one it says
        nothing: the library is silent unless its caller installs a renderer."""
        self._stream = stream
        self._live = stream is not None and stream.isatty() and not quiet
        self._quiet = quiet
        self._console = Console(file=stream, highlight=False, soft_wrap=True)
        self._status: Status | None = None
        self._last_update = 0.0
        self._redactor = Redactor.collect()

    # --- events ------------------------------------------------------------------------

    def emit(self, event: object) -> None:
        """An event of the run (campaign/events.py): the lines said, a round begun, where
        the campaign stands; the rest ignored."""
        from servegate.campaign.events import RoundBegan, Said, Standing, Tone

        match event:
            case RoundBegan():
                self.info(
                    f"round {event.round}: {event.starts} start(s) on the cluster at once, "
                    f"{event.measurements} measurement(s)"
                )
            case Standing(left_s=left_s):
                left = (
                    f"about {duration(left_s)} left"
                    if left_s is not None
                    else "time left known once a start is measured"
                )
                self.info(
                    f"campaign: {event.starts_done}/{event.starts_total} starts done, "
                    f"{event.variants_done}/{event.variants_total} variants done; {left}"
                )
            case Said(tone=Tone.INFO, text=text):
                self.info(text)
            case Said(tone=Tone.GOOD, text=text):
                self.good(text)
            case Said(tone=Tone.WARNING, text=text):
                self.warning(text)
            case Said(tone=Tone.FAILURE, text=text, tail=tail):
                self.failure(text, tail)
            case Said(tone=Tone.ACTIVITY, text=text):
                self.activity(text)
            case Said(tone=Tone.COUNTS, text=text):
                self.counts(text)
            case _:
                pass

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
        if self._quiet or self._stream is None:
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

    def notice(self, text: str) -> None:
        """``text`` as it is, at once (a stop asked for by a signal: said from its handler)."""
        if self._stream is not None:
            self._stream.write(text)
            self._stream.flush()

    def done(self) -> None:
        """End the live status line (before the results are printed)."""
        if self._status is not None:
            self._status.stop()
            self._status = None

    # --- output ------------------------------------------------------------------------

    def _line(self, message: str, *, style: str, always: bool = False) -> None:
        if self._stream is None or (self._quiet and not always):
            return
        message = self._redactor.text(message)
        # a control character in a relayed line or an older name cannot rewrite the screen
        message = "\n".join(printable(part, keep_tab=True) for part in message.split("\n"))
        if self._live:
            self._console.print(Text(message, style=style))
        else:
            self._stream.write(message + "\n")
            self._stream.flush()
