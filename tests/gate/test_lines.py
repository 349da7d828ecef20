"""Line assembly and the kept tail: \\r, partial lines, garbage, endless lines."""

from __future__ import annotations

from servegate.gate.lines import (
    MAX_LINE_BYTES,
    LineAssembler,
    Segment,
    Tail,
    collapse_redraws,
    decode_line,
)


def _text(segments: list[Segment]) -> bytes:
    return b"".join(block[start:end] for block, start, end in segments)


def test_partial_lines_are_joined_across_reads() -> None:
    """A line split over three reads comes out whole, once."""
    asm = LineAssembler()
    assert asm.feed(b"The server is fi") == []
    assert asm.feed(b"red up and ready") == []
    out = _text(asm.feed(b" to roll!\nmore\nnext"))
    assert out == b"The server is fired up and ready to roll!\nmore\n"
    assert _text(asm.flush()) == b"next\n"


def test_carriage_return_ends_a_line() -> None:
    """Progress bars redrawn with \\r produce complete lines without any \\n."""
    asm = LineAssembler()
    assert _text(asm.feed(b"10%\r20%\r30")) == b"10%\r20%\r"


def test_endless_line_is_capped_and_scanning_goes_on() -> None:
    """10 MB without a newline keeps only the first MAX_LINE_BYTES, then the next line."""
    asm = LineAssembler()
    kept = b"".join(_text(asm.feed(b"x" * (1024 * 1024))) for _ in range(10))
    assert len(kept) == MAX_LINE_BYTES + 1
    assert _text(asm.feed(b"yyy\nready\n")) == b"ready\n"


def test_decode_survives_binary_garbage() -> None:
    """Invalid UTF-8 and NUL bytes decode to text instead of raising."""
    assert decode_line(b"\xff\xfe\x00ok\n") == "\ufffd\ufffdok"


def test_tail_keeps_the_last_lines_and_the_final_state_of_bars() -> None:
    """The tail holds the last N lines; a \\r-redrawn bar shows only its last state."""
    tail = Tail(3)
    tail.add_block(b"a\nb\n")
    tail.add_block(b"c\nbar 10%\rbar 100%\n")
    tail.add_block(b"d\n")
    assert tail.last() == ("c", "bar 100%", "d")
    assert tail.last(1) == ("d",)


def test_tail_memory_is_bounded() -> None:
    """After many blocks only about N lines are held."""
    tail = Tail(300)
    for i in range(5000):
        tail.add_block(b"line %d\n" % i)
    lines = tail.last()
    assert len(lines) == 300
    assert lines[-1] == "line 4999"
    assert sum(len(piece) for piece, _ in tail._pieces) < 300 * 20


def test_a_flood_of_redraws_keeps_each_lines_last_state() -> None:
    """Redraws a later segment of the same line overwrites go; line ends stay as they were."""
    bars = b"".join(b"bar %d/100\r" % i for i in range(100))
    block = b"head\n" + bars + b"bar 100/100\n" + b"tail 1\rtail 2\r   \n" + bars
    out, start, end = collapse_redraws(block)
    # the last redraw of a block stays: the next block may have nothing after it
    assert out[start:end] == b"head\nbar 100/100\ntail 2\r   \nbar 99/100\r"
    assert _tail(out) == _tail(block)


def test_a_few_redraws_are_read_as_they_are() -> None:
    """Below a flood's count of \\r, the block comes back unchanged (the same object)."""
    block = b"a 1\ra 2\ra 3\n"
    assert collapse_redraws(block, 0, len(block)) == (block, 0, len(block))


def test_bars_among_more_lines_and_crlf_line_ends_are_read_as_they_are() -> None:
    """A bar now and then between more lines than redraws (vLLM's capture bars between
    its log lines), and CRLF line ends, come back unchanged, whatever their count of
    \r: collapsing would cost more than it saves. A flood among a few lines goes."""
    mixed = b"".join(b"INFO line %d\nbar %d/64\r" % (i, i) for i in range(64))
    assert collapse_redraws(mixed)[0] is mixed
    crlf = b"".join(b"INFO line %d\r\n" % i for i in range(64))
    assert collapse_redraws(crlf)[0] is crlf
    flood = b"INFO one\n" + b"".join(b"bar %d/64\r" % i for i in range(64)) + b"INFO two\n"
    out, start, end = collapse_redraws(flood)
    assert out[start:end] == b"INFO one\nINFO two\n"


def _tail(block: bytes) -> tuple[str, ...]:
    tail = Tail()
    tail.add_block(block)
    return tail.last()
