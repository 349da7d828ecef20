"""The literal prefilter finds exactly the lines a regular expression would."""

from __future__ import annotations

import random
import re

from servegate.engines import ENGINE_NAMES, get_profile
from servegate.gate.scan import MIN_ANCHOR, Prefilter, required_literal
from servegate.gate.watch import Rules


def test_required_literal_is_conservative() -> None:
    """Only text every match must contain counts; alternation or flags give None."""
    assert required_literal(r"Shard .* failed to start") == " failed to start"
    assert required_literal(r"torch\.compile takes") == "torch.compile takes"
    assert required_literal(r"colou?r scheme") == "r scheme"
    assert required_literal(r"x{2}yyyyyyy") == "yyyyyyy"
    assert required_literal(r"ready|done") is None
    assert required_literal(r"(?i)ready to roll") is None


def test_every_profile_pattern_takes_the_fast_path() -> None:
    """Each built-in pattern has an anchor of at least MIN_ANCHOR bytes."""
    for name in ENGINE_NAMES:
        rules = Rules(get_profile(name))
        assert rules.slow == (), (name, [r.pattern.pattern for r in rules.slow])


def test_prefilter_agrees_with_regex_search_on_random_logs() -> None:
    """Lines found by the prefilter are exactly those containing an anchor."""
    rng = random.Random(7)
    anchors = [b"CUDA out of memory", b"NCCL error", b"Connected", b"Load weight end"]
    words = [b"INFO", b"load", b"CUDA", b"error", b"memory", b"Conn", b"weight", b"end", b"x"]
    lines = []
    for _ in range(20000):
        parts = [rng.choice(words) for _ in range(rng.randint(1, 12))]
        if rng.random() < 0.01:
            parts.insert(rng.randint(0, len(parts)), rng.choice(anchors))
        lines.append(b" ".join(parts))
    block = b"\n".join(lines) + b"\n"
    expected = [line for line in lines if any(a in line for a in anchors)]
    prefilter = Prefilter(anchors)
    found = [block[s:e] for s, e in prefilter.lines(block)]
    assert found == expected
    pattern = re.compile(b"|".join(re.escape(a) for a in anchors))
    assert found == [line for line in lines if pattern.search(line)]


def test_anchor_at_any_alignment_and_at_block_edges() -> None:
    """An anchor is found whatever its offset, including the very start and end."""
    anchor = b"NCCL error"
    prefilter = Prefilter([anchor])
    for pad in range(16):
        block = b"x" * pad + anchor + b"\n"
        assert [block[s:e] for s, e in prefilter.lines(block)] == [b"x" * pad + anchor]
    assert len(anchor) >= MIN_ANCHOR
