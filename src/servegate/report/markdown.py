"""The markdown report, for a pull request or a notes file.

GitHub-flavoured tables: throughput by load point with the change vs baseline, each
latency metric with its call, startup cold and warm, then what stopped the variants that
did not start (with the log tail), and how the intervals were computed.
"""

from __future__ import annotations

from servegate.report import text
from servegate.report.compare import HEADLINE, METRICS, Report


def _esc(value: str) -> str:
    return value.replace("|", "\\|").replace("\n", " ")


def _table(header: list[str], rows: list[list[str]], right_from: int = 1) -> list[str]:
    align = ["---" if i < right_from else "---:" for i in range(len(header))]
    lines = ["| " + " | ".join(_esc(h) for h in header) + " |", "| " + " | ".join(align) + " |"]
    lines += ["| " + " | ".join(_esc(c) for c in row) + " |" for row in rows]
    return lines


def render_markdown(report: Report) -> str:
    """The whole report as markdown text."""
    info = report.campaign
    out = [
        f"# Campaign `{info.name}`",
        "",
        f"Baseline **{report.baseline}** · status {info.status} · started {info.created_at} · "
        f"report {report.generated_at}",
        "",
        f"## Output throughput (tok/s), change vs {report.baseline} "
        f"[{text.confidence_label(report)} interval]",
        "",
    ]
    rows = []
    for row in report.variants:
        label = f"**{row.name}**" if row.is_baseline else row.name
        cells = [label, text.status(row)]
        cells.append(text.startup(row))
        for load in report.loads:
            summary = row.loads.get(load)
            if summary is None or summary.throughput_mean is None:
                cells.append("–")
                continue
            cell = text.number(summary.throughput_mean)
            comp = report.get(row.name, load, HEADLINE.key)
            if comp is not None and not row.is_baseline:
                if comp.estimate is not None and comp.estimate.has_interval:
                    cell += f" ({text.delta(comp.estimate)}, {comp.call})"
                else:
                    cell += f" ({text.delta(comp.estimate)})"
            cells.append(cell)
        rows.append(cells)
    out += _table(["variant", "status", "startup", *report.loads], rows, right_from=2)
    out += ["", *(f"- {text.closing_line(report, r)}" for r in report.variants[1:]), ""]

    latency = [m for m in METRICS if m.key != HEADLINE.key]
    lat_rows = []
    for comp in report.comparisons:
        if comp.metric not in latency or comp.estimate is None:
            continue
        est = comp.estimate
        lat_rows.append(
            [
                comp.variant,
                comp.load,
                f"{comp.metric.label} ({comp.metric.unit})",
                text.number(est.baseline),
                text.number(est.variant),
                text.delta(est),
                text.verdict_words(comp),
            ]
        )
    if lat_rows:
        out += ["## Latency vs baseline (lower is better)", ""]
        out += _table(
            ["variant", "load", "metric", report.baseline, "variant", "change", "call"],
            lat_rows,
            right_from=3,
        )
        out.append("")

    if report.startup:
        out += ["## Startup vs baseline", ""]
        out += _table(
            ["variant", "start", report.baseline, "variant", "change", "call"],
            [
                [
                    c.variant,
                    c.temperature,
                    text.seconds(c.estimate.baseline),
                    text.seconds(c.estimate.variant),
                    text.delta(c.estimate),
                    c.call,
                ]
                for c in report.startup
                if c.estimate is not None
            ],
            right_from=2,
        )
        out.append("")

    failed = [r for r in report.variants if r.status in {"crash", "timeout", "failed"}]
    if failed:
        out += ["## Variants that did not finish", ""]
        for row in failed:
            out.append(f"### {row.name}: {text.status(row)}")
            out.append("")
            if row.reason:
                hint = f" Hint: {row.hint}." if row.hint else ""
                out.append(row.reason.rstrip(".") + "." + hint)
                out.append("")
            if row.tail:
                out += ["```text", *row.tail, "```", ""]
    out += [text.method_note(report), ""]
    return "\n".join(out)
