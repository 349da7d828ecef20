"""A campaign's open-loop points: the rate offered against the rate achieved.

Each stored point's summary keeps ``offered_rate`` (the schedule's, null in a closed
loop), ``sent_rate`` and ``achieved_rate`` (`servegate.bench.metrics.rates`); the report
pools a variant's repeats at one load into one `ArrivalsCell`, shown beside the
throughput, so a rate the server could not keep up with is seen where it is read.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from servegate.report.data import CampaignData


@dataclass(frozen=True, slots=True, kw_only=True)
class ArrivalsCell:
    """One variant at one open-loop load: offered, sent and achieved requests per second
    (means over the repeats)."""

    offered: float
    sent: float | None
    achieved: float
    burstiness: float  # 1: Poisson (also rows stored before --burstiness)

    @property
    def words(self) -> str:
        """``offered 8/s, achieved 7.9/s`` (with the burstiness when not Poisson)."""
        shape = "" if self.burstiness == 1 else f" (burstiness {self.burstiness:g})"
        return f"offered {self.offered:g}/s{shape}, achieved {self.achieved:,.2f}/s"

    def to_json(self) -> dict[str, Any]:
        """The cell as the ``arrivals`` object of a load in the report's JSON."""
        return {
            "offered_rate": self.offered,
            "sent_rate": self.sent,
            "achieved_rate": self.achieved,
            "burstiness": self.burstiness,
        }


def arrivals_cell(data: CampaignData, variant: str, load: str) -> ArrivalsCell | None:
    """The arrivals of ``variant`` at ``load``; None in a closed loop or for rows stored
    before offered and achieved rates were."""
    points = data.points_of(variant, load)
    offered = _mean([p.summary.get("offered_rate") for p in points])
    achieved = _mean([p.summary.get("achieved_rate") for p in points])
    if offered is None or achieved is None:
        return None
    settings = [p.detail.get("settings") for p in points]
    burst = next((s.get("burstiness") for s in settings if isinstance(s, dict)), None)
    return ArrivalsCell(
        offered=offered,
        sent=_mean([p.summary.get("sent_rate") for p in points]),
        achieved=achieved,
        burstiness=float(burst) if isinstance(burst, int | float) else 1.0,
    )


def _mean(values: list[Any]) -> float | None:
    kept = [float(v) for v in values if isinstance(v, int | float) and math.isfinite(v)]
    return sum(kept) / len(kept) if kept else None
