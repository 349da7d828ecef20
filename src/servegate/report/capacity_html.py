"""The HTML report's capacity section (find_max): latency against load with the SLO's
bounds and each variant's capacity with its interval over starts, and the table.

    fig = capacity_figure(go, report, colour=...)     # None without a search
    capacity_section(ids, blocks, report)             # the section's HTML
"""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from servegate.report.capacity import mean_interval, sentence

if TYPE_CHECKING:
    from servegate.report.compare import Report

__all__ = ["capacity_figure", "capacity_section"]

_DASHES = ("solid", "dot", "dash", "dashdot")


def _translucent(colour: str, alpha: float) -> str:
    red, green, blue = (int(colour[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({red},{green},{blue},{alpha})"


def capacity_figure(go: Any, report: Report, *, colour: Callable[[str], str]) -> Any | None:
    """Each variant's probes (every start): each target's value against load, the SLO's
    bounds as dashed lines, and each variant's capacity (the mean over starts) as a line
    with its interval over starts as a band; None without a search."""
    if not report.capacity_rows:
        return None
    fig = go.Figure()
    bounds: dict[str, float] = {}
    over = report.capacity_rows[0].over
    for row in report.capacity_rows:
        shade = colour(row.variant)
        series: dict[str, tuple[list[float], list[float]]] = {}
        for start in row.starts:
            for probe in start.probes:
                for target in (probe.get("slo") or {}).get("targets") or ():
                    if target.get("value_ms") is None:
                        continue
                    bounds[target["target"]] = float(target["bound_ms"])
                    xs, ys = series.setdefault(target["target"], ([], []))
                    xs.append(float(probe["load"]))
                    ys.append(float(target["value_ms"]))
        for k, (name, (xs, ys)) in enumerate(sorted(series.items())):
            order = np.argsort(xs)
            fig.add_trace(
                go.Scatter(
                    x=[xs[i] for i in order],
                    y=[ys[i] for i in order],
                    mode="markers+lines",
                    name=f"{row.variant}: {name}",
                    marker={"color": shade, "symbol": k},
                    line={"color": shade, "dash": _DASHES[k % len(_DASHES)], "width": 1},
                )
            )
        values = np.asarray([s.edge for s in row.starts], dtype=np.float64)
        if values.size:
            centre = float(values.mean())
            band = mean_interval(
                row, confidence=report.confidence, resamples=report.resamples, seed=report.seed
            )
            if band is not None and band[1] > band[0]:
                fig.add_vrect(
                    x0=band[0], x1=band[1], fillcolor=_translucent(shade, 0.15), line_width=0
                )
            fig.add_vline(
                x=centre,
                line={"color": shade, "width": 2},
                annotation_text=f"{row.variant}: {centre:g}",
            )
    for name, bound in bounds.items():
        fig.add_hline(
            y=bound, line={"color": "#888", "dash": "dash"}, annotation_text=f"SLO {name}"
        )
    fig.update_layout(
        title="Latency against load in each probe, the SLO's bounds (dashed), and each "
        "variant's capacity (line: mean over starts; band: its interval over starts)",
        xaxis={"title": over, "type": "log"},
        yaxis={"title": "ms", "type": "log"},
    )
    return fig


def capacity_section(ids: Sequence[str], blocks: Sequence[str], report: Report) -> str:
    """The section: each start's capacity, the comparisons, and the figure."""
    if not report.capacity_rows:
        return ""
    rows = "".join(
        f"<tr><td>{html.escape(row.variant)}</td><td>{html.escape(row.over)} at "
        f"{html.escape(row.slo)}</td><td>{html.escape('; '.join(s.words for s in row.starts))}"
        "</td></tr>"
        for row in report.capacity_rows
    )
    items = "".join(f"<li>{html.escape(sentence(c))}</li>" for c in report.capacity)
    figure = blocks[list(ids).index("capacity")] if "capacity" in ids else ""
    return (
        "<h2>Capacity under the SLO</h2>"
        "<table><tr><th>variant</th><th>search</th><th>capacity per start</th></tr>"
        f"{rows}</table><ul>{items}</ul>{figure}"
    )
