"""Turn a byte stream into lines, and keep the last few of them.

Servers write progress bars with ``\\r``, partial lines across reads, binary garbage,
ANSI colours and, now and then, megabytes without a newline. ``LineAssembler`` cuts
the stream into blocks of whole lines (``\\r`` and ``\\n`` both end a line) with the
escape sequences removed, caps an endless line and keeps going, and shows the
unfinished last line on request; ``Tail`` keeps the last lines for the verdict without
splitting every block into Python strings.
"""

from __future__ import annotations

import re
from collections import deque

import numpy as np

__all__ = [
    "MAX_LINE_BYTES",
    "LineAssembler",
    "Segment",
    "Tail",
    "collapse_redraws",
    "decode_line",
    "strip_ansi",
]

# A longer line is cut here; the rest, up to the next line end, is skipped.
MAX_LINE_BYTES = 64 * 1024
# Fewer ``\r`` than this in a block: not a flood of redraws, read every line as it is.
_REDRAW_FLOOD = 32
# A big read is looked at here, at its start and its end, before it is counted whole.
_PEEK = 16 * 1024
# A redraw followed by a segment this short may be followed by blanks only: look closer.
_SHORT_SEGMENT = 16
_TAIL_LINE_CHARS = 2000
# ANSI escape sequences: CSI (colours, cursor moves, erase), OSC (window titles, links)
# and the two-byte escapes. None of them can hold a line end, so whole lines are safe
# to clean one by one.
_ANSI = re.compile(rb"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b\r\n]*(?:\x07|\x1b\\)?|[ -/]*[0-~])")


def strip_ansi(data: bytes) -> bytes:
    """``data`` without ANSI escape sequences (the same object when it has none)."""
    if b"\x1b" not in data:
        return data
    return _ANSI.sub(b"", data)


def decode_line(raw: bytes) -> str:
    """One raw line as text: invalid UTF-8 replaced, line ends and NULs dropped."""
    return raw.decode("utf-8", "replace").strip("\r\n").replace("\x00", "")


def _last_line_end(data: bytes | bytearray, start: int = 0) -> int:
    return max(data.rfind(b"\n", start), data.rfind(b"\r", start))


def _first_line_end(data: bytes | bytearray, start: int = 0, end: int | None = None) -> int:
    stop = len(data) if end is None else end
    nl = data.find(b"\n", start, stop)
    cr = data.find(b"\r", start, nl if nl >= 0 else stop)
    return cr if cr >= 0 else nl


# A run of whole lines: (buffer, start, end). Big reads are scanned in place through
# these bounds instead of being sliced, which would copy every megabyte once more.
Segment = tuple[bytes, int, int]


class LineAssembler:
    """Cut a byte stream into runs of whole lines; join partial lines across reads."""

    def __init__(self, max_line: int = MAX_LINE_BYTES) -> None:
        self._max_line = max_line
        self._partial = bytearray()
        self._skipping = False  # inside an over-long line, dropping bytes to its end

    def feed(self, data: bytes) -> list[Segment]:
        """Take new bytes; return the whole lines they complete, as segments."""
        start = 0
        if self._skipping:
            cut = _first_line_end(data)
            if cut < 0:
                return []
            start = cut + 1
            self._skipping = False
        cut = _last_line_end(data, start)
        if cut < 0:
            self._partial += data[start:] if start else data
            return _clean(self._cap_partial())
        out: list[Segment] = []
        if self._partial:
            first = _first_line_end(data, start, cut + 1)
            joined = bytes(self._partial) + data[start : first + 1]
            self._partial.clear()
            out.append((joined, 0, len(joined)))
            start = first + 1
        if start <= cut:
            out.append((data, start, cut + 1))
        self._partial += data[cut + 1 :]
        return _clean(out + self._cap_partial())

    def flush(self) -> list[Segment]:
        """The unfinished last line, as a line (at end of stream)."""
        if not self._partial:
            return []
        block = bytes(self._partial) + b"\n"
        self._partial.clear()
        return _clean([(block, 0, len(block))])

    def pending(self) -> bytes | None:
        """The unfinished last line so far (None if there is none); it stays unfinished."""
        if not self._partial:
            return None
        return strip_ansi(bytes(self._partial))

    def reset(self) -> None:
        """Forget the partial line (the file was truncated or replaced)."""
        self._partial.clear()
        self._skipping = False

    def _cap_partial(self) -> list[Segment]:
        if len(self._partial) <= self._max_line:
            return []
        block = bytes(self._partial[: self._max_line]) + b"\n"
        self._partial.clear()
        self._skipping = True
        return [(block, 0, len(block))]


def _clean(segments: list[Segment]) -> list[Segment]:
    """The segments with ANSI escape sequences removed (copied only where there are some)."""
    for index, (block, start, end) in enumerate(segments):
        if block.find(b"\x1b", start, end) >= 0:
            clean = _ANSI.sub(b"", block[start:end])
            segments[index] = (clean, 0, len(clean))
    return segments


def collapse_redraws(block: bytes, start: int = 0, end: int | None = None) -> Segment:
    """The whole lines ``block[start:end]`` less the ``\r`` redraws that a later one overwrites.

    A tqdm bar redraws its line with ``\r`` many times a second, and a server may print a
    gigabyte of redraws; a profile's progress rule matches every one of them, and
    classifying each costs some microseconds of Python: 1 GiB took minutes. The screen,
    and the tail (``Tail.last``), show a line's last non-blank segment only, so the
    classifier reads only that too. Found with memchr and counted with numpy, so a block
    with no ``\r`` costs one C scan, and one with few, or no more than its newlines
    (ordinary output, CRLF line ends), two array passes; both come back unchanged.
    """
    end = len(block) if end is None else end
    if block.find(b"\r", start, end) < 0:  # memchr: ordinary output costs nothing more
        return block, start, end
    if end - start > 2 * _PEEK and all(
        block.count(b"\r", lo, lo + _PEEK) <= block.count(b"\n", lo, lo + _PEEK)
        for lo in (start, end - _PEEK)
    ):
        # a big read that neither begins nor ends in a flood: ordinary output with a bar
        # now and then (a flood that long fills the reads in between whole)
        return block, start, end
    data = np.frombuffer(block, dtype=np.uint8, count=end - start, offset=start)
    returns = data == 13
    redraws = int(np.count_nonzero(returns))
    if redraws < _REDRAW_FLOOD:
        return block, start, end
    newlines = data == 10
    if redraws <= int(np.count_nonzero(newlines)):
        # no more redraws than lines: ordinary output with a bar now and then (vLLM's and
        # SGLang's lines between capture bars; CRLF line ends), cheaper read as it is
        # than collapsed (the arrays below cost more than the few lines they would save)
        return block, start, end
    ends = np.flatnonzero(returns | newlines)  # every line end, from start
    if ends.size < 2:
        return block, start, end
    following = np.empty_like(ends)  # where the segment after each line end ends
    following[:-1] = ends[1:]
    following[-1] = ends[-1]  # the block's last line end: nothing follows it here
    # a \r whose next segment is not empty: that segment (or a later one) overwrites it
    over = (data[ends] == 13) & (following > ends + 1)
    for k in np.flatnonzero(over & (following <= ends + _SHORT_SEGMENT)).tolist():
        lo = start + int(ends[k]) + 1
        if not block[lo : start + int(following[k])].strip():
            over[k] = False  # only blanks follow: the screen keeps this one
    gone = np.flatnonzero(over)
    if gone.size < _REDRAW_FLOOD:
        return block, start, end
    seg_start = np.empty_like(ends)  # where each segment begins
    seg_start[0] = 0
    seg_start[1:] = ends[:-1] + 1
    # runs of consecutive overwritten segments: one byte range to leave out each
    breaks = np.flatnonzero(np.diff(gone) != 1)
    first = gone[np.concatenate(([0], breaks + 1))]
    last = gone[np.concatenate((breaks, [gone.size - 1]))]
    pieces: list[bytes] = []
    kept = start
    for lo, hi in zip(
        (seg_start[first] + start).tolist(), (ends[last] + start + 1).tolist(), strict=True
    ):
        pieces.append(block[kept:lo])
        kept = hi
    pieces.append(block[kept:end])
    out = b"".join(pieces)
    return out, 0, len(out)


class Tail:
    """The last ``size`` lines of a stream, fed in blocks of whole lines.

    Each block costs a few ``rfind`` calls: only its last ``size`` lines are kept, as
    raw bytes, and decoded when asked for. A progress bar redrawn with ``\\r`` keeps its
    last state only, so a tail is not three hundred copies of one bar. An unfinished
    last line can be shown provisionally, until the next whole lines replace it.
    """

    def __init__(self, size: int = 300) -> None:
        self.size = size
        self._pieces: deque[tuple[bytes, int]] = deque()  # (whole lines, their count)
        self._count = 0
        self._provisional: bytes | None = None  # the unfinished last line, if shown

    def provisional(self, line: bytes | None) -> None:
        """Show ``line`` (unfinished, no line end) after the kept lines until more come."""
        self._provisional = line

    def add_block(self, block: bytes, start: int = 0, end: int | None = None) -> None:
        """Add whole lines (each ended by ``\\n`` or ``\\r``): ``block[start:end]``."""
        end = len(block) if end is None else end
        self._provisional = None  # these lines include its finished form
        pos = end - 1
        lines = 0
        while lines < self.size:
            found = block.rfind(b"\n", start, pos)
            lines += 1
            if found < 0:
                pos = start - 1
                break
            pos = found
        piece = block[pos + 1 : end]
        self._pieces.append((piece, lines))
        self._count += lines
        while self._pieces and self._count - self._pieces[0][1] >= self.size:
            self._count -= self._pieces.popleft()[1]

    def last(self, n: int | None = None) -> tuple[str, ...]:
        """The last ``n`` lines (all kept lines when None), decoded."""
        out: list[str] = []
        pieces = [piece for piece, _ in self._pieces]
        if self._provisional is not None:
            pieces.append(self._provisional)
        for piece in pieces:
            for raw in piece.split(b"\n"):
                segments = [seg for seg in raw.split(b"\r") if seg.strip()]
                if not segments:
                    continue
                text = decode_line(segments[-1])
                if len(text) > _TAIL_LINE_CHARS:
                    text = text[:_TAIL_LINE_CHARS] + " [...]"
                out.append(text)
        out = out[-self.size :]
        if n is None:
            return tuple(out)
        return tuple(out[-n:]) if n > 0 else ()
