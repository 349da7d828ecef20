"""The terminal report: one table of variants by load point, then a line per variant.

Numbers in one unit (output tok/s) with the change vs baseline and its interval under
each, and under that the change of TTFT p99 and TPOT p99, so a latency regression shows
next to a throughput gain; a variant that did not start shows its kind and hint instead.
Then the closing lines, the A/A noise floor, and a warning when intervals rest on one
server start. Colour follows rich, which turns it off for ``NO_COLOR`` and for output
that is not a terminal.
"""

from __future__ import annotations

import io
import sys
from typing import IO

from rich.console import Console
from rich.table import Table
from rich.text import Text

from servegate.report import text
from servegate.report.compare import HEADLINE, Report, VariantSummary

_CALL_STYLE = {"better": "green", "worse": "red"}


def _cell(report: Report, row: VariantSummary, load: str) -> Text:
    summary = row.loads.get(load)
    if summary is None or summary.throughput_mean is None:
        return Text("–", style="dim")
    cell = Text(text.number(summary.throughput_mean))
    if summary.failed:
        cell.append(f"  {summary.failed} failed", style="yellow")
    if row.is_baseline:
        return cell
    if row.reference is None:
        cell.append("\n" + text.not_compared_words(row), style="dim")
        return cell
    comp = report.get(row.name, load, HEADLINE.key)
    if comp is not None:
        cell.append("\n")
        cell.append(text.delta(comp.estimate, short=True), style=_CALL_STYLE.get(comp.call, "dim"))
    for words, verdict in text.tail_cells(report, row, load):
        cell.append("\n" + words, style=_CALL_STYLE.get(verdict, "dim"))
    return cell


def _status_cell(row: VariantSummary) -> Text:
    style = "green" if row.status == "done" else "red" if row.kind else "yellow"
    cell = Text(text.status(row), style=style)
    if row.hint:
        cell.append("\n" + row.hint, style="dim")
    return cell


def build_table(report: Report) -> Table:
    """The rich table of the report."""
    table = Table(
        title=f"{report.campaign.name}: output throughput (tok/s), change vs "
        f"{report.baseline} [{text.confidence_label(report)} interval], then the change of "
        "TTFT p99 and TPOT p99",
        title_justify="left",
        show_lines=True,
    )
    table.add_column("variant", no_wrap=True)
    table.add_column("status", max_width=34)
    table.add_column("startup", justify="right")
    for load in report.loads:
        table.add_column(load, justify="right", no_wrap=True)
    for row in report.variants:
        name = Text(row.name, style="bold" if row.is_baseline else "")
        if row.is_baseline and row.name != "baseline":
            name.append(" (baseline)", style="dim")
        table.add_row(
            name,
            _status_cell(row),
            text.startup(row),
            *(_cell(report, row, load) for load in report.loads),
        )
    return table


def render_console(report: Report, console: Console | None = None) -> None:
    """Print the table and the closing comparison lines to ``console`` (stdout by default)."""
    # piped output gets a wide line, so the table is not squeezed to 80 columns
    out = console or Console(width=None if sys.stdout.isatty() else 160)
    out.print(build_table(report))
    for row in report.variants:
        if not row.is_baseline:
            out.print(Text(text.closing_line(report, row)), soft_wrap=True)
            tail = text.tail_line(report, row)
            if tail is not None:
                out.print(Text(tail), soft_wrap=True)
    for comp in report.startup:
        if comp.estimate is not None:
            out.print(
                Text(
                    f"{comp.variant}: {comp.temperature} start {text.ratio_pm(comp.estimate)} x "
                    f"{report.baseline} ({comp.estimate.variant:.1f} s vs "
                    f"{comp.estimate.baseline:.1f} s, {comp.call})"
                ),
                soft_wrap=True,
            )
    for line in text.noise_lines(report):
        out.print(Text(line, style="dim" if line.startswith(" ") else ""), soft_wrap=True)
    for line in text.placement_lines(report):
        out.print(Text(line, style="dim" if line.startswith(" ") else ""), soft_wrap=True)
    note = text.single_start_note(report)
    if note is not None:
        out.print(Text(note, style="yellow"), soft_wrap=True)


def console_text(report: Report, *, width: int = 120, file: IO[str] | None = None) -> str:
    """The terminal report as plain text (no colour), e.g. for a file or a test."""
    buffer = file or io.StringIO()
    render_console(
        report, Console(file=buffer, width=width, no_color=True, highlight=False, soft_wrap=False)
    )
    return buffer.getvalue() if isinstance(buffer, io.StringIO) else ""
