"""Read a server's log as it grows: fatal lines, ready lines, phases, the cause.

``LogWatcher.feed(bytes, now)`` takes whatever the pipe or file gave and returns the
decisive lines in it (fatal, ready, or a recovery line that withdraws a held fatal
one: ``Signature.withdrawn_by``). It never looks at a line twice and keeps only a
bounded tail, so memory stays flat whatever the log's size. A fatal pattern found in a
traceback's source line (``raise RuntimeError(f"NCCL error: ...")``) is not decisive:
the exception line that follows is. ``cause()`` picks, when a verdict needs it, the
line that says what failed (gate/cause.py).
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from servegate.engines.profile import EngineProfile, Progress, Signature
from servegate.errors import UsageError
from servegate.gate.cause import Cause, exception_text, explain, is_source, select_cause
from servegate.gate.lines import LineAssembler, Tail, collapse_redraws, decode_line
from servegate.gate.normal import Normal, normalise
from servegate.gate.scan import MIN_ANCHOR, Prefilter, Weights, line_bounds, required_literal
from servegate.gate.verdict import PhaseProgress, PhaseSpan

__all__ = [
    "LineHit",
    "LogWatcher",
    "PhaseTracker",
    "Rules",
    "compile_user_pattern",
    "parse_amount",
    "withdrawn",
]

_TRACEBACK = r"Traceback \(most recent call last\)"
_CHAINED = ("During handling of the above exception", "The above exception was the direct cause")
_TRACEBACK_SCAN_LINES = 400
# clock times, dates, durations and rates: what changes in a heartbeat line that makes
# no progress ("Waiting for shard to be ready...", a progress bar stuck at 3/7)
_TIMEISH = re.compile(
    rb"\d{4}-\d\d-\d\d|\d+:\d\d(?::\d\d)?(?:[.,]\d+)?|\d+(?:\.\d+)?\s*(?:it/s|s/it|ms|s)\b|\?it/s"
)
_RECENT_LINES = 8
# a block with an anchor candidate every _BUSY_BYTES bytes or less (and more than
# _BUSY_MIN of them) is a flood: each key's first and last lines are read (scan.thin)
_BUSY_BYTES = 256
_BUSY_MIN = 64
_SCALE = {"": 1.0, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18}


# a failure line that says the engine will try again (not advice: "Retry with ...")
_WILL_RETRY = re.compile(r"\bretrying\b|\bwill retry\b|\btrying again\b", re.IGNORECASE)


def parse_amount(text: str) -> float:
    """A tqdm count as a number: ``"4"``, ``"2.25G"`` (tqdm's SI suffixes) -> float."""
    text = text.strip()
    suffix = text[-1:] if text[-1:] in _SCALE and not text[-1:].isdigit() else ""
    return float(text[: len(text) - len(suffix)]) * _SCALE[suffix]


def compile_user_pattern(pattern: str, flag: str) -> re.Pattern[str]:
    """Compile a ``--ready`` / ``--crash`` pattern; UsageError naming the flag if invalid."""
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise UsageError(
            f"invalid {flag} regular expression {pattern!r} ({exc}): fix it."
        ) from None


@dataclass(frozen=True, slots=True, kw_only=True)
class LineHit:
    """A decisive log line: ``fatal`` (with its signature), ``ready`` or ``recover``.

    A ``recover`` hit matched ``withdraws``: the ``withdrawn_by`` pattern of one or more
    signatures, whose earlier hits it takes back.
    """

    what: str  # "fatal" | "ready" | "recover"
    line: str
    signature: Signature | None = None
    withdraws: str | None = None
    before_bind: bool = False  # a ready line printed before the port is bound


def withdrawn(signature: Signature, hit: LineHit) -> bool:
    """True when ``hit`` is a recovery line that takes back a hit of ``signature``."""
    return (
        hit.what == "recover"
        and signature.withdrawn_by is not None
        and signature.withdrawn_by == hit.withdraws
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class _Rule:
    pattern: re.Pattern[str]
    action: str  # fatal | ready | recover | start | end | progress | traceback
    name: str = ""  # phase name; for recover: the withdrawn_by pattern
    signature: Signature | None = None
    progress: Progress | None = None
    # the pattern as searched in the line as printed, before it is normalised: without
    # a leading ``^`` (a prefix may come first), so it finds every line the pattern can
    loose: re.Pattern[str] = field(init=False)
    # a literal every match holds (None: none known): ``in`` rules a line out faster
    # than a search, which matters on lines a progress bar redraws thousands of times
    literal: str | None = field(init=False)

    def __post_init__(self) -> None:
        loose = self.pattern
        if loose.pattern.startswith("^"):
            loose = re.compile(loose.pattern[1:], loose.flags)
        object.__setattr__(self, "loose", loose)
        object.__setattr__(self, "literal", required_literal(loose.pattern))


class Rules:
    """A profile's patterns plus the user's, compiled and split into fast and slow sets."""

    def __init__(
        self,
        profile: EngineProfile,
        *,
        ready: Sequence[str] = (),
        crash: Sequence[str] = (),
    ) -> None:
        rules: list[_Rule] = []
        for text in crash:
            signature = Signature(
                pattern=text,
                kind="signature",
                title=f"log matched --crash {text!r}",
                hint="see the matched line and the tail",
            )
            rules.append(
                _Rule(
                    pattern=compile_user_pattern(text, "--crash"),
                    action="fatal",
                    signature=signature,
                )
            )
        rules.extend(
            _Rule(pattern=re.compile(sig.pattern), action="fatal", signature=sig)
            for sig in profile.fatal
        )
        # one rule per distinct recovery pattern, whatever number of signatures name it
        recoveries = dict.fromkeys(
            sig.withdrawn_by for sig in profile.fatal if sig.withdrawn_by is not None
        )
        rules.extend(
            _Rule(pattern=re.compile(text), action="recover", name=text) for text in recoveries
        )
        rules.extend(
            _Rule(pattern=compile_user_pattern(t, "--ready"), action="ready") for t in ready
        )
        rules.extend(
            _Rule(
                pattern=re.compile(t),
                action="ready",
                name="before-bind" if t in profile.ready_before_bind else "",
            )
            for t in profile.ready_lines
        )
        for phase in profile.phases:
            rules.extend(
                _Rule(pattern=re.compile(t), action="end", name=phase.name) for t in phase.end
            )
            rules.extend(
                _Rule(pattern=re.compile(t), action="start", name=phase.name) for t in phase.start
            )
        rules.extend(
            _Rule(pattern=re.compile(spec.pattern), action="progress", progress=spec)
            for spec in profile.progress
        )
        rules.append(_Rule(pattern=re.compile(_TRACEBACK), action="traceback"))
        # every fatal rule in priority order: the first that matches a line names it
        self.fatal: tuple[tuple[re.Pattern[str], Signature], ...] = tuple(
            (rule.pattern, rule.signature)
            for rule in rules
            if rule.action == "fatal" and rule.signature is not None
        )
        # lines that show the engine moved on (a phase opens, a ready line): cause()
        # ignores errors printed before the last of them (progress bars do not count:
        # another rank may go on drawing one after this rank failed)
        self.progress_marks: tuple[re.Pattern[str], ...] = tuple(
            rule.pattern for rule in rules if rule.action in ("start", "ready")
        )
        # the profile's hint for each kind (its first specific signature of that kind
        # whose hint is not about its own line alone), for a cause whose words name a
        # kind that no signature of the line named
        self.hints: dict[str, str] = {}
        for sig in profile.fatal:
            if not sig.wrapper and not sig.narrow:
                self.hints.setdefault(sig.kind, sig.hint)
        # what every match of each pattern holds ("" when nothing is known), by pattern
        self.literals: dict[str, str] = {rule.pattern.pattern: rule.literal or "" for rule in rules}
        # the recovery patterns by their text: cause() skips the lines they took back
        self.recoveries: dict[str, re.Pattern[str]] = {
            rule.name: rule.pattern for rule in rules if rule.action == "recover"
        }
        fast: list[_Rule] = []
        slow: list[_Rule] = []
        anchors: list[bytes] = []
        for rule in rules:
            literal = required_literal(rule.pattern.pattern)
            encoded = literal.encode() if literal else b""
            if len(encoded) >= MIN_ANCHOR:
                anchors.append(encoded)
                fast.append(rule)
            else:
                slow.append(rule)
        self.fast: tuple[_Rule, ...] = tuple(fast)
        self.slow: tuple[_Rule, ...] = tuple(slow)
        self.prefilter = Prefilter(anchors)
        # slow rules are searched over the whole decoded block, one by one
        self.slow_blocks: tuple[tuple[re.Pattern[str], _Rule], ...] = tuple(
            (re.compile(rule.pattern.pattern, rule.pattern.flags | re.MULTILINE), rule)
            for rule in slow
        )


class PhaseTracker:
    """Startup phases as they open and close, in seconds since the gate started, with
    the progress the engine printed inside each (the last i/N per unit)."""

    def __init__(self) -> None:
        self._spans: list[_Span] = []
        self._current: int | None = None
        self.changes = 0  # bumped on every open, close or progress: for live displays

    def start(self, name: str, t: float) -> bool:
        """Open phase ``name`` (closing the current one); False if it is already open."""
        if self._current is not None:
            if self._spans[self._current].name == name:
                return False
            self._spans[self._current].end = t
        self._spans.append(_Span(name, t))
        self._current = len(self._spans) - 1
        self.changes += 1
        return True

    def end(self, name: str, t: float) -> bool:
        """Close the open phase ``name``; False if it is not open."""
        for index in range(len(self._spans) - 1, -1, -1):
            span = self._spans[index]
            if span.name == name and span.end is None:
                span.end = t
                if index == self._current:
                    self._current = None
                self.changes += 1
                return True
        return False

    def progress(self, spec: Progress, match: re.Match[str], t: float, *, weight: int = 1) -> None:
        """Record a progress line: in its phase (opened if new), or in the open one
        (``weight``: how many lines of a flood this one stands for, for a count)."""
        span = self._span_for(spec, t)
        if span is None:
            return
        groups = match.groupdict()
        previous = span.progress.get(spec.unit)
        if spec.count or groups.get("done") is None:
            done = (previous.done if previous is not None else 0.0) + weight
            total = None
        else:
            try:
                done = parse_amount(groups["done"])
                total = parse_amount(groups["total"]) if groups.get("total") else None
            except ValueError:
                return
        span.progress.pop(spec.unit, None)  # the latest unit goes last
        span.progress[spec.unit] = PhaseProgress(done=done, total=total, unit=spec.unit)
        self.changes += 1

    def _span_for(self, spec: Progress, t: float) -> _Span | None:
        current = self._spans[self._current] if self._current is not None else None
        if spec.phase is None:
            if current is not None:
                return current
            if spec.opens is None:
                return None
            self.start(spec.opens, t)
            return self._spans[-1]
        if current is not None and current.name == spec.phase:
            return current
        for span in reversed(self._spans):
            if span.name == spec.phase:
                return span  # a bar's last redraw after its phase closed
        self.start(spec.phase, t)
        return self._spans[-1]

    def current(self) -> PhaseSpan | None:
        """The open phase (its end None), or None when none is open."""
        if self._current is None:
            return None
        return self._spans[self._current].freeze(None)

    def describe(self) -> str:
        """Where startup is: ``during X``, ``after X`` or ``before any known phase``."""
        if self._current is not None:
            return f"during {self._spans[self._current].name}"
        if self._spans:
            return f"after {self._spans[-1].name}"
        return "before any known phase"

    def spans(self, now: float | None = None) -> tuple[PhaseSpan, ...]:
        """All phases seen; open ones end at ``now`` when given."""
        return tuple(span.freeze(now) for span in self._spans)


class _Span:
    """A phase being tracked (mutable until frozen into a PhaseSpan)."""

    __slots__ = ("end", "name", "progress", "start")

    def __init__(self, name: str, start: float) -> None:
        self.name = name
        self.start = start
        self.end: float | None = None
        self.progress: dict[str, PhaseProgress] = {}  # unit -> last progress, latest last

    def freeze(self, now: float | None) -> PhaseSpan:
        end = self.end if self.end is not None else now
        return PhaseSpan(
            name=self.name,
            start_s=round(self.start, 3),
            end_s=None if end is None else round(end, 3),
            progress=self.shown(),
        )

    def shown(self) -> PhaseProgress | None:
        """The progress to show: the latest with a known total, else the latest."""
        values = list(self.progress.values())
        for value in reversed(values):
            if value.total is not None:
                return value
        return values[-1] if values else None


class LogWatcher:
    """Follow a log's bytes: classify the interesting lines, track phases, keep a tail."""

    def __init__(self, rules: Rules, *, tail_lines: int = 300) -> None:
        self.rules = rules
        self.tail = Tail(tail_lines)
        self.phases = PhaseTracker()
        self.bytes_seen = 0
        # the exception line that ended the latest traceback (kept beyond the tail)
        self._traceback_cause: Cause | None = None
        self._cause: tuple[Cause | None] | None = None  # cause() until the tail changes
        self.ready_line: str | None = None  # first ready line seen
        self.recovered = False  # a recovery line was seen: cause() skips what it took back
        self._assembler = LineAssembler()
        self._traceback_lines = 0  # lines left to scan for a traceback's last line
        self.novel_blocks = 0  # blocks that brought something new (progress)
        self._recent: deque[bytes] = deque(maxlen=_RECENT_LINES)
        # when a phase line was written, given the line and when it was read; the gate
        # swaps in one that reads the engine's own stamps (for a backlog read at once)
        self.line_time: Callable[[str, float], float] = _as_read

    def feed(self, data: bytes, now: float) -> list[LineHit]:
        """Take new bytes read at ``now`` (seconds since start); return decisive lines."""
        self.bytes_seen += len(data)
        hits: list[LineHit] = []
        for block, start, end in self._assembler.feed(data):
            hits += self._block(block, start, end, now)
        return hits

    def finish(self, now: float) -> list[LineHit]:
        """End of stream: the unfinished last line counts as a line."""
        hits: list[LineHit] = []
        for block, start, end in self._assembler.flush():
            hits += self._block(block, start, end, now)
        return hits

    def reset(self) -> None:
        """The file was truncated or replaced: drop the partial line."""
        self._assembler.reset()

    def peek(self, now: float) -> list[LineHit]:
        """Match the unfinished last line as a line, and show it in the tail.

        For a server that printed its last line without a line end and went quiet. The
        line stays unfinished: once its end comes, the whole line replaces it.
        """
        pending = self._assembler.pending()
        if pending is None:
            return []
        self.tail.provisional(pending)
        self._cause = None  # the tail changed without new bytes
        hits: list[LineHit] = []
        self._classify(decode_line(pending), self.rules.fast + self.rules.slow, now, hits)
        return hits

    def _block(self, block: bytes, start: int, end: int, now: float) -> list[LineHit]:
        """Process the whole lines ``block[start:end]`` (scanned in place, not copied)."""
        self._cause = None
        # a flood of \r redraws is read as the screen shows it: each line's last state
        block, start, end = collapse_redraws(block, start, end)
        self.tail.add_block(block, start, end)
        self._note_novelty(block, start, end)
        hits: list[LineHit] = []
        traceback_end = -1
        if self._traceback_lines:
            self._scan_traceback(block, start, end)
        prefilter = self.rules.prefilter
        candidates = prefilter.candidates(block, start, end)
        weights: Weights = {}
        busy = sum(len(found) for found in candidates)
        if busy > _BUSY_MIN and busy * _BUSY_BYTES > end - start:
            # a flood of lines that each hold an anchor (progress printed line by line):
            # classifying every one costs some microseconds of Python each
            candidates, weights = prefilter.thin(block, candidates)
        heavy = sorted(weights)
        for line_start, line_end in prefilter.lines(block, start, end, candidates):
            line = decode_line(block[line_start:line_end])
            weight = 1
            if heavy:  # the lines this one stands for: a count of progress counts them
                at = bisect_left(heavy, line_start)
                inside = heavy[at : bisect_right(heavy, line_end)]
                weight = max((weights[offset] for offset in inside), default=1)
            if self._classify(line, self.rules.fast, now, hits, weight=weight):
                traceback_end = line_end + 1
        if self.rules.slow_blocks:
            text = block[start:end].decode("utf-8", "replace").replace("\r", "\n")
            for pattern, rule in self.rules.slow_blocks:
                for match in pattern.finditer(text):
                    s = text.rfind("\n", 0, match.start()) + 1
                    e = text.find("\n", match.end())
                    line = text[s : e if e >= 0 else len(text)]
                    self._classify(line, (rule,), now, hits)
        if traceback_end >= 0:
            self._traceback_lines = _TRACEBACK_SCAN_LINES
            self._scan_traceback(block, traceback_end, end)
        return hits

    def _note_novelty(self, block: bytes, start: int, end: int) -> None:
        """Count the block as progress unless it only repeats a recent heartbeat line."""
        last = end - 1
        line_start = max(block.rfind(b"\n", start, last), block.rfind(b"\r", start, last)) + 1
        line_start = max(line_start, start)
        # many lines at once are progress, whatever they say
        pos, lines = line_start - 1, 0
        while lines <= _RECENT_LINES and pos >= start:
            pos = block.rfind(b"\n", start, pos)
            lines += 1
        if lines > _RECENT_LINES:
            self.novel_blocks += 1
            self._recent.clear()
            return
        key = _TIMEISH.sub(b"#", block[line_start:last].strip())
        if key in self._recent:
            return
        self._recent.append(key)
        self.novel_blocks += 1

    def cause(self) -> Cause | None:
        """The line that says what failed, from the tail (or the latest traceback)."""
        if self._cause is not None:
            return self._cause[0]
        lines: Sequence[str] = self.tail.last()
        if self.recovered:
            lines = _without_withdrawn(lines, self.rules)
        found = select_cause(
            lines,
            self.rules.fatal,
            progress=self.rules.progress_marks,
            hints=self.rules.hints,
            literals=self.rules.literals,
        )
        if found is None:
            found = self._traceback_cause
        self._cause = (found,)
        return found

    def explain(self, signature: Signature, line: str) -> Cause | None:
        """The line before ``line`` (a hit of ``signature``) that explains it, if the
        signature has ``explained_by`` and the tail holds one, or, for a ``rooted``
        signature, the root that the cause's rule finds above it."""
        if signature.explained_by is None and not signature.rooted:
            return None
        lines = self.tail.last()
        hit = line.strip()
        cut = next((n for n in range(len(lines) - 1, -1, -1) if lines[n].strip() == hit), None)
        if signature.rooted and cut is not None:
            # a hit that announces its detail on the next line ("JSON schema conversion
            # failed:") is read with that line, when the tail already holds it
            end = cut + 2 if hit.endswith(":") else cut + 1
            found = select_cause(
                lines[:end],
                self.rules.fatal,
                progress=self.rules.progress_marks,
                hints=self.rules.hints,
                literals=self.rules.literals,
            )
            if found is not None and (found.line != hit or found.kind != signature.kind):
                # the root above, or the kind the hit's own message names; but a fetch of
                # the model that failed before the load began (llama.cpp's -hf: "get_repo_
                # commit: error: HTTPLIB failed", then a loader with no file) is the root
                # of what the load says, though the engine moved on past it
                fetched = explain(lines[:cut], signature, self.rules.hints)
                if fetched is not None and fetched.kind == "download":
                    return fetched
                return found
        return explain(lines[:cut], signature, self.rules.hints)

    @property
    def last_error(self) -> str | None:
        """The cause's text without logger prefixes (for a verdict's reason), or None."""
        cause = self.cause()
        return None if cause is None else cause.text[:500]

    @property
    def cause_line(self) -> str | None:
        """The cause's line as the server printed it (for ``matched_line``), or None."""
        cause = self.cause()
        return None if cause is None else cause.line

    def _classify(
        self,
        line: str,
        rules: Sequence[_Rule],
        now: float,
        hits: list[LineHit],
        *,
        weight: int = 1,
    ) -> bool:
        """Apply every rule to one line; True when it opens a traceback.

        A rule is searched in the line as printed (``_Rule.loose``: a superset of what
        it finds in the message). The line is normalised (gate/normal.py) only when that
        can change the answer: a fatal rule matched (is it a traceback's source line,
        once the wrappers are off?), an anchored pattern matched without its anchor, or
        the line is JSON (it ends with ``}``), which is always read as its message. So
        the lines a progress bar redraws cost what they cost before.
        """
        traceback = False
        source: bool | None = None  # is the line a traceback's frame or source line?
        normal: Normal | None = None
        structured = line.rstrip().endswith("}")
        for rule in rules:
            if structured:
                if normal is None:
                    normal = normalise(line)
                match = rule.pattern.search(normal.body)
            else:
                literal = rule.literal
                if literal is not None and literal not in line:
                    continue
                match = rule.loose.search(line)
                if match is None:
                    continue
                if rule.action == "fatal" or rule.loose is not rule.pattern:
                    if normal is None:
                        normal = normalise(line)
                    found = rule.pattern.search(normal.body)
                    if found is not None or rule.loose is not rule.pattern:
                        match = found  # else a pattern that spans the prefix: as printed
            if match is None:
                continue
            if rule.action == "fatal":
                assert normal is not None
                if source is None:
                    source = is_source(normal)
                if source:
                    continue  # the exception line after it says it, and is quoted
                if _WILL_RETRY.search(normal.body) is not None:
                    # "... does not appear to have a file named ..., retrying 1 of 2": the
                    # engine tries again; the try that fails for good says so again
                    continue
                if not _repeated(hits, "fatal", line):
                    hits.append(LineHit(what="fatal", line=line, signature=rule.signature))
            elif rule.action == "ready":
                if self.ready_line is None:
                    self.ready_line = line
                if not any(hit.what == "ready" and hit.line == line for hit in hits):
                    held = rule.name == "before-bind"
                    hits.append(LineHit(what="ready", line=line, before_bind=held))
            elif rule.action == "recover":
                self.recovered = True
                if not _repeated(hits, "recover", line, rule.name):
                    hits.append(LineHit(what="recover", line=line, withdraws=rule.name))
            elif rule.action == "end":
                self.phases.end(rule.name, self.line_time(line, now))
            elif rule.action == "start":
                self.phases.start(rule.name, self.line_time(line, now))
            elif rule.action == "progress":
                assert rule.progress is not None
                self.phases.progress(rule.progress, match, self.line_time(line, now), weight=weight)
            else:
                traceback = True
        return traceback

    def _scan_traceback(self, block: bytes, pos: int, end: int) -> None:
        """Look for the exception line that ends a traceback, in ``block[pos:end]``."""
        while self._traceback_lines and pos < end:
            line_start, line_end = line_bounds(block, pos, pos, end)
            pos = line_end + 1
            self._traceback_lines -= 1
            line = decode_line(block[line_start:line_end])
            if not line.strip() or line.lstrip().startswith(_CHAINED):
                continue
            text = exception_text(line)
            if text is not None:
                self._traceback_cause = Cause(line=line.strip(), text=text)
                self._traceback_lines = 0


def _repeated(hits: Sequence[LineHit], what: str, line: str, withdraws: str | None = None) -> bool:
    """True when ``line`` is already a ``what`` hit of this block, since the last hit of
    the other kind (fatal, recover): a failure after its recovery counts again."""
    other = "recover" if what == "fatal" else "fatal"
    for hit in reversed(hits):
        if hit.what == what and hit.line == line and hit.withdraws == withdraws:
            return True
        if hit.what == other:
            return False
    return False


def _without_withdrawn(lines: Sequence[str], rules: Rules) -> Sequence[str]:
    """``lines`` less those whose signature a recovery line after them takes back."""
    seen: set[str] = set()  # recovery patterns matched by a later line
    kept: list[str] = []
    for line in reversed(lines):
        seen.update(text for text, pattern in rules.recoveries.items() if pattern.search(line))
        if seen:
            signature = next((sig for pattern, sig in rules.fatal if pattern.search(line)), None)
            if signature is not None and signature.withdrawn_by in seen:
                continue
        kept.append(line)
    kept.reverse()
    return kept


def _as_read(line: str, now: float) -> float:
    return now


def iter_lines(block: bytes) -> Iterator[str]:
    """Every line of a block, decoded (for tests and small inputs)."""
    for raw in block.replace(b"\r", b"\n").split(b"\n"):
        if raw:
            yield decode_line(raw)
