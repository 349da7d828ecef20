"""How precisely each comparison is known so far: what sequential stopping asks.

A runner that stops when every interval is narrow enough (``--until-precision 2%``)
calls ``half_widths`` after each round of starts, with the points stored so far, and
stops once each value is at most the goal:

    with Store.open("servegate.db") as store:
        widths = half_widths(store, "fusion")
    done = all(w.half_width is not None and w.half_width <= 0.02 for w in widths)

The intervals are those of the report (the same hierarchical bootstrap, seed and
references), so a campaign stopped this way reports intervals of the precision asked.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from servegate.report.compare import HEADLINE, compare, metric
from servegate.report.data import load_campaign, resolve_campaign
from servegate.store import Store

__all__ = ["Precision", "half_widths"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Precision:
    """Half the width of one comparison's ratio interval (0.02: known to +/- 2 %)."""

    variant: str
    reference: str  # the variant compared with (the baseline, or its workload twin)
    load: str
    metric: str
    half_width: float | None  # None: no interval yet (a side has a single value)
    starts_baseline: int
    starts_variant: int


def half_widths(
    store: Store,
    campaign: str | int | None = None,
    *,
    metrics: Sequence[str] = (HEADLINE.key,),
    confidence: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
) -> list[Precision]:
    """Each compared interval's half-width, from the points stored so far.

    Args:
        store: the open store.
        campaign: name or id; None for the newest campaign.
        metrics: metric keys to look at (output throughput by default; any of
            ``servegate.report.METRICS``).
        confidence, resamples, seed: as in ``build_report``.

    Failed variants and variants on another workload without a reference are not
    compared, so they have no entry; a variant with no data at a load has none there.
    """
    cid = campaign if isinstance(campaign, int) else resolve_campaign(store, campaign).id
    chosen = [metric(key) for key in metrics]
    report = compare(
        load_campaign(store, cid),
        confidence=confidence,
        resamples=resamples,
        seed=seed,
        metrics=chosen,
    )
    out = []
    for comp in report.comparisons:
        est = comp.estimate
        if est is None:
            continue
        out.append(
            Precision(
                variant=comp.variant,
                reference=comp.reference,
                load=comp.load,
                metric=comp.metric.key,
                half_width=est.half_width,
                starts_baseline=est.starts_baseline,
                starts_variant=est.starts_variant,
            )
        )
    return out
