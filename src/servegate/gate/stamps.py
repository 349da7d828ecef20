"""When a log line was written, from the timestamp the engine printed on it.

The gate places a phase line at the moment it reads it, which is right for a live
server (the line arrives milliseconds after it was written) and wrong for a backlog:
``wait`` on a server that is already up reads minutes of log at once. Engines stamp
their lines, so a line read well after its own stamp is placed at the stamp:

    vLLM       INFO 12-02 18:41:58 [file.py:12] ...          (local time, no year)
    SGLang     [2026-12-02 18:41:58 TP0] ...                 (local time)
    TGI        2026-12-02T18:41:58.123456Z  INFO ...          (UTC)
    TRT-LLM    [12/02/2026-18:41:58] [TRT-LLM] [I] ...       (local time)
    llama.cpp  0.01.234.567 I ...  (--log-timestamps: minutes.seconds.ms.us since start)
"""

from __future__ import annotations

import calendar
import re
import time
from dataclasses import dataclass

__all__ = ["LATE_S", "LineClock", "stamp_of"]

# A line read this long after its stamp was not read live: its stamp places it better.
# Stamps have 1 s resolution at worst, and a live line arrives within milliseconds.
LATE_S = 2.0
_FUTURE_SLACK_S = 1.0  # a stamp this far ahead of the reading is not this machine's clock
_BEFORE_START_SLACK_S = 1.0  # nor one from before the process started
_SEARCH_CHARS = 100  # stamps sit at the start of a line, after a short prefix at most

_STAMP = re.compile(
    # ISO-like: SGLang, TGI, most Python and Rust loggers
    r"(?P<Y>\d{4})-(?P<m>\d\d)-(?P<d>\d\d)[ T](?P<H>\d\d):(?P<M>\d\d):(?P<S>\d\d)"
    r"(?P<f>[.,]\d{1,9})?(?P<z>Z|[+-]\d\d:?\d\d)?"
    # vLLM: level, then month-day and time
    r"|\b(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) (?P<vm>\d\d)-(?P<vd>\d\d) "
    r"(?P<vH>\d\d):(?P<vM>\d\d):(?P<vS>\d\d)(?P<vf>\.\d{1,9})?"
    # TensorRT-LLM
    r"|\[(?P<tm>\d\d)/(?P<td>\d\d)/(?P<tY>\d{4})-(?P<tH>\d\d):(?P<tM>\d\d):(?P<tS>\d\d)\]"
    # llama.cpp, relative to its start
    r"|^(?P<lmin>\d+)\.(?P<lsec>\d\d)\.(?P<lms>\d{3})\.(?P<lus>\d{3}) [IWEDT] "
)


def _local(fields: list[int], frac: str | None) -> float:
    """Local time (year, month, day, hour, minute, second) plus a fraction, as epoch."""
    year, month, day, hour, minute, second = fields
    epoch = time.mktime((year, month, day, hour, minute, second, 0, 0, -1))
    return epoch + (float(frac.replace(",", ".")) if frac else 0.0)


def stamp_of(line: str, *, now_wall: float | None = None) -> tuple[float, bool] | None:
    """The stamp on ``line``: (epoch seconds, False), or (seconds since start, True).

    None when the line carries no stamp this module knows. A vLLM stamp has no year:
    the year of ``now_wall`` is taken, or the one before if that would be in the future.
    """
    match = _STAMP.search(line, 0, _SEARCH_CHARS)
    if match is None:
        return None
    g = match.groupdict()
    try:
        if g["Y"] is not None:
            fields = [int(g[k]) for k in ("Y", "m", "d", "H", "M", "S")]
            zone = g["z"]
            if zone is None:
                return _local(fields, g["f"]), False
            epoch = float(calendar.timegm((*fields, 0, 0, 0)))
            if g["f"]:
                epoch += float(g["f"].replace(",", "."))
            if zone != "Z":
                sign = -1 if zone[0] == "-" else 1
                digits = zone[1:].replace(":", "")
                epoch -= sign * (int(digits[:2]) * 3600 + int(digits[2:]) * 60)
            return epoch, False
        if g["vm"] is not None:
            now = time.time() if now_wall is None else now_wall
            year = time.localtime(now).tm_year
            fields = [int(g[k]) for k in ("vm", "vd", "vH", "vM", "vS")]
            epoch = _local([year, *fields], g["vf"])
            if epoch > now + 86400:  # written last December, read in January
                epoch = _local([year - 1, *fields], g["vf"])
            return epoch, False
        if g["tY"] is not None:
            fields = [int(g[k]) for k in ("tY", "tm", "td", "tH", "tM", "tS")]
            return _local(fields, None), False
        seconds = int(g["lmin"]) * 60 + int(g["lsec"]) + int(g["lms"]) / 1e3 + int(g["lus"]) / 1e6
        return seconds, True
    except (OverflowError, ValueError):
        return None  # a date that does not exist: not a stamp after all


@dataclass(frozen=True, slots=True, kw_only=True)
class LineClock:
    """Place log lines by their own stamps, in seconds since the gate's start."""

    started_wall: float  # epoch seconds of the gate's time origin
    process_start: bool  # the origin is the server process's start (relative stamps count)

    def place(self, line: str, now: float) -> float | None:
        """When ``line``, read at ``now``, was written, if it was not read live; else None.

        A stamp that cannot be this machine's clock for this server (ahead of the
        reading, or before the process started) is ignored, e.g. a container's UTC.
        """
        stamp = stamp_of(line, now_wall=self.started_wall + now)
        if stamp is None:
            return None
        value, relative = stamp
        if relative and not self.process_start:
            return None  # seconds since a start this gate does not know
        at = value if relative else value - self.started_wall
        if at > now + _FUTURE_SLACK_S:
            return None
        if self.process_start and at < -_BEFORE_START_SLACK_S:
            return None
        if now - at <= LATE_S:
            return None  # read live: the reading is the more precise time
        return at
