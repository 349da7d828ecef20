"""Log edge cases: ANSI colours, and a last line without a line end."""

from __future__ import annotations

from pathlib import Path

import pytest

from servegate.errors import GateError
from servegate.gate.lines import LineAssembler, Segment, Tail, strip_ansi
from servegate.launch import launch

from .helpers import PY, SCRIPTS

EDGES = str(SCRIPTS / "edges.py")


def _text(segments: list[Segment]) -> bytes:
    return b"".join(block[start:end] for block, start, end in segments)


def test_ansi_sequences_are_stripped_from_lines() -> None:
    """Colour, cursor and title sequences leave the assembled lines; the text stays whole."""
    asm = LineAssembler()
    coloured = b"\x1b[32mINFO\x1b[0m:  Uvicorn running on \x1b[1mhttp://h:1\x1b[0m\n"
    assert _text(asm.feed(coloured)) == b"INFO:  Uvicorn running on http://h:1\n"
    assert _text(asm.feed(b"\x1b[2K\x1b[1Abar 50%\r\x1b]0;title\x07plain\n")) == (
        b"bar 50%\rplain\n"
    )
    assert strip_ansi(b"no escapes here\n") == b"no escapes here\n"


def test_ansi_split_across_reads_is_stripped() -> None:
    """An escape sequence cut in two by a read boundary is still removed."""
    asm = LineAssembler()
    assert asm.feed(b"ready \x1b[3") == []
    assert _text(asm.feed(b"1mnow\x1b[0m\n")) == b"ready now\n"


def test_coloured_ready_line_is_ready(tmp_path: Path) -> None:
    """uvicorn's coloured "Uvicorn running on http://..." matches a plain --ready regex."""
    with launch(
        [PY, EDGES, "ansi-ready"],
        ready=[r"Uvicorn running on http://127\.0\.0\.1:8000"],
        timeout_s=20,
        log_path=str(tmp_path / "ansi.log"),
    ) as server:
        verdict = server.verdict
        assert (verdict.status, verdict.detected_by) == ("ready", "log")
        assert verdict.matched_line is not None and "\x1b" not in verdict.matched_line
    # the log file keeps what the server wrote, colours included
    assert b"\x1b[1mhttp" in (tmp_path / "ansi.log").read_bytes()


def test_provisional_last_line_shows_in_the_tail_once() -> None:
    """An unfinished line shows at the end of the tail; once finished it shows once, whole."""
    tail = Tail(5)
    tail.add_block(b"one\n")
    tail.provisional(b"two (unfin")
    assert tail.last() == ("one", "two (unfin")
    tail.add_block(b"two (unfinished)\n")
    assert tail.last() == ("one", "two (unfinished)")


def test_assembler_pending_keeps_the_partial_line() -> None:
    """pending() shows the unfinished line without consuming it; the next read completes it."""
    asm = LineAssembler()
    assert asm.pending() is None
    asm.feed(b"done\nloading model ")
    assert asm.pending() == b"loading model "
    assert _text(asm.feed(b"... ok\n")) == b"loading model ... ok\n"
    assert asm.pending() is None


def test_last_line_without_newline_is_a_crash_with_that_line_in_the_tail() -> None:
    """A fatal line with no line end, the server then silent and alive: CRASH, line in tail."""
    with pytest.raises(GateError) as info:
        launch([PY, EDGES, "no-newline-oom"], ready=["never printed"], timeout_s=20)
    verdict = info.value.verdict
    assert (verdict.status, verdict.kind) == ("crash", "oom"), verdict.line()
    assert verdict.tail[-1].startswith("torch.OutOfMemoryError: CUDA out of memory")


def test_last_line_without_newline_is_ready() -> None:
    """A ready line with no line end makes the server READY once output goes quiet."""
    with launch([PY, EDGES, "no-newline-ready"], ready=["generic server ready"], timeout_s=20) as s:
        assert (s.verdict.status, s.verdict.matched_line) == ("ready", "generic server ready")
