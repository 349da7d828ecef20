"""Salts that keep one load point's prompts from being another's, for a known cache state.

A server's prefix cache remembers every prompt it has seen. When two load points send
the same text, the second one measures the cache, not the server (vLLM #54227: a fixed
seed made TTFT 49x lower). A salt is derived from the run's seed and the coordinates of
what is being measured (start, point, probe), never from the clock, so a rerun with the
same seed and the paired variants of one start see the same text, and nothing is shared
across points unless the design says so.

Two forms, for the two kinds of dataset:

- `salted_seed` seeds a generated dataset's random draws (``random``, ``prefix``): every
  prompt of the point is new text, and its length in tokens is untouched.
- `salt_prefix` is a short tag put in front of each prompt of a dataset read from a file
  (``sharegpt``, ``jsonl``): the text is the file's, the first cache block is the point's.

    >>> salted_seed(0, 1, 2) == salted_seed(0, 1, 2) != salted_seed(0, 1, 3)
    True
"""

from __future__ import annotations

import hashlib


def _digest(seed: int, parts: tuple[int | str, ...]) -> bytes:
    """A stable hash of the seed and the coordinates (no process-dependent hash())."""
    text = "\x1f".join([str(seed), *(str(p) for p in parts)])
    return hashlib.sha256(text.encode()).digest()


def salted_seed(seed: int, *parts: int | str) -> int:
    """A 63-bit seed for `random.Random` from `seed` and coordinates such as (start, point).

    With no parts it is `seed` itself, so an unsalted run draws what it always drew.
    """
    if not parts:
        return seed
    return int.from_bytes(_digest(seed, parts)[:8], "big") >> 1


def salt_prefix(seed: int, *parts: int | str) -> str:
    """A tag of eight hex digits and a space, e.g. ``"[3f9a2c1b] "``, to put before a prompt.

    Empty with no parts: an unsalted run keeps the file's text as it is.
    """
    if not parts:
        return ""
    return f"[{_digest(seed, parts)[:4].hex()}] "


__all__ = ["salt_prefix", "salted_seed"]
