"""Find the few interesting lines in a fast log without looking at every line in Python.

A log can grow at hundreds of MB/s; a regular expression per line, or even one big
alternation over the block, runs at about 50 MB/s in CPython. Every profile pattern
contains a literal of at least seven bytes, and any occurrence of such a literal covers
a 4-byte word aligned to a multiple of four. So the block is read as an array of
32-bit words, each is looked up in a hashed bitmap of the anchors' words (numpy), and
only the lines around the rare hits go to the regular expressions. Patterns without a
long enough literal are searched over the decoded block instead (slower, still exact).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

import numpy as np

from servegate.gate.lines import MAX_LINE_BYTES as MAX_LINE

__all__ = ["MIN_ANCHOR", "Prefilter", "Weights", "line_bounds", "required_literal"]

MIN_ANCHOR = 7
# candidate offset -> how many lines of the same key it stands for (Prefilter.thin)
Weights = dict[int, int]
# 2**17 buckets (a 128 KiB table, in L2): with some 400 anchors of 4 keys each, a word
# of a log line falls on a set bucket about once per kilobyte; 2**16 gave half as many
# buckets and a third more false hits, each a Python dict lookup (about 1 us)
_BITS = 17
_MULT = np.uint64(0x9E3779B97F4A7C15)
_SHIFT = np.uint64(64 - _BITS)
_MASK7 = np.uint64((1 << 56) - 1)
_QUANTIFIERS = "?*{"
_COUNTED = re.compile(r"\{\d*(?:,\d*)?\}")
_ESCAPABLE_LITERALS = set(r"""\.^$*+?{}[]()|/-_:!"'#%&,;<=>@`~ """)


def required_literal(pattern: str) -> str | None:
    """The longest literal every match of ``pattern`` must contain, or None.

    Conservative: only text outside groups and classes counts, a top-level ``|`` or an
    inline flag gives None, and a character made optional by a quantifier is dropped.
    """
    if pattern.startswith("(?") and not pattern.startswith(("(?:", "(?P", "(?=", "(?!", "(?<")):
        return None  # inline flags (case-insensitive, verbose...) change what matches
    runs: list[str] = []
    run: list[str] = []
    depth = 0
    i = 0
    n = len(pattern)

    def close() -> None:
        if run:
            runs.append("".join(run))
            run.clear()

    while i < n:
        ch = pattern[i]
        if ch == "\\" and i + 1 < n:
            nxt = pattern[i + 1]
            if depth == 0 and nxt in _ESCAPABLE_LITERALS:
                run.append(nxt)
            else:
                close()
            i += 2
            continue
        if ch == "[":
            close()
            j = i + 1
            if j < n and pattern[j] == "^":
                j += 1
            if j < n and pattern[j] == "]":
                j += 1
            while j < n and pattern[j] != "]":
                j += 2 if pattern[j] == "\\" else 1
            i = j + 1
            continue
        if ch == "(":
            close()
            depth += 1
        elif ch == ")":
            close()
            depth -= 1
        elif ch == "|":
            if depth == 0:
                return None
            close()
        elif ch in _QUANTIFIERS:
            counted = _COUNTED.match(pattern, i) if ch == "{" else None
            if ch == "{" and counted is None:
                if depth == 0:
                    run.append(ch)  # a brace that is not a quantifier is a literal
                i += 1
                continue
            if run:
                run.pop()
            close()
            if counted is not None:
                i = counted.end()
                continue
        elif ch == "+" or ch in ".^$":
            close()
        elif depth == 0:
            run.append(ch)
        i += 1
    close()
    best = max(runs, key=len, default="")
    return best or None


# Lines that engines repeat while they run (throughput reports, access logs, progress
# bars): anchor windows avoid the words in them.
_BACKGROUND = (
    b"(APIServer pid=1) INFO 01-01 00:00:00 [loggers.py:1] Engine 000: Avg prompt "
    b"throughput: 0.0 tokens/s, Avg generation throughput: 0.0 tokens/s, Running: 1 reqs, "
    b"Waiting: 0 reqs, GPU KV cache usage: 0.1%, Prefix cache hit rate: 0.0%\n"
    b'INFO:     127.0.0.1:1 - "POST /v1/completions HTTP/1.1" 200 OK\n'
    b'INFO:     127.0.0.1:1 - "POST /v1/chat/completions HTTP/1.1" 200 OK\n'
    b'INFO:     127.0.0.1:1 - "GET /health HTTP/1.1" 200 OK\n'
    b"[2026-01-01 00:00:00 TP0] Decode batch, #running-req: 1, #token: 1, token usage: "
    b"0.01, cuda graph: True, gen throughput (token/s): 1.00, #queue-req: 0\n"
    b"[2026-01-01 00:00:00 TP0] Prefill batch, #new-seq: 1, #new-token: 1, #cached-token: 0, "
    b"token usage: 0.00, #running-req: 0, #queue-req: 0\n"
    b"Capturing batches (bs=1 avail_mem=1.00 GB): 100%| 1/1 [00:01<00:00, 1.00it/s]\n"
    b"Loading safetensors checkpoint shards: 100% Completed | 1/1 [00:01<00:00, 1.00it/s]\n"
    b"srv  update_slots: all slots are idle\nslot launch_slot_: id  0 | task 1 | processing task\n"
    b"prompt eval time = 1.00 ms / 1 tokens (1.00 ms per token, 1.00 tokens per second)\n"
)


def _commonness(text: bytes) -> int:
    """How ordinary a window of an anchor looks: lower-case letters and spaces abound."""
    return sum(1 for byte in text if 97 <= byte <= 122 or byte == 32)


class _KeyTable:
    """Keys of ``key_len`` bytes at 4-aligned offsets of anchors, in a hashed bitmap.

    An anchor of at least ``key_len + 3`` bytes covers, wherever it lies, one whole key
    that starts at an offset divisible by four. Per anchor, the window of ``key_len + 3``
    bytes that looks least ordinary is chosen, so that common words ("Waiting",
    "Engine") rarely hit. Keys of 7 bytes are read as the low bytes of 64-bit words at
    offsets 0 and 4 (mod 8); keys of 4 bytes as 32-bit words.
    """

    def __init__(self, key_len: int, anchors: Iterable[bytes]) -> None:
        self.key_len = key_len
        self.keys: dict[bytes, list[tuple[int, bytes]]] = {}
        span = key_len + 3
        for anchor in anchors:
            starts = range(len(anchor) - span + 1)
            first = min(starts, key=lambda k: (self._score(anchor[k : k + span]), -k))
            for shift in range(4):
                key = anchor[first + shift : first + shift + key_len]
                self.keys.setdefault(key, []).append((first + shift, anchor))
        self._table = np.zeros(1 << _BITS, dtype=np.bool_)
        self._buffer = np.empty(0, dtype=np.uint64)
        for key in self.keys:
            word = np.frombuffer(key.ljust(8, b"\0"), dtype="<u8")
            self._table[self._bucket(word)] = True

    def _bucket(self, words: np.ndarray) -> np.ndarray:
        # in place in a reused buffer: fresh megabyte temporaries cost page faults
        if self._buffer.size < words.size:
            self._buffer = np.empty(max(words.size, 1 << 17), dtype=np.uint64)
        out = self._buffer[: words.size]
        if self.key_len == 7:
            np.bitwise_and(words, _MASK7, out=out)
        else:
            out[:] = words
        np.multiply(out, _MULT, out=out)
        np.right_shift(out, _SHIFT, out=out)
        # int64 view: indices below 2**_BITS, so indexing needs no conversion pass
        return out.view(np.int64)

    def _score(self, window: bytes) -> int:
        # a key seen in the lines servers print all day long, or an all-lower-case one,
        # is far likelier to hit than one with capitals, digits or punctuation
        size = self.key_len
        score = 0
        for i in range(len(window) - size + 1):
            key = window[i : i + size]
            score += (1 << 12) if key in _BACKGROUND else (1 << _commonness(key))
        return score

    def hits(self, block: bytes, start: int, end: int) -> np.ndarray:
        """Offsets (``start`` + a multiple of 4) where a key may start (a superset)."""
        size = end - start
        if not self.keys or size < 8:
            return np.empty(0, dtype=np.int64)
        if self.key_len == 4:
            words = np.frombuffer(block, dtype="<u4", count=size // 4, offset=start)
            return np.flatnonzero(self._table[self._bucket(words)]) * 4 + start
        out = []
        for base in (start, start + 4):
            words = np.frombuffer(block, dtype="<u8", count=(end - base) // 8, offset=base)
            out.append(np.flatnonzero(self._table[self._bucket(words)]) * 8 + base)
        return np.sort(np.concatenate(out))

    def thin(self, block: bytes, hits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Of the ``hits`` that read the same key, the first and the last (sorted), and
        how many hits each kept one stands for (the last: all but the first)."""
        if hits.size == 0:
            return hits, hits
        data = np.frombuffer(block, dtype=np.uint8)
        span = np.arange(8 if self.key_len == 7 else 4)
        grid = np.ascontiguousarray(data[hits[:, None] + span])
        keys = grid.view("<u8" if self.key_len == 7 else "<u4").ravel()
        if self.key_len == 7:
            keys = keys & _MASK7
        _, first, counts = np.unique(keys, return_index=True, return_counts=True)
        _, from_end = np.unique(keys[::-1], return_index=True)
        last = hits.size - 1 - from_end
        weights = np.ones(hits.size, dtype=np.int64)
        weights[last] = np.where(last != first, counts - 1, 1)
        kept = np.union1d(first, last)
        return hits[kept], weights[kept]


class Prefilter:
    """Lines of a block that contain one of a set of literal anchors (each >= 7 bytes)."""

    def __init__(self, anchors: Iterable[bytes]) -> None:
        unique = set(anchors)
        for anchor in unique:
            if len(anchor) < MIN_ANCHOR:
                raise ValueError(f"anchor {anchor!r} is shorter than {MIN_ANCHOR} bytes")
        # keys of 7 bytes for anchors of 10 bytes or more; 4-byte keys (slower) otherwise
        self._tables = (
            _KeyTable(7, [a for a in unique if len(a) >= 10]),
            _KeyTable(4, [a for a in unique if len(a) < 10]),
        )
        self.empty = not unique

    def candidates(self, block: bytes, start: int = 0, end: int | None = None) -> list[np.ndarray]:
        """Offsets where an anchor may be, per key table (a superset: numpy, no Python
        per byte); their number says how busy the block is before any line is read."""
        end = len(block) if end is None else end
        return [table.hits(block, start, end) for table in self._tables]

    def thin(self, block: bytes, candidates: list[np.ndarray]) -> tuple[list[np.ndarray], Weights]:
        """For a block crowded with anchors (a flood of progress lines): of the
        candidates that read the same key, only the first and the last; with the number
        of lines each kept candidate stands for (by offset; 1 when not listed).

        Vectorised: the cost is numpy's, however many lines the block has. The lines
        left out hold the same anchor as a line kept before and after them: a flood of
        one line's shape, not a rare line (which holds a rare anchor of its own).
        """
        kept: list[np.ndarray] = []
        weights: Weights = {}
        for table, hits in zip(self._tables, candidates, strict=True):
            offsets, counts = table.thin(block, hits)
            kept.append(offsets)
            heavy = np.flatnonzero(counts > 1)
            weights.update(zip(offsets[heavy].tolist(), counts[heavy].tolist(), strict=True))
        return kept, weights

    def lines(
        self,
        block: bytes,
        start: int = 0,
        end: int | None = None,
        candidates: list[np.ndarray] | None = None,
    ) -> Iterator[tuple[int, int]]:
        """(start, end) of each line of ``block[start:end]`` holding an anchor, in order
        (``candidates``: from ``candidates()`` or ``thin()`` over the same bounds)."""
        end = len(block) if end is None else end
        if candidates is None:
            candidates = self.candidates(block, start, end)
        found: list[int] = []
        for table, hits in zip(self._tables, candidates, strict=True):
            size = table.key_len
            keys = table.keys
            for offset in hits.tolist():
                for at_in_anchor, anchor in keys.get(block[offset : offset + size], ()):
                    at = offset - at_in_anchor
                    if at >= start and block.startswith(anchor, at, end):
                        found.append(offset)
                        break
        found.sort()
        last_end = -1
        for offset in found:
            if offset < last_end:
                continue
            line_start, line_end = line_bounds(block, offset, start, end)
            yield line_start, line_end
            last_end = line_end + 1


def line_bounds(block: bytes, offset: int, lo: int = 0, hi: int | None = None) -> tuple[int, int]:
    """(start, end) of the line around ``offset`` within ``block[lo:hi]``."""
    hi = len(block) if hi is None else hi
    low = max(lo, offset - MAX_LINE - 2)
    nl = block.rfind(b"\n", low, offset)
    cr = block.rfind(b"\r", max(nl + 1, low), offset)
    start = max(nl, cr, low - 1) + 1
    high = min(hi, offset + MAX_LINE + 2)
    nl = block.find(b"\n", offset, high)
    cr = block.find(b"\r", offset, nl if nl >= 0 else high)
    if cr >= 0:
        end = cr
    elif nl >= 0:
        end = nl
    else:
        end = high
    return start, end
