"""Which log line is the cause of a crash: exception lines, frames, wrappers, chains.

A crashing engine prints many error-looking lines: the frames of a traceback (whose
source lines may even contain the error text, ``raise RuntimeError(f"NCCL error: ...")``),
the exception that ends each traceback, the re-raise in a chained traceback, and a
wrapper that only says *that* something failed (``Engine core initialization failed``,
``Scheduler hit an exception``). This module reads lines as an engine prints them,
behind any logger or process prefix, and picks the one that says *what* failed:

1. never a source line of a frame (``File "..."``, indented code, ``raise ...``, carets);
2. a line that a specific fatal signature names beats any other;
3. then an exception line (``SomethingError: ...``, a bare ``Exception: ...``, a C++
   ``what():``), with or without a ``Traceback`` header; of a chain of exceptions
   (``The above exception was the direct cause ...``) the first, the root;
4. a wrapper line only when nothing else was printed.

It runs only when a verdict needs a cause (the process exited, a wrapper waited long
enough, an essential child died), over the bounded tail, so the log-follow fast path
keeps its literal prefilter and never runs these expressions per line.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from servegate.engines.profile import Signature

__all__ = ["Cause", "exception_text", "is_source_line", "select_cause", "strip_prefix"]

# What loggers, launchers and terminals put before an engine's own text. Each
# alternative is tried at the start of the line, repeatedly (prefixes nest: a
# container's stamp, then vLLM's process tag, then vLLM's logger header).
_PREFIX = re.compile(
    r"""
    (?: [│┃|]\ ?                                          # a log viewer's frame
      | \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?
        \ +(?:(?:stdout|stderr)\ [FP]\ )?                 # container runtime stamps
      | \[\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[.,]\d+)?Z?\]\ ?   # CI stamps
      | [\w.-]+-\d+\ +\|\ ?                               # docker compose service
      | \([\w.= -]+?\ pid=\d+(?:,\ ip=[\w.:]+)?\)\ ?        # vLLM / Ray process tags
      | \[rank\d+\]:\ ?                                   # torch's rank prefix
      | \[(?:\d{4}-\d\d-\d\d\ )?\d\d:\d\d:\d\d(?:[.,]\d+)?(?:\ [A-Z]+\d+)*\]\ ?   # SGLang
      | (?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)\ \d\d-\d\d\ \d\d:\d\d:\d\d(?:[.,]\d+)?
        \ \[?[\w./-]+:\d+\[?\]\ ?                         # vLLM's logger
      | \d{4}-\d\d-\d\d\ \d\d:\d\d:\d\d(?:[.,]\d+)?\ (?:DEBUG|INFO|WARNING|ERROR|CRITICAL)
        (?:\ \d+)?\ \[[\w./-]+:\d+\]\ ?                   # vLLM's older logger
      | \[[\w.-]+\]:\ ?                                   # a launcher's [name]: tag
    )
    """,
    re.VERBOSE,
)
_MAX_PREFIXES = 8
_FRAME = re.compile(r'\s*File "[^"]*",? line \d+')
_MARKERS = re.compile(r"\s*[\^~]+\s*$")
# SomethingError: message, a bare Exception: / Error:, dotted names, a message-less raise
_EXCEPTION = re.compile(
    r"(?:[A-Za-z_]\w*\.)*(?:[A-Za-z_]\w*)?(?:Error|Exception|Exit|Interrupt|Failure)"
    r"(?::\s+\S|:?\s*$)"
)
_WHAT = re.compile(r"\s*what\(\):\s+\S")  # std::terminate's report of a C++ exception
_CHAINED = (
    "During handling of the above exception",
    "The above exception was the direct cause",
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Cause:
    """The line that says what failed, and the signature that names it, if any."""

    line: str  # the log line as printed (for matched_line)
    text: str  # the same without logger prefixes (for the verdict's reason)
    signature: Signature | None = None  # the fatal signature it matched, if any


def strip_prefix(line: str) -> str:
    """``line`` without the logger, process and container prefixes engines print."""
    rest = line
    for _ in range(_MAX_PREFIXES):
        match = _PREFIX.match(rest)
        if match is None or match.end() == 0:
            break
        rest = rest[match.end() :]
    return rest.rstrip().rstrip("│┃").rstrip()


def is_source_line(line: str) -> bool:
    """True for a traceback's frame header, source line, caret marks or continuation."""
    rest = strip_prefix(line)
    if not rest.strip():
        return False
    if _FRAME.match(rest) or _MARKERS.match(rest):
        return True
    body = rest.lstrip()
    if body.startswith(("raise ", "raise(")) or body == "raise":
        return True
    indent = len(rest) - len(body)
    return indent >= 4 or rest.startswith("\t")


def exception_text(line: str) -> str | None:
    """The exception (or ``what():``) text of an error line, or None if it is not one."""
    rest = strip_prefix(line)
    if is_source_line(line):
        return None
    if _WHAT.match(rest):
        return rest.strip()
    body = rest.strip()
    if _EXCEPTION.match(body):
        return body
    return None


def _is_chain_marker(line: str) -> bool:
    return strip_prefix(line).lstrip().startswith(_CHAINED)


def select_cause(
    lines: Sequence[str], fatal: Iterable[tuple[re.Pattern[str], Signature]]
) -> Cause | None:
    """The most specific cause among ``lines`` (oldest first); None if none says one.

    ``fatal`` is the profile's compiled fatal rules in priority order.
    """
    rules = tuple(fatal)
    best: dict[int, list[tuple[int, Cause]]] = {0: [], 1: [], 2: []}
    markers: list[int] = []
    for index, line in enumerate(lines):
        if not line.strip():
            continue
        if _is_chain_marker(line):
            markers.append(index)
            continue
        if is_source_line(line):
            continue
        signature = next((sig for pattern, sig in rules if pattern.search(line)), None)
        text = exception_text(line)
        if signature is not None:
            rank = 0 if signature.wrapper else 2
        elif text is not None:
            rank = 1
        else:
            continue
        shown = text if text is not None else strip_prefix(line).strip()
        best[rank].append((index, Cause(line=line.strip(), text=shown, signature=signature)))
    if best[2]:
        return best[2][-1][1]
    if best[1]:
        return _root_of_chain(best[1], markers)
    if best[0]:
        return best[0][-1][1]
    return None


def _root_of_chain(found: list[tuple[int, Cause]], markers: list[int]) -> Cause:
    """The last exception, or the first of the chain it ends (its root cause)."""
    pick = len(found) - 1
    while pick > 0:
        before, here = found[pick - 1][0], found[pick][0]
        if not any(before < marker < here for marker in markers):
            break
        pick -= 1
    return found[pick][1]
