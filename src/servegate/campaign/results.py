"""The end of a run: the comparison table on stdout, and the HTML report for the demo.

The statistics and the renderers belong to ``servegate.report``; this module only reads
the stored campaign back and hands it to them, so that the table printed at the end of
a run is exactly what ``servegate report`` prints later.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from rich.console import Console

from servegate._files import write_output
from servegate.report import Report, build_report, render_console, render_html
from servegate.store import Store

__all__ = ["html_available", "print_results", "write_html"]


def print_results(store: Store, campaign_id: int, console: Console | None = None) -> Report:
    """Print the results table and the closing comparison lines on stdout."""
    report = build_report(store, campaign_id)
    render_console(report, console)
    return report


def html_available() -> bool:
    """Whether plotly (the ``html`` extra) is installed."""
    return importlib.util.find_spec("plotly") is not None


def write_html(report: Report, path: Path) -> Path:
    """Write the self-contained HTML report to ``path``; return it."""
    write_output(path, render_html(report))  # 0644 when new: reports are meant to be shared
    return path
