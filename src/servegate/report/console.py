"""The terminal report: one table of variants by load point, then a line per variant.

Numbers in one unit (output tok/s) with the change vs baseline and its interval under
each, and under that the change of TTFT p99 and TPOT p99, so a latency regression shows
next to a throughput gain; a variant that did not start shows its kind and hint instead.
Then the closing lines, the A/A noise floor, and a warning when intervals rest on one
server start. Colour follows rich, which turns it off for ``NO_COLOR`` and for output
that is not a terminal.

A table is never squeezed: where it does not fit the terminal (80 columns), the hints
leave the status cells (the closing lines below carry them, whole), and if it still does
not fit, the status and startup get a table of their own and the load points follow in
as many tables as they need, each one as wide as the terminal at most.
"""

from __future__ import annotations

import io
import sys
from collections.abc import Sequence
from typing import IO, TYPE_CHECKING

from rich.console import Console
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from servegate.report import text
from servegate.report.arrivals import arrivals_cell
from servegate.report.compare import HEADLINE, Report, VariantSummary
from servegate.report.slo import slo_cell

if TYPE_CHECKING:
    from servegate.report.check import CheckResult

_CALL_STYLE = {"better": "green", "worse": "red"}


def _cell(report: Report, row: VariantSummary, load: str) -> Text:
    summary = row.loads.get(load)
    if summary is None or summary.throughput_mean is None:
        return Text("–", style="dim")
    cell = Text(text.number(summary.throughput_mean))
    if summary.failed:
        cell.append(f"  {summary.failed} failed", style="yellow")
    slo = slo_cell(report.data, row.name, load)
    if slo is not None:
        cell.append("\n" + slo.words, style="green" if slo.all_met else "red")
    arrivals = arrivals_cell(report.data, row.name, load)
    if arrivals is not None:
        cell.append("\n" + arrivals.words, style="dim")
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


def _status_cell(row: VariantSummary, *, hint: bool) -> Text:
    style = "green" if row.status == "done" else "red" if row.kind else "yellow"
    cell = Text(text.status(row), style=style)
    if hint and row.hint:
        cell.append("\n" + row.hint, style="dim")
    return cell


def _title(report: Report) -> str:
    return (
        f"{report.campaign.name}: output throughput (tok/s), change vs "
        f"{report.baseline} [{text.confidence_label(report)} interval], then the change of "
        "TTFT p99 and TPOT p99"
    )


def build_table(
    report: Report,
    *,
    hints: bool = True,
    status: bool = True,
    loads: Sequence[str] | None = None,
    title: str | None = None,
) -> Table:
    """The rich table of the report: variant, status (with the hints, unless ``hints``
    is False) and startup unless ``status`` is False, then ``loads`` (default: all)."""
    loads = report.loads if loads is None else loads
    table = Table(
        title=_title(report) if title is None else title,
        title_justify="left",
        show_lines=True,
    )
    table.add_column("variant", no_wrap=True)
    if status:
        # as wide as the longest status at least: a status is never cut
        widest = max((len(text.status(row)) for row in report.variants), default=0)
        table.add_column("status", min_width=widest, max_width=max(34, widest))
        table.add_column("startup", justify="right", no_wrap=True)
    for load in loads:
        table.add_column(load, justify="right", no_wrap=True)
    for row in report.variants:
        name = Text(row.name, style="bold" if row.is_baseline else "")
        if row.is_baseline and row.name != "baseline":
            name.append(" (baseline)", style="dim")
        cells: list[Text | str] = [name]
        if status:
            cells += [_status_cell(row, hint=hints), text.startup(row)]
        table.add_row(*cells, *(_cell(report, row, load) for load in loads))
    return table


def _natural_width(console: Console, table: Table) -> int:
    """The width ``table`` takes when nothing squeezes it."""
    return Measurement.get(console, console.options.update_width(10_000), table).maximum


def _tables(report: Report, console: Console) -> tuple[list[Table], bool]:
    """The report as tables no wider than ``console``, and whether the hints are in them:
    one table where it fits with the hints, else one without them, else the status and
    startup in one table and the load points in as many as they need."""
    width = console.width
    for hints in (True, False):
        table = build_table(report, hints=hints)
        if _natural_width(console, table) <= width:
            return [table], hints
    title = f"{report.campaign.name}: status and startup"
    tables = [build_table(report, hints=False, loads=(), title=title)]
    chunk: list[str] = []
    for load in report.loads:
        wider = build_table(report, status=False, loads=[*chunk, load])
        if chunk and _natural_width(console, wider) > width:
            tables.append(build_table(report, status=False, loads=chunk))
            chunk = []
        chunk.append(load)
    if chunk:
        tables.append(build_table(report, status=False, loads=chunk))
    for later in tables[2:]:
        later.title = None  # the throughput title once, over the first load table
    return tables, False


def render_console(report: Report, console: Console | None = None) -> None:
    """Print the table and the closing comparison lines to ``console`` (stdout by default)."""
    # piped output gets a wide line, so the table is not squeezed to 80 columns
    out = console or Console(width=None if sys.stdout.isatty() else 160)
    tables, hinted = _tables(report, out)
    for table in tables:
        out.print(table)
    for row in report.variants:
        if row.is_baseline:
            if row.hint and not hinted:  # a baseline has no closing line to carry it
                out.print(Text(f"{row.name}: {text.start_failure(row)}"), soft_wrap=True)
            continue
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
    for line in text.capacity_lines(report):
        out.print(Text(line), soft_wrap=True)
    if report.search is not None:
        from servegate.report.search import search_lines

        for line in search_lines(report.search):
            out.print(Text(line), soft_wrap=True)
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


def render_check_table(result: CheckResult) -> str:
    """``servegate check``'s table, one line per variant, load and metric, then the
    closing lines (plain text: it goes to CI logs as it is)."""
    from servegate.report.check import HEADER, headline, rows, summary_lines

    table = [HEADER, *rows(result, reasons=False)]
    widths = [max(len(r[i]) for r in table) for i in range(len(HEADER))]
    right = {3, 4, 5, 6}

    def line(cells: list[str]) -> str:
        parts = [
            cell.rjust(widths[i]) if i in right else cell.ljust(widths[i])
            for i, cell in enumerate(cells)
        ]
        return "  ".join(parts).rstrip()

    out = [headline(result), line(HEADER), *(line(r) for r in table[1:]), *summary_lines(result)]
    return "\n".join(out) + "\n"
