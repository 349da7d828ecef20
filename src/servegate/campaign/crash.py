"""What a server's log says after it died in the middle of a benchmark.

The gate decides a crash while the server starts; after READY the runner notices a death
between load points (or by failed requests) and classifies it here, by the engine's own
crash signatures in the lines written since READY.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from servegate.engines.profile import Signature

__all__ = ["TAIL_LINES", "classify", "log_tail"]

TAIL_LINES = 30


def log_tail(path: Path, lines: int, *, start: int = 0) -> list[str]:
    """The last ``lines`` non-empty lines of a log file after byte ``start`` (empty when
    it cannot be read); carriage returns (progress bars) split lines too."""
    try:
        with path.open("rb") as handle:
            handle.seek(0, 2)
            size = handle.tell()
            handle.seek(max(start, size - 64 * 1024))
            data = handle.read()
    except OSError:
        return []
    text = data.decode("utf-8", errors="replace").replace("\r", "\n")
    return [line for line in text.splitlines() if line.strip()][-lines:]


def classify(tail: Iterable[str], signatures: Iterable[Signature]) -> str | None:
    """The engine's fatal signature found in ``tail``, as 'title (kind) - hint'."""
    for line in reversed(list(tail)):
        for signature in signatures:
            if re.search(signature.pattern, line):
                return f"{signature.title} ({signature.kind}) - {signature.hint}"
    return None
