"""A crash kind judged by the words of its cause line, where no rule names one.

The rules (the engines' signatures, the families' words, the phase the server died in)
name the kind of most crashes. What is left is a process that exited after an ordinary
error line no rule knows (``KeyError: 'layers.0.attention.wk.weight'``, ``ValueError:
The supplied chat template string (tool_use) appears path-like, but doesn't exist!``):
its kind was the bare ``exit``. Here such a line is compared, word by word, with the
cause lines of the real crash logs whose kinds are known (``kind_lines.tsv``, one
``kind<TAB>line`` a known crash, written from tests/fixtures/crash_logs by
``python benchmarks/learned_kinds.py --write``): a naive Bayes over the words a line
holds (lower-cased, split at case changes and punctuation; numbers left out), and the
kind is taken only where its posterior share is at least ``THRESHOLD`` and the line holds
a telling word for it (one at least ``TELLING`` of whose known lines are of that kind),
which the verdict's reason names.

Measured as the rules were, on logs it never saw: the 43 blind batches, each replayed
with the classifier of its day and this model trained only on the logs known that day.
Of their 43 bare exits with a quoted line, it judged 31: 16 right, 15 wrong (bare before,
so as wrong); no right kind was made wrong; kind right 230/323 -> 246/323
(``benchmarks/learned_kinds.py``; benchmarks/README.md). A judged kind is a likelihood,
not a rule: the verdict's reason says so and names the words.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from importlib.resources import files

from servegate.engines.families import family_of

__all__ = [
    "ALPHA",
    "TELLING",
    "THRESHOLD",
    "KindModel",
    "Likely",
    "likely_kind",
    "shipped",
    "words_of",
]

ALPHA = 0.1  # additive smoothing of a word's count in a kind
THRESHOLD = 0.5  # the posterior share a kind needs to be taken
TELLING = 0.6  # a telling word: at least this share of the known lines holding it are the kind's
DATA = "kind_lines.tsv"
# a Go program's own bug (nil map, index out of range, divide by zero): its words say
# what the program did wrong, not what of the setup failed
_RUNTIME_PANIC = re.compile(r"\bpanic: runtime error:")
# an OS error's own text ("[Errno 22] Invalid argument"): what a system call returned,
# not what of the setup failed (the rules' families read the ones that say it)
_OS_ERROR = re.compile(r"\[Errno -?\d+\]")
_WORD = re.compile(r"[A-Za-z][a-z]+|[A-Z]{2,}(?![a-z])")
# how a process ended (a signal, the exit) or a wait ran out is no kind of its words
_SKIPPED_FAMILIES = frozenset({"process", "timeout"})


# a path or an address: the machine's folders, not words of what failed (a log written
# under /tmp would teach that "tmp" is a kind's)
_PATH = re.compile(r"(?:\b[a-z][a-z0-9+.-]*://|(?<![\w.])(?:~|\.{1,2})?/)[^\s'\",;)\]]*")


def words_of(text: str) -> frozenset[str]:
    """The words of a line, lower-cased (``CUDAOutOfMemory`` -> cuda, out, of, memory),
    less its paths and addresses."""
    return frozenset(word.lower() for word in _WORD.findall(_PATH.sub(" ", text)))


@dataclass(frozen=True, slots=True)
class Likely:
    """The likeliest kind of a line, its posterior share among the known kinds, and the
    line's telling words for it (those most of whose known lines are of that kind, the
    most often seen first)."""

    kind: str
    share: float
    words: tuple[str, ...]


class KindModel:
    """Naive Bayes over the words of known cause lines, one document a line."""

    def __init__(self, examples: Iterable[tuple[str, str]]) -> None:
        counts: defaultdict[str, Counter[str]] = defaultdict(Counter)
        lines: Counter[str] = Counter()
        for kind, line in examples:
            if family_of(kind) in _SKIPPED_FAMILIES:
                continue
            counts[kind].update(words_of(line))
            lines[kind] += 1
        self._kinds = sorted(counts)
        self._prior = [math.log(lines[k] / max(1, lines.total())) for k in self._kinds]
        # a word's count in each kind, for the words seen: the log-likelihoods are taken
        # for a judged line's words only (the first crash pays for counting, not a table)
        self._counts: dict[str, list[int]] = {}
        for n, kind in enumerate(self._kinds):
            for word, count in counts[kind].items():
                self._counts.setdefault(word, [0] * len(self._kinds))[n] = count
        size = ALPHA * len(self._counts)
        self._denominators = [sum(counts[k].values()) + size for k in self._kinds]

    @property
    def kinds(self) -> tuple[str, ...]:
        """The kinds it knows, sorted."""
        return tuple(self._kinds)

    def likely(self, line: str) -> Likely | None:
        """The likeliest kind of ``line``; None when it holds no known word."""
        seen = sorted(w for w in words_of(line) if w in self._counts)
        known = [self._counts[w] for w in seen]
        if not known:
            return None
        scores = [
            prior + sum(math.log((row[n] + ALPHA) / denominator) for row in known)
            for n, (prior, denominator) in enumerate(
                zip(self._prior, self._denominators, strict=True)
            )
        ]
        best = max(range(len(scores)), key=scores.__getitem__)
        top = scores[best]
        share = 1.0 / sum(math.exp(s - top) for s in scores)
        telling = sorted(
            (w for w, row in zip(seen, known, strict=True) if row[best] >= TELLING * sum(row)),
            key=lambda w: (-self._counts[w][best], w),
        )
        return Likely(kind=self._kinds[best], share=share, words=tuple(telling))

    def judge(self, line: str) -> Likely | None:
        """The likeliest kind of ``line`` where it has at least ``THRESHOLD`` of the
        posterior and the line holds a telling word for it; else None."""
        if _RUNTIME_PANIC.search(line) is not None or _OS_ERROR.search(line) is not None:
            return None
        found = self.likely(line)
        if found is None or found.share < THRESHOLD or not found.words:
            return None
        return found


def read_examples(text: str) -> list[tuple[str, str]]:
    """``(kind, line)`` pairs of a ``kind<TAB>line`` text (blank lines skipped)."""
    pairs = []
    for row in text.splitlines():
        if row.strip():
            kind, _, line = row.partition("\t")
            pairs.append((kind, line))
    return pairs


@cache
def shipped() -> KindModel:
    """The model of the shipped known cause lines (read once)."""
    text = files("servegate.gate").joinpath(DATA).read_text(encoding="utf-8")
    return KindModel(read_examples(text))


def likely_kind(line: str) -> Likely | None:
    """The kind the shipped model judges ``line`` to be (``KindModel.judge``), or None."""
    return shipped().judge(line)
