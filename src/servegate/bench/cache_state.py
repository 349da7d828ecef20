"""The prefix-cache state of a point: the hit rate its design implies and the one measured.

A benchmark that silently measures the server's prefix cache reports a TTFT many times
lower than the workload's (vLLM #54227). Each point therefore states two rates:

- the design's: what this point's own prompts reuse, sent in order into an unbounded
  cache: a prompt sent before hits whole 16-token blocks of itself, at most its length - 1
  tokens (as vLLM counts), and a first send hits nothing;
- the measured one: vLLM's ``prefix_cache_hits / prefix_cache_queries`` counters over the
  point, else the per-request ``usage.prompt_tokens_details.cached_tokens`` (SGLang with
  ``--enable-cache-report``, vLLM with ``--enable-prompt-tokens-details``), each floored
  to whole blocks (SGLang's radix cache matches per token, so it also hits a chat
  template's first few tokens, which no design reuses); llama.cpp reports none, and the
  measured rate is then null.

A measured rate more than 5 points above the design is "cache-contaminated" (prompts
reused from an earlier point, start or run); more than 5 points below is "cache-evicted"
(the cache dropped what the design reuses), a flag of its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from servegate.bench.prefix import DesignCache, body_words
from servegate.bench.sample import RequestSample
from servegate.bench.server_metrics import Scrape

__all__ = ["FLAG_POINTS", "cache_state"]

FLAG_POINTS = 5.0  # percentage points between measured and design that flag a point
BLOCK = 16  # tokens: reuse is judged in vLLM's blocks, whole blocks only
VLLM_QUERIES = "vllm:prefix_cache_queries_total"
VLLM_HITS = "vllm:prefix_cache_hits_total"


def _design(samples: Sequence[RequestSample], bodies: Sequence[bytes], block: int) -> float | None:
    """The share of prompt tokens this point's own prompts reuse, in send order: each
    prompt's leading whole blocks (of words) that an earlier prompt of the point sent, so a
    resent prompt and the shared prefixes of the prefix and trace datasets both count."""
    cache = DesignCache(block)
    hits = total = 0
    for s in sorted(samples, key=lambda s: s.send_s):
        words = body_words(bodies[s.index % len(bodies)]) if bodies else []
        total += len(words)
        hits += cache.send(words)
    return hits / total if total else None


def _measured(
    samples: Sequence[RequestSample], before: Scrape | None, after: Scrape | None
) -> tuple[float | None, str | None, int]:
    """(rate, what measured it, the block it counts in)."""
    if before is not None and after is not None and VLLM_QUERIES in after.values:
        queries = after.values[VLLM_QUERIES] - before.values.get(VLLM_QUERIES, 0.0)
        hits = after.values.get(VLLM_HITS, 0.0) - before.values.get(VLLM_HITS, 0.0)
        if queries > 0:
            return hits / queries, "vllm:prefix_cache_hits/queries", BLOCK
    reported = [s for s in samples if s.usage_cached_tokens is not None and s.usage_input_tokens]
    if reported:
        # whole blocks, as the design counts: a shared head shorter than a block (a chat
        # template's first tokens, which SGLang's per-token radix cache matches) is no reuse
        cached = sum((s.usage_cached_tokens or 0) // BLOCK * BLOCK for s in reported)
        prompt = sum(s.usage_input_tokens or 0 for s in reported)
        return cached / prompt, "usage.prompt_tokens_details.cached_tokens", BLOCK
    return None, None, BLOCK


def cache_state(
    samples: Sequence[RequestSample],
    bodies: Sequence[bytes],
    *,
    mode: str,
    before: Scrape | None,
    after: Scrape | None,
    design: float | None = None,
) -> tuple[dict[str, Any], list[str]]:
    """The point's ``cache`` block and its warnings (contaminated, evicted); ``design``
    is the rate a workload states itself (multiturn sessions), else the prompts' reuse."""
    done = [s for s in samples if s.ok]
    measured, source, block = _measured(done, before, after)
    if design is None:
        design = _design(done, bodies, block)
    contaminated = evicted = False
    warnings: list[str] = []
    if measured is not None and design is not None:
        gap = (measured - design) * 100
        contaminated = gap > FLAG_POINTS
        evicted = -gap > FLAG_POINTS
        if contaminated:
            warnings.append(
                f"cache-contaminated: the server's prefix cache held {measured:.1%} of the "
                f"prompt tokens where this point's prompts imply {design:.1%}; it measured a "
                "warm cache (prompts sent before by an earlier point or run): use --cache "
                "isolate, another --seed, or a fresh server."
            )
        if evicted:
            warnings.append(
                f"cache-evicted: the server's prefix cache held {measured:.1%} of the prompt "
                f"tokens where this point's prompts imply {design:.1%}; it evicted what the "
                "workload reuses (KV capacity)."
            )
    block_json = {
        "mode": mode,
        "design_hit_rate": design,
        "measured_hit_rate": measured,
        "measured_by": source,
        "contaminated": contaminated,
        "evicted": evicted,
    }
    return block_json, warnings
