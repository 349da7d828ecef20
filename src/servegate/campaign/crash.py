"""What a crashed server's log says: its last lines, and the root cause in them.

The gate decides at the first fatal line, within milliseconds. A campaign records the
crash once the server is stopped, when its whole log is there, so it can name the cause
that the following lines give (SGLang writes "Scheduler hit an exception" first and the
``CUDA out of memory`` it was about a few lines later), and classify a death in the
middle of a benchmark by the engine's own crash signatures.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from servegate.engines.profile import Signature

__all__ = ["GENERIC_KINDS", "TAIL_LINES", "classify", "log_tail", "refine_crash", "verdict_line"]

TAIL_LINES = 30
# crash kinds that say where it failed but not why: the lines after them often do
GENERIC_KINDS = frozenset({"engine-init", "child-exit", "exit", "signature", "shard", None})


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


def refine_crash(
    verdict: dict[str, Any], lines: list[str], signatures: Iterable[Signature]
) -> dict[str, Any]:
    """A CRASH verdict whose generic kind is replaced by the root cause found in the log.

    The gate decides at the first fatal line, within milliseconds; SGLang writes
    "Scheduler hit an exception" first and the ``CUDA out of memory`` it was about a few
    lines later. Once the server is stopped its whole log is there, so the stored verdict
    can name the cause (kind, hint) that the lines after the first one give. The gate's
    own decision is kept under ``gate_kind`` / ``gate_reason``.
    """
    if verdict.get("status") != "crash" or verdict.get("kind") not in GENERIC_KINDS:
        return verdict
    matched = verdict.get("matched_line")
    start = 0
    if isinstance(matched, str):
        for index, line in enumerate(lines):
            if line.strip() and line.strip() in matched:
                start = index
                break
    for line in lines[start:]:
        for signature in list(signatures):
            if signature.kind not in GENERIC_KINDS and re.search(signature.pattern, line):
                tail = lines[: lines.index(line) + 1][-TAIL_LINES:] if line in lines else lines
                return {
                    **verdict,
                    "kind": signature.kind,
                    "hint": signature.hint,
                    "reason": signature.title,
                    "matched_line": line,
                    "gate_kind": verdict.get("kind"),
                    "gate_reason": verdict.get("reason"),
                    "tail": tail[-TAIL_LINES:],
                }
    return verdict


def verdict_line(verdict: dict[str, Any]) -> str:
    """The DESIGN.md verdict line of a verdict given as its JSON object."""
    text = f"{str(verdict.get('status', 'crash')).upper()} after "
    text += f"{float(verdict.get('elapsed_s') or 0.0):.1f}s: {verdict.get('reason')}"
    if verdict.get("kind") and verdict.get("status") == "crash":
        text += f" ({verdict['kind']})"
    if verdict.get("hint") and verdict.get("status") == "crash":
        text += f" - {verdict['hint']}"
    return text


def classify(tail: Iterable[str], signatures: Iterable[Signature]) -> str | None:
    """The engine's fatal signature found in ``tail``, as 'title (kind) - hint'."""
    for line in reversed(list(tail)):
        for signature in signatures:
            if re.search(signature.pattern, line):
                return f"{signature.title} ({signature.kind}) - {signature.hint}"
    return None
