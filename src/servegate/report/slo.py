"""A campaign's points against its ``[slo]``: met in how many repeats, and the goodput.

Each stored point keeps its ``slo`` object (`servegate.bench.slo.SloResult.to_json`) in
its detail; the report pools a variant's repeats at one load into one `SloCell`, which
every format shows beside the throughput.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from servegate.report.data import CampaignData


@dataclass(frozen=True, slots=True, kw_only=True)
class SloCell:
    """One variant at one load: repeats that met the SLO, and their mean goodput."""

    met: int
    of: int
    goodput_tok_s: float | None  # mean over the repeats that report one
    slo: str  # the targets, as bench --slo writes them

    @property
    def all_met(self) -> bool:
        """Every repeat met the SLO."""
        return self.met == self.of

    @property
    def words(self) -> str:
        """``SLO met 3/3, goodput 412.0 tok/s`` or ``SLO not met 1/3, ...``."""
        head = "SLO met" if self.all_met else "SLO not met"
        good = "" if self.goodput_tok_s is None else f", goodput {self.goodput_tok_s:,.1f} tok/s"
        return f"{head} {self.met}/{self.of}{good}"

    def to_json(self) -> dict[str, Any]:
        """The cell as the ``slo`` object of a load in the report's JSON."""
        return {
            "slo": self.slo,
            "met": self.met,
            "of": self.of,
            "goodput_output_tokens_per_s_mean": self.goodput_tok_s,
        }


def slo_cell(data: CampaignData, variant: str, load: str) -> SloCell | None:
    """The SLO cell of ``variant`` at ``load``; None when its points carry no SLO."""
    found = [p.detail.get("slo") for p in data.points_of(variant, load)]
    slos = [s for s in found if isinstance(s, dict)]
    if not slos:
        return None
    goodputs = [
        float(s["goodput"]["output_tokens_per_s"])
        for s in slos
        if isinstance(s.get("goodput"), dict)
        and s["goodput"].get("output_tokens_per_s") is not None
    ]
    settings = [p.detail.get("settings", {}) for p in data.points_of(variant, load)]
    text = next((str(s["slo"]) for s in settings if isinstance(s, dict) and s.get("slo")), "")
    return SloCell(
        met=sum(1 for s in slos if s.get("met")),
        of=len(slos),
        goodput_tok_s=sum(goodputs) / len(goodputs) if goodputs else None,
        slo=text,
    )
