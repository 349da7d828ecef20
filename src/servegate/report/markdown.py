"""The markdown report, for a pull request or a notes file.

GitHub-flavoured tables: throughput by load point with the change vs baseline, each
latency metric with its call, startup cold and warm, the A/A noise floor (the baseline
against itself), the variants that are not compared and why, then what stopped the
variants that did not finish (with the log tail), and how the intervals were computed.
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
            if not row.is_baseline and row.reference is None:
                cell += f" ({text.not_compared_words(row)})"
            elif comp is not None and not row.is_baseline:
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
                comp.variant
                if comp.reference in ("", report.baseline)
                else f"{comp.variant} (vs {comp.reference})",
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

    if report.noise_floor:
        splits = "; ".join(sorted({floor.split for floor in report.noise_floor}))
        out += [
            f"## Noise floor: {report.baseline} against itself (A/A, {splits})",
            "",
            "A change smaller than this is what two halves of the same baseline differ by.",
            "",
        ]
        out += _table(
            ["load", "metric", "first half", "second half", "change", "call"],
            [
                [
                    floor.load,
                    f"{floor.metric.label} ({floor.metric.unit})",
                    text.number(floor.estimate.baseline),
                    text.number(floor.estimate.variant),
                    text.delta(floor.estimate),
                    floor.call,
                ]
                for floor in report.noise_floor
                if floor.estimate is not None
            ],
            right_from=2,
        )
        out.append("")

    skipped = [r for r in report.variants if r.not_compared and not r.failed]
    if skipped:
        out += ["## Not compared", ""]
        out += [f"- {row.name}: {row.not_compared}" for row in skipped]
        out.append("")

    failed = [r for r in report.variants if r.failed or r.earlier_failures]
    if failed:
        out += ["## Variants that did not finish", ""]
        for row in failed:
            out.append(f"### {row.name}: {text.status(row)}")
            out.append("")
            if row.failed:
                reason = row.reason or "no reason was recorded"
                hint = f" Hint: {row.hint}." if row.hint else ""
                out.append(reason.rstrip(".") + "." + hint + " Not compared.")
                out.append("")
            if row.earlier_failures:
                out.append(
                    f"Earlier starts that failed: {', '.join(row.earlier_failures)} "
                    "(the last start decides the status)."
                )
                out.append("")
            if row.tail:
                out += ["```text", *row.tail, "```", ""]
    note = text.single_start_note(report)
    if note is not None:
        out += [f"> {note}", ""]
    out += [text.method_note(report), ""]
    return "\n".join(out)
