"""Throughput per GPU against throughput per user: the frontier of a campaign's points.

Where a point's energy was measured (`servegate.telemetry.energy`: the GPUs it counted
are known), each variant's loads become one curve, as the InferenceMAX charts draw
them: x the output tokens per second one request sees (1000 / its TPOT p50), y the
output throughput per GPU. With ``[slo]``, a point that met it is filled and one that
missed it is open, and a TPOT target is drawn as the vertical line it puts on x
(1000 / bound): the frontier right of the line and filled is what the SLO allows.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from servegate.report.data import CampaignData, load_sort_key

__all__ = ["FrontierPoint", "energy_section", "frontier_figure", "frontier_points"]


@dataclass(frozen=True, slots=True, kw_only=True)
class FrontierPoint:
    """One variant at one load, its repeats pooled (means)."""

    variant: str
    load: str
    per_user_tok_s: float
    per_gpu_tok_s: float
    joules_per_output_token: float | None
    gpus: int
    met: bool | None  # None: no [slo]


def frontier_points(data: CampaignData) -> list[FrontierPoint]:
    """The points whose energy was measured, a variant's repeats at a load pooled."""
    out = []
    for variant in data.variants:
        for load in sorted(
            {p.load for p in data.points if p.variant == variant}, key=load_sort_key
        ):
            users, gpus_tok, joules, counts, mets = [], [], [], [], []
            for point in data.points_of(variant, load):
                energy = point.detail.get("energy")
                if not isinstance(energy, dict) or energy.get("energy_j") is None:
                    continue
                gpus = len(energy.get("gpus") or ())
                tpot = point.summary.get("tpot_ms_p50", math.nan)
                tok_s = point.summary.get("output_throughput", math.nan)
                if not gpus or not _finite(tpot) or not _finite(tok_s) or not tpot:
                    continue
                users.append(1000.0 / float(tpot))
                gpus_tok.append(float(tok_s) / gpus)
                counts.append(gpus)
                if energy.get("joules_per_output_token") is not None:
                    joules.append(float(energy["joules_per_output_token"]))
                slo = point.detail.get("slo")
                if isinstance(slo, dict):
                    mets.append(bool(slo.get("met")))
            if not users:
                continue
            out.append(
                FrontierPoint(
                    variant=variant,
                    load=load,
                    per_user_tok_s=sum(users) / len(users),
                    per_gpu_tok_s=sum(gpus_tok) / len(gpus_tok),
                    joules_per_output_token=sum(joules) / len(joules) if joules else None,
                    gpus=max(counts),
                    met=all(mets) if mets else None,
                )
            )
    return out


def tpot_bounds(data: CampaignData) -> list[tuple[str, float]]:
    """The TPOT targets of the campaign's points: (target text, bound in ms)."""
    found: dict[str, float] = {}
    for point in data.points:
        slo = point.detail.get("slo")
        if not isinstance(slo, dict):
            continue
        for target in slo.get("targets") or ():
            if isinstance(target, dict) and target.get("metric") == "tpot":
                bound = target.get("bound_ms")
                if _finite(bound) and bound:
                    found[str(target.get("target"))] = float(bound)
    return sorted(found.items())


def frontier_figure(go: Any, data: CampaignData, *, colour: Callable[[str], str]) -> Any | None:
    """The plotly figure; None when no point's energy was measured."""
    points = frontier_points(data)
    if not points:
        return None
    fig = go.Figure()
    for variant in data.variants:
        mine = [p for p in points if p.variant == variant]
        if not mine:
            continue
        symbols = ["circle" if p.met is None or p.met else "circle-open" for p in mine]
        fig.add_trace(
            go.Scatter(
                x=[p.per_user_tok_s for p in mine],
                y=[p.per_gpu_tok_s for p in mine],
                mode="lines+markers+text",
                name=variant,
                text=[p.load for p in mine],
                textposition="top center",
                marker={"symbol": symbols, "size": 10, "color": colour(variant)},
                line={"color": colour(variant)},
                customdata=[[p.gpus, _joules(p), _met(p)] for p in mine],
                hovertemplate="%{text}: %{y:.1f} tok/s per GPU (%{customdata[0]} GPU), "
                "%{x:.1f} tok/s per user, %{customdata[1]} J/token, %{customdata[2]}"
                "<extra>" + html.escape(variant) + "</extra>",
            )
        )
    for text, bound in tpot_bounds(data):
        fig.add_vline(
            x=1000.0 / bound,
            line_dash="dash",
            line_color="#b3261e",
            annotation_text=f"SLO {text}",
            annotation_position="top right",
        )
    fig.update_layout(
        title="Output throughput per GPU against throughput per user (filled: SLO met)",
        xaxis_title="output tok/s per user (1000 / TPOT p50)",
        yaxis_title="output tok/s per GPU",
    )
    return fig


def energy_section(ids: Sequence[str], blocks: Sequence[str], data: CampaignData) -> str:
    """The report's energy heading, the frontier plot and a J/token line; "" without energy."""
    if "energy" not in ids:
        return ""
    rows = "".join(
        f"<tr><td>{html.escape(p.variant)}</td><td>{html.escape(p.load)}</td>"
        f"<td>{p.per_gpu_tok_s:,.1f}</td><td>{p.per_user_tok_s:,.1f}</td>"
        f"<td>{_joules(p)}</td><td>{p.gpus}</td></tr>"
        for p in frontier_points(data)
    )
    table = (
        "<table><tr><th>variant</th><th>load</th><th>tok/s per GPU</th>"
        f"<th>tok/s per user</th><th>J/output token</th><th>GPUs</th></tr>{rows}</table>"
    )
    plot = blocks[ids.index("energy")]
    return f"<h2>Energy: throughput per GPU against per user</h2>\n{plot}\n{table}"


def _joules(point: FrontierPoint) -> str:
    value = point.joules_per_output_token
    return "n/a" if value is None else f"{value:.4g}"


def _met(point: FrontierPoint) -> str:
    return {None: "no SLO", True: "SLO met", False: "SLO not met"}[point.met]


def _finite(value: object) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value)
