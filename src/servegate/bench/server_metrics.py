"""The engine's own counters, scraped from ``/metrics`` before and after a load point.

The difference of the cumulative counters tells what the server saw during the run:
tokens it took in and generated, and for speculative decoding the drafts and accepted
tokens, from which the mean acceptance length is ``1 + accepted / drafts`` (vLLM's
formula). SGLang exposes acceptance length only as a gauge of the latest value, which is
reported as it is. Metric names come from the engine profile; when the engine is not
known they are detected from the prefix of the names the server exposes (the profiles'
``metric_prefix``).
"""

from __future__ import annotations

import http.client
import urllib.error
from dataclasses import dataclass
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from servegate.bench.deadline import within
from servegate.engines import engine_of_metrics, get_profile

# Logical names whose value is a level, not a cumulative count: reported, never diffed.
GAUGES = frozenset({"running", "waiting", "spec_accept_length"})


@dataclass(frozen=True, slots=True, kw_only=True)
class Scrape:
    """One reading of ``/metrics``: every sample summed over its labels, by name."""

    values: dict[str, float]


def scrape(url: str, timeout_s: float = 5.0) -> Scrape | None:
    """Read and parse a Prometheus endpoint; None when it is absent, not Prometheus text,
    or not read whole within ``timeout_s``."""
    try:
        with within(timeout_s) as client, client.open(url) as resp:
            text = resp.read().decode("utf-8", "replace")
    except (urllib.error.URLError, http.client.HTTPException, OSError, ValueError):
        return None  # absent, refused, cut off mid-body (IncompleteRead), or too slow
    values: dict[str, float] = {}
    try:
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                values[sample.name] = values.get(sample.name, 0.0) + float(sample.value)
    except (ValueError, TypeError, IndexError):
        return None
    return Scrape(values=values) if values else None


def metric_names(engine: str | None, found: Scrape | None) -> dict[str, str]:
    """Logical -> Prometheus names from the engine profile (detected by prefix when None)."""
    if engine is None and found is not None:
        engine = engine_of_metrics(found.values)
    if engine is None:
        return {}
    profile = get_profile(engine)
    return {k: v for k, v in profile.metric_names.items() if v} | dict(profile.extra_metric_names)


def _value(scrape_: Scrape, name: str) -> float | None:
    """A metric's value, trying the name as given and with or without ``_total``."""
    for candidate in (name, name + "_total", name.removesuffix("_total")):
        if candidate in scrape_.values:
            return scrape_.values[candidate]
    return None


def server_deltas(
    before: Scrape | None, after: Scrape | None, names: dict[str, str], url: str | None
) -> dict[str, Any]:
    """The ``server_metrics`` dict of a point: counters before, after, deltas, acceptance."""
    if before is None or after is None or not names:
        return {"available": False, "url": url}
    counters: dict[str, dict[str, float]] = {}
    gauges: dict[str, float] = {}
    latency: dict[str, float] = {}
    for logical, prom in sorted(names.items()):
        a, b = _value(before, prom), _value(after, prom)
        if logical.endswith("_seconds"):
            mean = _histogram_mean_ms(before, after, prom)
            if mean is not None:
                latency[logical.removesuffix("_seconds") + "_ms_mean"] = mean
            continue
        if b is None:
            continue
        if logical in GAUGES:
            gauges[logical] = b
        elif a is not None:
            counters[logical] = {"before": a, "after": b, "delta": b - a}
    out: dict[str, Any] = {
        "available": True,
        "url": url,
        "counters": counters,
        "gauges": gauges,
        "server_latency_ms": latency,  # the server's own histogram means over the run
    }
    drafts = counters.get("spec_drafts", {}).get("delta")
    accepted = counters.get("spec_accepted_tokens", {}).get("delta")
    draft_tokens = counters.get("spec_draft_tokens", {}).get("delta")
    if drafts and accepted is not None:
        out["spec_acceptance_length"] = 1.0 + accepted / drafts
        if draft_tokens:
            out["spec_acceptance_rate"] = accepted / draft_tokens
    elif "spec_accept_length" in gauges:
        out["spec_acceptance_length"] = gauges["spec_accept_length"]
    return out


def _histogram_mean_ms(before: Scrape, after: Scrape, name: str) -> float | None:
    """The server's own mean of a latency histogram over the run, in ms."""
    total = [_value(x, name + "_sum") for x in (before, after)]
    count = [_value(x, name + "_count") for x in (before, after)]
    if None in total or None in count:
        return None
    n = count[1] - count[0]  # type: ignore[operator]
    return (total[1] - total[0]) / n * 1000.0 if n > 0 else None  # type: ignore[operator]
