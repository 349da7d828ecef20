"""The HTML report: one self-contained file with the verdict table and the plots.

plotly.js is embedded inline, so the file opens offline, from a mail attachment or a
copied results folder, with no CDN. Plots: output throughput by load point per variant
with interval bars, TTFT and ITL distributions per variant (boxes from precomputed
quantiles, which keeps the file small however many requests were measured), and each
variant's startup timeline by phase, with the server's CPU, RSS and GPU memory under it
when the store holds the start's telemetry.
Where the points' energy was measured: throughput per GPU against per user
(report/energy.py). Tables: the verdict table (throughput with the
change of TTFT p99 and TPOT p99 under it), latency and startup against the baseline, the
A/A noise floor, the variants not compared and why, and why each failed variant failed.
plotly is the ``html`` extra.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from servegate.errors import ServegateError, UsageError
from servegate.report import text
from servegate.report.arrivals import arrivals_cell
from servegate.report.bootstrap import interval, mean, seeded_rng
from servegate.report.capacity_html import capacity_figure, capacity_section
from servegate.report.compare import HEADLINE, Report, VariantSummary
from servegate.report.energy import energy_section, frontier_figure
from servegate.report.slo import slo_cell
from servegate.store import Store
from servegate.telemetry.model import Snapshot

# One colour per variant, in order (the baseline first); phases have their own.
VARIANT_COLOURS = ("#1f4e9c", "#e8710a", "#12939a", "#9c27b0", "#c2185b", "#7cb342", "#5d4037")
PHASE_COLOURS = (
    "#90caf9",
    "#ffcc80",
    "#a5d6a7",
    "#ce93d8",
    "#f48fb1",
    "#fff59d",
    "#b0bec5",
    "#80deea",
    "#bcaaa4",
    "#c5e1a5",
    "#ffab91",
    "#9fa8da",
)
_CALL_CLASS = {"better": "better", "worse": "worse"}

_STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 24px 32px;
       color: #1d1d1f; max-width: 1200px; }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 17px; margin: 28px 0 8px; }
.meta, .note { color: #555; font-size: 13px; }
table { border-collapse: collapse; font-size: 13px; }
th, td { border-bottom: 1px solid #ddd; padding: 5px 10px; text-align: right; vertical-align: top; }
th:first-child, td:first-child, td.l, th.l { text-align: left; }
td:first-child { white-space: nowrap; }
td .d { display: block; font-size: 12px; color: #666; white-space: nowrap; }
.better { color: #1b7f3b !important; } .worse { color: #b3261e !important; }
.bad { color: #b3261e; font-weight: 600; } .hint { display: block; color: #666; font-size: 12px; }
ul.lines { font-family: ui-monospace, monospace; font-size: 13px; padding-left: 18px; }
pre { background: #f6f6f6; padding: 8px; font-size: 12px; overflow-x: auto; }
.warn { color: #8a5a00; }
"""


def require_plotly() -> Any:
    """plotly.graph_objects, or UsageError naming the extra that provides it."""
    try:
        import plotly.graph_objects as go
    except ImportError:
        raise UsageError(
            "the HTML report needs plotly; install it with pip install 'servegate[html]'."
        ) from None
    return go


def _colour(report: Report, name: str) -> str:
    return VARIANT_COLOURS[report.data.variants.index(name) % len(VARIANT_COLOURS)]


def _translucent(colour: str, alpha: float = 0.35) -> str:
    """``#rrggbb`` as ``rgba(...)``: box fills let their outline and median show."""
    red, green, blue = (int(colour[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({red}, {green}, {blue}, {alpha})"


def _throughput_figure(go: Any, report: Report) -> Any:
    fig = go.Figure()
    loads = list(report.loads)
    for row in report.variants:
        if not row.loads:
            continue
        xs, ys, up, down = [], [], [], []
        for load in loads:
            summary = row.loads.get(load)
            if summary is None or summary.throughput_mean is None:
                continue
            values = np.asarray(summary.throughput_values, dtype=np.float64)
            span = interval(
                HEADLINE.nested(report.data, row.name, load),  # by start, then repeat
                stat=mean,
                confidence=report.confidence,
                resamples=report.resamples,
                rng=seeded_rng(report.seed, row.name, load, "plot"),
            )
            xs.append(load)
            ys.append(summary.throughput_mean)
            up.append(0.0 if span is None else span[1] - summary.throughput_mean)
            down.append(0.0 if span is None else summary.throughput_mean - span[0])
            fig.add_trace(
                go.Scatter(
                    x=[load] * values.size,
                    y=values,
                    mode="markers",
                    marker={"color": _colour(report, row.name), "size": 5, "opacity": 0.45},
                    showlegend=False,
                    hovertemplate=f"{html.escape(row.name)} run: %{{y:.1f}} tok/s<extra></extra>",
                )
            )
        fig.add_trace(
            go.Scatter(
                x=xs,
                y=ys,
                name=row.name,
                mode="lines+markers",
                line={"color": _colour(report, row.name), "width": 3},
                marker={"size": 9},
                error_y={"type": "data", "symmetric": False, "array": up, "arrayminus": down},
                hovertemplate=f"{html.escape(row.name)}: %{{y:.1f}} tok/s<extra></extra>",
            )
        )
    fig.update_layout(
        title=f"Output throughput by load point (mean of repeats, "
        f"{text.confidence_label(report)} interval)",
        xaxis={"title": "load point", "type": "category", "categoryarray": loads},
        yaxis={"title": "output tokens/s", "rangemode": "tozero"},
    )
    return fig


def _latency_figure(go: Any, report: Report, which: str) -> Any:
    fig = go.Figure()
    for name in report.data.variants:
        stats: dict[str, list[float]] = {k: [] for k in ("q1", "median", "q3", "lo", "hi", "mean")}
        xs = []
        for load in report.loads:
            samples = report.data.samples.get((name, load))
            if samples is None:
                continue
            values = samples.ttft_ms if which == "ttft" else samples.itl_ms
            values = values[np.isfinite(values)]
            if values.size == 0:
                continue
            q = np.quantile(values, [0.01, 0.25, 0.5, 0.75, 0.99])
            xs.append(load)
            for key, value in zip(("lo", "q1", "median", "q3", "hi"), q, strict=True):
                stats[key].append(float(value))
            stats["mean"].append(float(values.mean()))
        if not xs:
            continue
        fig.add_trace(
            go.Box(
                x=xs,
                q1=stats["q1"],
                median=stats["median"],
                q3=stats["q3"],
                lowerfence=stats["lo"],
                upperfence=stats["hi"],
                mean=stats["mean"],
                name=name,
                marker={"color": _colour(report, name)},
                fillcolor=_translucent(_colour(report, name)),
                line={"color": _colour(report, name), "width": 2},
            )
        )
    label = "Time to first token" if which == "ttft" else "Inter-token latency (chunk gaps)"
    fig.update_layout(
        title=f"{label} (ms): box p25-p75, line median, whiskers p1-p99",
        boxmode="group",
        xaxis={"title": "load point", "type": "category", "categoryarray": list(report.loads)},
        yaxis={"title": "ms", "rangemode": "tozero"},
    )
    return fig


def _timeline_figure(
    go: Any, report: Report, series: Mapping[str, Sequence[Snapshot]] | None = None
) -> Any:
    """Each variant's startup phases; with telemetry, its CPU, RSS and GPU memory under them."""
    series = {name: snaps for name, snaps in (series or {}).items() if snaps}
    curves = _CURVES if series else ()
    fig = _timeline_canvas(go, len(curves))
    for trace in _phase_bars(go, report):
        _add(fig, curves, trace)
    ends = [(row, row.timeline_total_s) for row in report.variants if row.timeline_total_s]
    _add(fig, curves, _verdict_marks(go, ends))
    names = [row.name for row in report.variants if row.timeline or row.timeline_total_s]
    phase_ends = [p.end_s for row in report.variants for p in row.timeline if p.end_s]
    longest = max([end for _, end in ends if end] + phase_ends + [1.0])
    timeline_h = 140 + 45 * max(len(names), 1)
    fig.update_layout(
        title="Startup timeline by phase (cold start; s since launch)"
        + (", with the server's resources under it" if curves else ""),
        barmode="overlay",
        yaxis={"categoryarray": list(reversed(names)), "type": "category"},
        height=timeline_h + 150 * len(curves),
    )
    fig.update_xaxes(range=[0, longest * 1.25])
    if curves:
        fig.update_xaxes(title_text="seconds since launch", row=1 + len(curves), col=1)
    else:
        fig.update_xaxes(title_text="seconds since launch")
    _add_resource_curves(go, fig, report, series, curves)
    return fig


def _timeline_canvas(go: Any, curves: int) -> Any:
    """One plot, or the timeline over ``curves`` rows sharing its time axis."""
    if not curves:
        return go.Figure()
    from plotly.subplots import make_subplots

    return make_subplots(
        rows=1 + curves,
        cols=1,
        shared_xaxes=True,
        vertical_spacing=0.03,
        row_heights=[2.0] + [1.0] * curves,
    )


def _phase_bars(go: Any, report: Report) -> list[Any]:
    """One horizontal bar trace per phase name, a bar per variant that went through it."""
    phase_names: list[str] = []
    for row in report.variants:
        for phase in row.timeline:
            if phase.name not in phase_names:
                phase_names.append(phase.name)
    bars = []
    for index, phase_name in enumerate(phase_names):
        ys, bases, widths = [], [], []
        for row in report.variants:
            for phase in row.timeline:
                if phase.name != phase_name:
                    continue
                end = phase.end_s if phase.end_s is not None else row.timeline_total_s
                if end is None:
                    continue
                ys.append(row.name)
                bases.append(phase.start_s)
                widths.append(max(end - phase.start_s, 0.0))
        bars.append(
            go.Bar(
                y=ys,
                x=widths,
                base=bases,
                orientation="h",
                name=phase_name,
                marker={"color": PHASE_COLOURS[index % len(PHASE_COLOURS)]},
                hovertemplate=f"{html.escape(phase_name)}: %{{base:.1f}}-"
                "%{x:.1f} s long<extra></extra>",
            )
        )
    return bars


def _verdict_marks(go: Any, ends: Sequence[tuple[VariantSummary, float | None]]) -> Any:
    """Where each start ended: READY (a diamond) or its failure (a cross), labelled."""
    return go.Scatter(
        y=[row.name for row, _ in ends],
        x=[end for _, end in ends],
        mode="markers+text",
        text=[_end_label(row) for row, _ in ends],
        textposition="middle right",
        marker={
            "symbol": ["x" if row.kind else "diamond" for row, _ in ends],
            "size": 13,
            "color": ["#b3261e" if row.kind else "#1b7f3b" for row, _ in ends],
        },
        name="verdict",
        showlegend=False,
    )


def _add_resource_curves(
    go: Any,
    fig: Any,
    report: Report,
    series: Mapping[str, Sequence[Snapshot]],
    curves: Sequence[tuple[str, Callable[[Snapshot], float]]],
) -> None:
    """Each resource curve in its row under the timeline, a line per variant's series."""
    for index, (label, value) in enumerate(curves, start=2):
        for name, snaps in series.items():
            colour = _colour(report, name)
            fig.add_trace(
                go.Scatter(
                    x=[s.t_s for s in snaps],
                    y=[value(s) for s in snaps],
                    mode="lines",
                    line={"color": colour, "width": 1.5},
                    name=f"{name} {label}",
                    legendgroup=name,
                    showlegend=False,
                    hovertemplate=f"{html.escape(name)}: %{{y:.1f}} {html.escape(label)}"
                    " at %{x:.1f} s<extra></extra>",
                ),
                row=index,
                col=1,
            )
        fig.update_yaxes(title_text=label, rangemode="tozero", row=index, col=1)


def _gpu_gib(snap: Snapshot) -> float:
    """GPU memory held by the server's processes, or used on its GPUs when NVML names none."""
    tree = sum(g.mem_tree_bytes for g in snap.gpus)
    return (tree or sum(g.mem_used_bytes for g in snap.gpus)) / 2**30


# the resource curves under the timeline: (axis label, value of a snapshot)
_CURVES: tuple[tuple[str, Callable[[Snapshot], float]], ...] = (
    ("CPU %", lambda s: s.cpu_pct),
    ("RSS GiB", lambda s: s.rss_bytes / 2**30),
    ("GPU GiB", _gpu_gib),
)


def _add(fig: Any, curves: Sequence[object], trace: Any) -> None:
    """A trace of the timeline itself: row 1 when the curves are under it."""
    if curves:
        fig.add_trace(trace, row=1, col=1)
    else:
        fig.add_trace(trace)


def startup_series(report: Report) -> dict[str, list[Snapshot]]:
    """The stored telemetry of the start each variant's timeline shows (its cold start).

    Read from the campaign's store; variants without a stored series are left out.
    """
    shown: dict[str, int] = {}
    for row in report.variants:
        starts = report.data.attempts_of(row.shared_server_of or row.name)
        attempt = next((a for a in starts if a.cold), starts[0] if starts else None)
        if attempt is not None and (row.timeline or row.timeline_total_s):
            shown[row.name] = attempt.id
    if not shown or not Path(report.data.db_path).exists():
        return {}
    try:
        with Store.open(report.data.db_path, read_only=True) as store:
            found = {name: store.telemetry(aid) for name, aid in shown.items()}
    except ServegateError:
        return {}  # the curves are an addition: a report without them is still a report
    return {name: snaps for name, snaps in found.items() if snaps}


def _end_label(row: VariantSummary) -> str:
    if row.kind or row.status in {"crash", "timeout"}:
        return f"{text.RUN_STATUS.get(row.status, row.status)} ({row.kind or '?'})"
    return f"READY {row.timeline_total_s:.1f} s" if row.timeline_total_s else "READY"


def _verdict_table(report: Report) -> str:
    head = "".join(f"<th>{html.escape(load)} tok/s</th>" for load in report.loads)
    rows = []
    for row in report.variants:
        status = html.escape(text.status(row))
        if row.kind or row.status in {"crash", "timeout", "failed"}:
            status = f'<span class="bad">{status}</span>'
        if row.hint:
            status += f'<span class="hint">{html.escape(row.hint)}</span>'
        cells = []
        for load in report.loads:
            summary = row.loads.get(load)
            if summary is None or summary.throughput_mean is None:
                cells.append("<td>–</td>")
                continue
            cell = html.escape(text.number(summary.throughput_mean))
            comp = report.get(row.name, load, HEADLINE.key)
            if not row.is_baseline and row.reference is None:
                cell += f'<span class="d">{html.escape(text.not_compared_words(row))}</span>'
            elif comp is not None and not row.is_baseline:
                css = _CALL_CLASS.get(comp.call, "")
                words = "" if comp.call == "1 run, no interval" else f", {comp.call}"
                cell += (
                    f'<span class="d {css}">{html.escape(text.delta(comp.estimate))}'
                    f"{html.escape(words)}</span>"
                )
                for words, verdict in text.tail_cells(report, row, load):
                    css = _CALL_CLASS.get(verdict, "")
                    cell += f'<span class="d {css}">{html.escape(words)}</span>'
            slo = slo_cell(report.data, row.name, load)
            if slo is not None:
                css = _CALL_CLASS.get("better" if slo.all_met else "worse", "")
                cell += f'<span class="d {css}">{html.escape(slo.words)}</span>'
            arrivals = arrivals_cell(report.data, row.name, load)
            if arrivals is not None:
                cell += f'<span class="d">{html.escape(arrivals.words)}</span>'
            cells.append(f"<td>{cell}</td>")
        name = f"<b>{html.escape(row.name)}</b>" if row.is_baseline else html.escape(row.name)
        rows.append(
            f"<tr><td>{name}</td><td class='l'>{status}</td>"
            f"<td>{html.escape(text.startup(row))}</td>{''.join(cells)}</tr>"
        )
    closing = []
    for row in report.variants:
        if row.is_baseline:
            continue
        closing.append(text.closing_line(report, row))
        tail = text.tail_line(report, row)
        if tail is not None:
            closing.append(tail)
    lines = "".join(f"<li>{html.escape(line)}</li>" for line in closing)
    return (
        f"<table><tr><th>variant</th><th class='l'>status</th><th>startup</th>{head}</tr>"
        f"{''.join(rows)}</table><ul class='lines'>{lines}</ul>"
    )


def _latency_table(report: Report) -> str:
    rows = []
    for comp in report.comparisons:
        if comp.metric.key == HEADLINE.key or comp.estimate is None:
            continue
        est = comp.estimate
        css = _CALL_CLASS.get(comp.call, "")
        name = comp.variant
        if comp.reference not in ("", report.baseline):
            name += f" (vs {comp.reference})"
        rows.append(
            f"<tr><td>{html.escape(name)}</td><td>{html.escape(comp.load)}</td>"
            f"<td class='l'>{html.escape(comp.metric.label)}</td>"
            f"<td>{text.number(est.baseline)}</td><td>{text.number(est.variant)}</td>"
            f"<td class='{css}'>{html.escape(text.delta(est))}</td>"
            f"<td class='{css}'>{html.escape(comp.call)}</td></tr>"
        )
    if not rows:
        return ""
    return (
        "<h2>Latency vs baseline (ms, lower is better)</h2><table><tr><th>variant</th>"
        f"<th>load</th><th class='l'>metric</th><th>{html.escape(report.baseline)}</th>"
        f"<th>variant</th><th>change</th><th>call</th></tr>{''.join(rows)}</table>"
    )


def _startup_table(report: Report) -> str:
    rows = []
    for comp in report.startup:
        if comp.estimate is None:
            continue
        est = comp.estimate
        css = _CALL_CLASS.get(comp.call, "")
        rows.append(
            f"<tr><td>{html.escape(comp.variant)}</td><td class='l'>{comp.temperature}</td>"
            f"<td>{html.escape(text.seconds(est.baseline))}</td>"
            f"<td>{html.escape(text.seconds(est.variant))}</td>"
            f"<td class='{css}'>{html.escape(text.delta(est))}</td>"
            f"<td class='{css}'>{html.escape(comp.call)}</td></tr>"
        )
    if not rows:
        return ""
    return (
        "<h3>Startup vs baseline (lower is better)</h3><table><tr><th>variant</th>"
        f"<th class='l'>start</th><th>{html.escape(report.baseline)}</th><th>variant</th>"
        f"<th>change</th><th>call</th></tr>{''.join(rows)}</table>"
    )


def _noise_table(report: Report) -> str:
    rows = []
    for floor in report.noise_floor:
        if floor.estimate is None:
            continue
        est = floor.estimate
        rows.append(
            f"<tr><td>{html.escape(floor.load)}</td>"
            f"<td class='l'>{html.escape(floor.metric.label)} ({floor.metric.unit})</td>"
            f"<td>{text.number(est.baseline)}</td><td>{text.number(est.variant)}</td>"
            f"<td>{html.escape(text.delta(est))}</td><td>{html.escape(floor.call)}</td></tr>"
        )
    if not rows:
        return ""
    splits = "; ".join(sorted({floor.split for floor in report.noise_floor}))
    return (
        f"<h2>Noise floor: {html.escape(report.baseline)} against itself (A/A)</h2>"
        f"<p class='note'>Halves of the baseline: {html.escape(splits)}. A change smaller "
        "than this is what the same configuration differs from itself by.</p>"
        "<table><tr><th>load</th><th class='l'>metric</th><th>first half</th>"
        f"<th>second half</th><th>change</th><th>call</th></tr>{''.join(rows)}</table>"
    )


def _not_compared(report: Report) -> str:
    rows = [r for r in report.variants if r.not_compared and not r.failed]
    if not rows:
        return ""
    items = "".join(
        f"<li><b>{html.escape(r.name)}</b>: {html.escape(r.not_compared or '')}</li>" for r in rows
    )
    return f"<h2>Not compared</h2><ul>{items}</ul>"


def _placement(report: Report) -> str:
    """Which node measured what (a campaign on a cluster only)."""
    lines = text.placement_lines(report)
    if not lines:
        return ""
    items = "".join(f"<li>{html.escape(line.strip())}</li>" for line in lines[1:])
    return f"<h2>Where each start ran</h2><ul>{items}</ul>"


def _failures(report: Report) -> str:
    parts = []
    for row in report.variants:
        if not (row.failed or row.earlier_failures):
            continue
        part = f"<h3>{html.escape(row.name)}: {html.escape(text.status(row))}</h3>"
        if row.failed:
            reason = html.escape((row.reason or "no reason was recorded").rstrip("."))
            hint = f" Hint: {html.escape(row.hint)}." if row.hint else ""
            part += f"<p>{reason}.{hint} Not compared.</p>"
        if row.earlier_failures:
            part += (
                f"<p>Earlier starts that failed: {html.escape(', '.join(row.earlier_failures))}"
                " (the last start decides the status).</p>"
            )
        if row.tail:
            part += f"<pre>{html.escape(chr(10).join(row.tail))}</pre>"
        parts.append(part)
    return "<h2>Variants that did not finish</h2>" + "".join(parts) if parts else ""


def _search_section(report: Report) -> str:
    """A tune campaign: its Pareto front, importances and crash map."""
    from servegate.report.search import search_html

    return "" if report.search is None else search_html(report.search)


def render_html(report: Report) -> str:
    """The whole report as one HTML document with plotly.js inline."""
    go = require_plotly()
    figures = [
        ("throughput", _throughput_figure(go, report), 420),
        ("ttft", _latency_figure(go, report, "ttft"), 380),
        ("itl", _latency_figure(go, report, "itl"), 380),
        ("startup", _timeline_figure(go, report, startup_series(report)), None),
    ]
    frontier = frontier_figure(go, report.data, colour=lambda name: _colour(report, name))
    if frontier is not None:
        figures.append(("energy", frontier, 460))
    capacity = capacity_figure(go, report, colour=lambda name: _colour(report, name))
    if capacity is not None:
        figures.append(("capacity", capacity, 460))
    blocks = []
    for index, (div_id, fig, height) in enumerate(figures):
        fig.update_layout(template="plotly_white", margin={"l": 60, "r": 30, "t": 50, "b": 50})
        if height:
            fig.update_layout(height=height)
        blocks.append(
            fig.to_html(
                full_html=False,
                include_plotlyjs=index == 0,  # plotly.js inline once, no CDN
                div_id=f"plot-{div_id}",
                config={"displaylogo": False, "responsive": True},
            )
        )
    info = report.campaign
    title = f"servegate: campaign {info.name}"
    metrics = ", ".join(m.label for m in report.metrics)
    single = text.single_start_note(report)
    note = f'<p class="note warn">{html.escape(single)}</p>' if single else ""
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>{_STYLE}</style></head>
<body>
<h1>Campaign {html.escape(info.name)}</h1>
<p class="meta">baseline <b>{html.escape(report.baseline)}</b> · status {html.escape(info.status)}
 · started {html.escape(info.created_at)} · report {html.escape(report.generated_at)}
 · metrics compared: {html.escape(metrics)}</p>
<h2>Output throughput (tok/s), change vs {html.escape(report.baseline)}
 [{text.confidence_label(report)} interval]</h2>
{_verdict_table(report)}
{blocks[0]}
<h2>Latency distributions</h2>
{blocks[1]}
{blocks[2]}
<h2>Startup</h2>
{blocks[3]}
{_startup_table(report)}
{capacity_section([f[0] for f in figures], blocks, report)}
{_search_section(report)}
{energy_section([f[0] for f in figures], blocks, report.data)}
{_latency_table(report)}
{_noise_table(report)}
{_not_compared(report)}
{_failures(report)}
{_placement(report)}
{note}
<p class="note">{html.escape(text.method_note(report))}</p>
</body></html>
"""
