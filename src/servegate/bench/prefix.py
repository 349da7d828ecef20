"""Prompts that share prefixes by design, and the prefix-cache hit rate that design implies.

The ``prefix`` dataset is SGLang's generated-shared-prefix: ``groups`` groups, each with
its own ``shared`` words, and ``per_group`` requests per group, each the group's words
followed by ``unique`` words of its own; the requests of all groups are shuffled by the
seed. Words are drawn from the dataset's one-token vocabulary, so on an engine whose
tokenizer counts them one each (the simulator's) the shared prefix is exactly ``shared``
tokens.

`DesignCache` replays prompts through an unbounded prefix cache of whole blocks, as vLLM
counts (a prompt reuses its longest run of leading blocks seen before, at most ``len - 1``
tokens): the hit rate a server with room for every block should measure, which each
point states as its design (`servegate.bench.cache_state`). It counts a prompt's words,
which are its tokens on the simulator and close to them for the datasets' one-token
vocabulary elsewhere. With ``block = 1`` it is SGLang's radix cache.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence

from servegate.bench.spec import DatasetSpec

__all__ = ["DesignCache", "body_words", "prefix_words"]


def prefix_words(
    spec: DatasetSpec, count: int, seed: int, vocabulary: list[str]
) -> list[list[str]]:
    """``count`` prompts as word lists: the groups' requests shuffled, cycled past the end."""
    rng = random.Random(seed)
    groups, per_group = spec.get("groups"), spec.get("per_group")
    shared = [rng.choices(vocabulary, k=spec.get("shared")) for _ in range(groups)]
    prompts = [
        shared[g] + rng.choices(vocabulary, k=spec.get("unique"))
        for g in range(groups)
        for _ in range(per_group)
    ]
    rng.shuffle(prompts)
    return [prompts[i % len(prompts)] for i in range(count)]


class DesignCache:
    """An empty, unbounded prefix cache of ``block``-token blocks: what a prompt sent now
    would hit, given the prompts sent before it."""

    def __init__(self, block: int) -> None:
        self.block = block
        self.seen: set[int] = set()  # chained hashes of every full block sent

    def send(self, tokens: Sequence[str]) -> int:
        """The tokens of ``tokens`` found cached (whole leading blocks, at most len - 1)."""
        block = self.block
        limit = (len(tokens) - 1) // block  # at least one token is computed
        parent = 0
        cached = 0
        matching = True
        for i in range(len(tokens) // block):
            parent = hash((parent, *tokens[i * block : (i + 1) * block]))
            if matching and i < limit and parent in self.seen:
                cached += 1
            else:
                matching = False
            self.seen.add(parent)
        return cached * block


def body_words(body: bytes) -> list[str]:
    """The words of a request body's prompt (or its messages' contents, in order)."""
    data = json.loads(body)
    if "prompt" in data:
        return str(data["prompt"]).split()
    return [w for m in data.get("messages", []) for w in str(m.get("content", "")).split()]
