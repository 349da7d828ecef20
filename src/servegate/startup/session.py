"""One plain start (``servegate launch`` / ``wait``) as the command line runs it.

    session = StartSession(engine=..., command=argv, env=extra, via="launch", timeout=t)
    session.timeout_s                      # a number, or --timeout auto resolved
    session.timeout_note()                 # "timeout auto: 412 s (3x ...)", or None
    launch(..., observer=...)              # StartBegan: session.started(tracked)
    startup = session.finish(verdict)      # status line cleared, history written

The command line stays thin: this module holds the status line, the startup record
and the ``--timeout auto`` rule, and never lets the history stop a start.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TextIO

from servegate.errors import UsageError
from servegate.startup import StartupRecord
from servegate.startup.status import StatusLine

if TYPE_CHECKING:
    from servegate.gate.verdict import Verdict
    from servegate.launch.state import Tracked

__all__ = ["AUTO", "StartSession", "startup_telemetry"]

AUTO = "auto"


class StartSession:
    """The startup record and the status line of one start, from before it to its verdict."""

    def __init__(
        self,
        *,
        engine: str,
        command: Sequence[str],
        env: Mapping[str, str] | None,
        via: str,
        timeout: float | str,
        stream: TextIO | None = None,
        warn: Callable[[str], None] = lambda text: None,
    ) -> None:
        self.warn = warn  # says a warning of the start history (the CLI: on stderr)
        self.record = StartupRecord.before(engine=engine, command=command, env=env, via=via)
        self._warnings()
        if timeout == AUTO:
            auto = self.record.auto_timeout()
            if auto is None:
                raise UsageError(
                    "--timeout auto needs a past READY start of this configuration in the "
                    f"start history ({_where()}): pass --timeout SECONDS this first time."
                )
            self.timeout_s = auto.timeout_s
        else:
            self.timeout_s = float(timeout)
        self.status = StatusLine(engine=engine, eta=self.record.eta, stream=stream)
        self.startup: dict[str, Any] | None = None

    def timeout_note(self) -> str | None:
        """Which timeout ``--timeout auto`` chose and why (a progress line); None when
        the timeout was given in seconds."""
        auto = self.record.timeout_auto
        return None if auto is None else f"timeout auto: {auto.describe()}"

    def started(self, tracked: Tracked) -> None:
        """The server runs: follow its log (``launch(on_started=...)``)."""
        self.status.follow(tracked.log_path, tracked.create_time)

    def follow(self, log_path: str | None, started_wall: float | None) -> None:
        """Follow a log someone else's server writes (``wait``)."""
        self.status.follow(log_path, started_wall if started_wall is not None else time.time())

    def finish(self, verdict: Verdict) -> dict[str, Any]:
        """Clear the status line, decide cold or warm, write the history (once)."""
        self.status.stop()
        if self.startup is None:
            self.startup = self.record.finish(
                verdict.to_json(), telemetry=startup_telemetry(verdict)
            )
            self._warnings()
        return self.startup

    def _warnings(self) -> None:
        for text in self.record.take_warnings():
            self.warn(f"servegate: {text}")

    def close(self) -> None:
        """Stop the status line (a start that ended without a verdict)."""
        self.status.stop()

    def note(self) -> str:
        """One line for stderr: cold or warm, page cache, ETA against actual."""
        startup = self.startup or {}
        if startup.get("already_up"):
            return "startup: the server was already up when wait began; not counted in the ETA"
        cold = startup.get("cold")
        parts = ["startup: " + {True: "cold", False: "warm", None: "cold/warm unknown"}[cold]]
        grown = [
            c["name"]
            for c in startup.get("caches", [])
            if c.get("before") and c["after"]["files"] > c["before"]["files"]
        ]
        if grown:
            parts.append("caches grown: " + ", ".join(grown))
        if startup.get("page_cache_pct") is not None:
            parts.append(f"model files {startup['page_cache_pct']:.0f}% in page cache")
        if startup.get("eta_s") is not None:
            parts.append(f"ETA was {startup['eta_s']:.1f}s, took {startup['actual_s']:.1f}s")
        return "; ".join(parts)


def startup_telemetry(verdict: Verdict) -> dict[str, Any] | None:
    """The history row's telemetry: the sampler's summary (every sample, the last one after
    the verdict included), else one from the series; None when nothing was sampled."""
    if verdict.telemetry is not None:
        return verdict.telemetry.to_json()
    if verdict.snapshots:
        from servegate.telemetry.summary import summarize

        return summarize(verdict.snapshots).to_json()
    return None


def _where() -> str:
    from servegate.startup.history import history_path

    return str(history_path())
