"""The simulated engine's KV cache: blocks, a prefix cache over them, and preemption.

The KV capacity is a number of blocks of ``block_size`` tokens. A running request holds
the blocks of its prompt and of what it has generated; the blocks of finished requests
stay cached, least recently used first out, until a new request needs the room.

The prefix cache works as vLLM's does: a prompt's full blocks are hashed in a chain (a
block's hash covers every token before it), a new prompt reuses its longest run of
cached leading blocks, and at least one prompt token is always computed, so a hit covers
at most ``prompt - 1`` tokens in whole blocks. A hit skips that much prefill. The
counters are vLLM's (``prefix_cache_queries`` and ``prefix_cache_hits``, in tokens);
SGLang's radix cache matches token by token, which is ``block_size`` 1.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

__all__ = ["KvCache", "Lookup"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Lookup:
    """What the cache holds of one prompt: the hashes of its full blocks, the hit length."""

    hashes: tuple[int, ...]  # one per full block of the prompt, chained
    cached_tokens: int  # leading tokens found, whole blocks, at most prompt - 1


class KvCache:
    """Blocks in use by running requests, and an LRU of cached blocks nobody holds."""

    def __init__(self, *, capacity_blocks: int, block_size: int, enabled: bool = True) -> None:
        self.capacity = capacity_blocks
        self.block_size = block_size
        self.enabled = enabled
        self.used = 0  # blocks held by running requests
        self.free_cached: OrderedDict[int, None] = OrderedDict()  # LRU, oldest first
        self.held: dict[int, int] = {}  # hash -> running requests holding that block
        self.queries = 0  # prompt tokens looked up
        self.hits = 0  # of which found cached
        self.last_rate = 0.0  # the hit rate of the last prefill (SGLang's gauge)
        self.preemptions = 0

    def blocks_for(self, tokens: int) -> int:
        """Blocks that ``tokens`` tokens take."""
        return -(-tokens // self.block_size)

    def lookup(self, ids: list[int]) -> Lookup:
        """The chained hashes of ``ids``' full blocks and how many leading tokens are cached."""
        size = self.block_size
        hashes: list[int] = []
        parent = 0
        for start in range(0, len(ids) - size + 1, size):
            parent = hash((parent, *ids[start : start + size]))
            hashes.append(parent)
        cached = 0
        if self.enabled:
            limit = (len(ids) - 1) // size  # at least one token is computed
            for h in hashes[:limit]:
                if h not in self.free_cached and h not in self.held:
                    break
                cached += size
        return Lookup(hashes=tuple(hashes), cached_tokens=cached)

    def remember(self, ids: list[int]) -> None:
        """A request ended: the full blocks of its prompt and what it generated stay cached
        (vLLM caches generated tokens' blocks too), so a next turn that sends the reply back
        reuses it. Blocks held or cached already are left where they are."""
        if not self.enabled:
            return
        for h in self.lookup(ids).hashes:
            if h not in self.held and h not in self.free_cached:
                self.free_cached[h] = None
        self._evict()

    def fits(self, blocks: int) -> bool:
        """Whether ``blocks`` more blocks can be held now (evicting cached ones)."""
        return self.used + blocks <= self.capacity

    def admit(self, lookup: Lookup, prompt_tokens: int) -> int:
        """Hold a prompt's blocks and count the lookup; returns the blocks it holds."""
        self.queries += prompt_tokens
        self.hits += lookup.cached_tokens
        self.last_rate = lookup.cached_tokens / prompt_tokens if prompt_tokens else 0.0
        for h in lookup.hashes:
            self.free_cached.pop(h, None)
            self.held[h] = self.held.get(h, 0) + 1
        blocks = self.blocks_for(prompt_tokens)
        self.used += blocks
        self._evict()
        return blocks

    def grow(self, blocks: int) -> None:
        """A running request took ``blocks`` more blocks for what it generated."""
        self.used += blocks
        self._evict()

    def release(self, lookup: Lookup, blocks: int) -> None:
        """A request ended or was preempted: its blocks go back, its prompt's stay cached."""
        self.used -= blocks
        # a prompt's last blocks go to the LRU end first, so its head outlives its tail (as
        # vLLM frees a request's blocks in reverse order)
        for h in reversed(lookup.hashes):
            left = self.held.get(h, 0) - 1
            if left > 0:
                self.held[h] = left
                continue
            self.held.pop(h, None)
            if self.enabled:
                self.free_cached[h] = None
                self.free_cached.move_to_end(h)
        self._evict()

    def _evict(self) -> None:
        """Drop the least recently used cached blocks that no longer fit."""
        while self.free_cached and self.used + len(self.free_cached) > self.capacity:
            self.free_cached.popitem(last=False)

    @property
    def usage(self) -> float:
        """Share of the KV capacity held by running requests (``kv_cache_usage_perc``)."""
        return min(1.0, self.used / self.capacity) if self.capacity else 0.0
