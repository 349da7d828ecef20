"""The markdown report, for a pull request or a notes file.

GitHub-flavoured tables: throughput by load point with the change vs baseline, each
latency metric with its call, startup cold and warm, the A/A noise floor (the baseline
against itself), the variants that are not compared and why, then what stopped the
variants that did not finish (with the log tail), and how the intervals were computed.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from servegate._text import code_span, markdown_text
from servegate.report import text
from servegate.report.arrivals import arrivals_cell
from servegate.report.compare import HEADLINE, Report, VariantSummary
from servegate.report.slo import slo_cell

if TYPE_CHECKING:
    from servegate.report.check import CheckResult


def _esc(value: str) -> str:
    """A table cell: one line, ``|``, backticks and ``\\`` escaped (names come raw)."""
    return markdown_text(value.replace("\n", " "))


def _table(header: list[str], rows: list[list[str]], right_from: int = 1) -> list[str]:
    align = ["---" if i < right_from else "---:" for i in range(len(header))]
    lines = ["| " + " | ".join(_esc(h) for h in header) + " |", "| " + " | ".join(align) + " |"]
    lines += ["| " + " | ".join(_esc(c) for c in row) + " |" for row in rows]
    return lines


def render_markdown(report: Report) -> str:
    """The whole report as markdown text."""
    info = report.campaign
    out = [
        f"# Campaign {code_span(info.name)}",
        "",
        f"Baseline **{markdown_text(report.baseline)}** · status {info.status} · "
        f"started {info.created_at} · report {report.generated_at}",
        "",
        *_throughput(report),
        *_latency(report),
        *_startup(report),
        *_capacity(report),
        *_search(report),
        *_noise_floor(report),
        *_not_compared(report),
        *_not_finished(report),
        *_placement(report),
    ]
    note = text.single_start_note(report)
    if note is not None:
        out += [f"> {line}" for line in note.split("\n")] + [""]
    out += [text.method_note(report), ""]
    return "\n".join(out)


def _throughput(report: Report) -> list[str]:
    """The headline table: tok/s at each load with its change, then the closing lines."""
    rows = []
    for row in report.variants:
        label = f"**{row.name}**" if row.is_baseline else row.name
        rows.append(
            [label, text.status(row), text.startup(row)]
            + [_throughput_cell(report, row, load) for load in report.loads]
        )
    return [
        f"## Output throughput (tok/s), change vs {markdown_text(report.baseline)} "
        f"[{text.confidence_label(report)} interval]",
        "",
        *_table(["variant", "status", "startup", *report.loads], rows, right_from=2),
        "",
        *(f"- {markdown_text(text.closing_line(report, r))}" for r in report.variants[1:]),
        "",
    ]


def _throughput_cell(report: Report, row: VariantSummary, load: str) -> str:
    """``1234.5 (+5.1 % [+4.0, +6.2], better)``; ``–`` where nothing was measured."""
    summary = row.loads.get(load)
    if summary is None or summary.throughput_mean is None:
        return "–"
    cell = text.number(summary.throughput_mean)
    comp = report.get(row.name, load, HEADLINE.key)
    if not row.is_baseline and row.reference is None:
        cell += f" ({text.not_compared_words(row)})"
    elif comp is not None and not row.is_baseline:
        if comp.estimate is not None and comp.estimate.has_interval:
            cell += f" ({text.delta(comp.estimate)}, {comp.call})"
        else:
            cell += f" ({text.delta(comp.estimate)})"
    slo = slo_cell(report.data, row.name, load)
    if slo is not None:
        cell += f"; {slo.words}"
    arrivals = arrivals_cell(report.data, row.name, load)
    if arrivals is not None:
        cell += f"; {arrivals.words}"
    return cell


def _latency(report: Report) -> list[str]:
    """Each latency metric against the reference, with its call (empty: none compared)."""
    latency = [m for m in report.metrics if m.key != HEADLINE.key]
    rows = [
        [
            comp.variant
            if comp.reference in ("", report.baseline)
            else f"{comp.variant} (vs {comp.reference})",
            comp.load,
            f"{comp.metric.label} ({comp.metric.unit})",
            text.number(comp.estimate.baseline),
            text.number(comp.estimate.variant),
            text.delta(comp.estimate),
            text.verdict_words(comp),
        ]
        for comp in report.comparisons
        if comp.metric in latency and comp.estimate is not None
    ]
    if not rows:
        return []
    header = ["variant", "load", "metric", report.baseline, "variant", "change", "call"]
    return [
        "## Latency vs baseline (lower is better)",
        "",
        *_table(header, rows, right_from=3),
        "",
    ]


def _startup(report: Report) -> list[str]:
    """Cold and warm startup against the baseline (empty: nothing to compare)."""
    if not report.startup:
        return []
    rows = [
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
    ]
    header = ["variant", "start", report.baseline, "variant", "change", "call"]
    return ["## Startup vs baseline", "", *_table(header, rows, right_from=2), ""]


def _search(report: Report) -> list[str]:
    """A tune campaign: the Pareto front, the importances and the crash map."""
    from servegate.report.search import search_markdown

    return [] if report.search is None else search_markdown(report.search)


def _capacity(report: Report) -> list[str]:
    """find_max: each variant's capacity per start, then against the baseline's."""
    from servegate.report.capacity import sentence

    if not report.capacity_rows:
        return []
    rows = [
        [row.variant, f"{row.over} at {row.slo}", "; ".join(s.words for s in row.starts)]
        for row in report.capacity_rows
    ]
    out = ["## Capacity under the SLO", ""]
    out += _table(["variant", "search", "capacity per start"], rows, right_from=3)
    out += [f"- {markdown_text(sentence(c))}" for c in report.capacity]
    return [*out, ""]


def _noise_floor(report: Report) -> list[str]:
    """The baseline against itself (A/A): how much two halves of it differ."""
    if not report.noise_floor:
        return []
    splits = "; ".join(sorted({floor.split for floor in report.noise_floor}))
    rows = [
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
    ]
    header = ["load", "metric", "first half", "second half", "change", "call"]
    return [
        f"## Noise floor: {report.baseline} against itself (A/A, {splits})",
        "",
        "A change smaller than this is what two halves of the same baseline differ by.",
        "",
        *_table(header, rows, right_from=2),
        "",
    ]


def _not_compared(report: Report) -> list[str]:
    """The measured variants left out of the comparison, and why."""
    skipped = [r for r in report.variants if r.not_compared and not r.failed]
    if not skipped:
        return []
    return [
        "## Not compared",
        "",
        *(f"- {markdown_text(f'{row.name}: {row.not_compared}')}" for row in skipped),
        "",
    ]


def _placement(report: Report) -> list[str]:
    """Which node measured what (a campaign on a cluster only)."""
    lines = text.placement_lines(report)
    if not lines:
        return []
    return [
        "## Where each start ran",
        "",
        *(f"- {markdown_text(line.strip())}" for line in lines[1:]),
        "",
    ]


def _not_finished(report: Report) -> list[str]:
    """What stopped each variant that failed (or failed in an earlier start), its log tail."""
    failed = [r for r in report.variants if r.failed or r.earlier_failures]
    if not failed:
        return []
    out = ["## Variants that did not finish", ""]
    for row in failed:
        out += [f"### {markdown_text(row.name)}: {text.status(row)}", ""]
        if row.failed:
            reason = row.reason or "no reason was recorded"
            hint = f" Hint: {row.hint}." if row.hint else ""
            out += [markdown_text(reason.rstrip(".") + "." + hint + " Not compared."), ""]
        if row.earlier_failures:
            out += [
                f"Earlier starts that failed: {markdown_text(', '.join(row.earlier_failures))} "
                "(the last start decides the status).",
                "",
            ]
        if row.tail:
            fence = _fence(row.tail)
            out += [f"{fence}text", *row.tail, fence, ""]
    return out


def _fence(lines: tuple[str, ...]) -> str:
    """A code fence longer than any run of backticks in ``lines``: a log line cannot
    close it."""
    longest = max((len(run) for line in lines for run in re.findall("`+", line)), default=0)
    return "`" * max(3, longest + 1)


def render_check_markdown(result: CheckResult) -> str:
    """``servegate check``'s summary for a CI log or a pull request (GitHub-flavoured
    markdown)."""
    from servegate.report.check import HEADER, RULE, rows, short_name, summary_lines

    title = "regression" if not result.passed else "no regression established"
    mark = "FAIL" if not result.passed else "pass"
    thresholds = ", ".join(
        f"{short_name(key)} {value * 100:g} %" for key, value in result.thresholds.items()
    )
    out = [
        f"## servegate check: {mark}, {title}",
        "",
        f"Candidate {code_span(result.candidate.campaign)} ({_esc(result.candidate.db)}, "
        f"{result.candidate.status}) against {code_span(result.baseline.campaign)} "
        f"({_esc(result.baseline.db)}, {result.baseline.status}). Largest tolerated regression: "
        f"{thresholds}.",
        "",
    ]
    header = [*HEADER[:5], f"change [{result.confidence * 100:g} % interval]", "max", "result"]
    out.append("| " + " | ".join(header) + " |")
    out.append("| " + " | ".join(["---"] * 3 + ["---:"] * 4 + ["---"]) + " |")
    for row in rows(result, reasons=True):
        if row[-1] in ("REGRESSION", "FAILED"):
            row[-1] = f"**{row[-1]}**"
        out.append("| " + " | ".join(_esc(cell) for cell in row) + " |")
    out.append("")
    out += [f"- {_esc(line)}" for line in summary_lines(result)]
    out += [
        "",
        f"Rule: {RULE}. Intervals: hierarchical bootstrap over server starts, repeats and "
        f"requests ({result.resamples} resamples, seed {result.seed}), as `servegate report`; "
        "startup: Student t on the log scale over server starts.",
        "",
    ]
    return "\n".join(out)


def check_error_markdown(message: str) -> str:
    """The step summary of a check that could not be made (bad input)."""
    return f"## servegate check: error\n\n{_esc(message)}\n\n"
