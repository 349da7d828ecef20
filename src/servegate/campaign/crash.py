"""What a server's log says after it died in the middle of a benchmark.

The gate decides a crash while the server starts; after READY the runner notices a death
between load points (or by failed requests) and asks here why. The lines written since
READY are read by the gate's own matcher (``LogWatcher`` over the same ``Rules``: the
campaign's ``crash`` patterns, then the engine's signatures) and the cause is chosen as
the gate chooses it during startup: the first specific signature wins; a wrapper
signature ("Scheduler hit an exception") counts only when no specific one follows, and
then carries the last line of the traceback; a signature that a recovery line withdraws
(``Signature.withdrawn_by``) counts only when no such line follows it.

    cause = classify(Path(log), profile, crash=campaign.crash, start=ready_offset)
    if cause is not None:
        print(cause.summary())   # "CUDA out of memory (oom) - lower ..."
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from servegate.engines.profile import EngineProfile, Signature
from servegate.gate.watch import LogWatcher, Rules, withdrawn

__all__ = ["TAIL_LINES", "Cause", "classify", "log_tail"]

TAIL_LINES = 30
_CHUNK = 1 << 20  # the log is read this much at a time: memory stays flat


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


@dataclass(frozen=True, slots=True, kw_only=True)
class Cause:
    """Why a server died after READY, in the words of the gate's CRASH verdict."""

    reason: str  # the signature's title (a wrapper's with the traceback's last line)
    kind: str  # oom, nccl, signature (a campaign pattern), ...
    hint: str
    matched_line: str

    def summary(self) -> str:
        """``reason (kind) - hint``, as a CRASH verdict line says it."""
        return f"{self.reason} ({self.kind}) - {self.hint}"


def classify(
    path: Path, profile: EngineProfile, *, crash: Sequence[str] = (), start: int = 0
) -> Cause | None:
    """The cause of death in the log lines after byte ``start``, or None if no line names
    one (also when the log cannot be read).

    ``crash`` are the campaign's own fatal patterns, matched before the profile's
    signatures, as the gate matches ``--crash``.
    """
    watcher = LogWatcher(Rules(profile, crash=crash))
    wrapper: tuple[Signature, str] | None = None
    held: list[tuple[Signature, str]] = []  # hits a later recovery line may withdraw
    try:
        with path.open("rb") as handle:
            handle.seek(start)
            while True:
                chunk = handle.read(_CHUNK)
                hits = watcher.feed(chunk, 0.0) if chunk else watcher.finish(0.0)
                for hit in hits:
                    if hit.what == "recover":
                        held = [(sig, line) for sig, line in held if not withdrawn(sig, hit)]
                    if hit.what != "fatal" or hit.signature is None:
                        continue
                    if hit.signature.withdrawn_by is not None:
                        held.append((hit.signature, hit.line))
                    elif not hit.signature.wrapper:
                        return _cause(*(held[0] if held else (hit.signature, hit.line)))
                    elif wrapper is None:
                        wrapper = (hit.signature, hit.line)
                if not chunk:
                    break
    except OSError:
        pass
    if held:
        return _cause(*held[0])
    if wrapper is None:
        return None
    signature, line = wrapper
    cause = _cause(signature, line)
    # the wrapper says that something failed; quote the line that says what, and take
    # the kind its words name, as the gate does
    found = watcher.cause()
    if found is None:
        return cause
    kind, hint = cause.kind, cause.hint
    if found.kind is not None:
        kind, hint = found.kind, found.hint or hint
    last = found.text
    reason = cause.reason
    if last.strip() and last.strip() not in line:
        reason = f"{reason}: {last[:200]}"
    return Cause(reason=reason, kind=kind, hint=hint, matched_line=cause.matched_line)


def _cause(signature: Signature, line: str) -> Cause:
    return Cause(
        reason=signature.title, kind=signature.kind, hint=signature.hint, matched_line=line.strip()
    )
