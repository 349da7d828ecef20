"""Reports of stored campaigns: comparison statistics and renderers.

    from servegate.report import build_report, render_console
    with Store.open("servegate.db") as store:
        report = build_report(store, "allreduce-fusion")   # None: the newest campaign
    render_console(report)                                  # the table + closing lines

``half_widths(store, campaign)`` gives each compared interval's half-width, for a runner
that stops once every interval is narrow enough.

Renderers: ``render_console`` (rich, stdout), ``render_markdown``, ``render_json``,
``render_csv`` and ``render_html`` (needs the ``html`` extra: plotly) return or print the
same report. Importing this package does not import plotly.
"""

from __future__ import annotations

from servegate.report.bootstrap import MIN_EFFECT
from servegate.report.compare import METRICS, Report, campaign_min_effect, compare
from servegate.report.console import console_text, render_console
from servegate.report.data import CampaignData, load_campaign, resolve_campaign
from servegate.report.export import render_csv, render_json, report_json
from servegate.report.markdown import render_markdown
from servegate.report.precision import Precision, half_widths
from servegate.store import Store

__all__ = [
    "METRICS",
    "MIN_EFFECT",
    "CampaignData",
    "Precision",
    "Report",
    "build_report",
    "compare",
    "console_text",
    "half_widths",
    "load_campaign",
    "render_console",
    "render_csv",
    "render_html",
    "render_json",
    "render_markdown",
    "report_json",
    "resolve_campaign",
]


def build_report(
    store: Store,
    campaign: str | int | None = None,
    *,
    confidence: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
    min_effect: float | None = None,
) -> Report:
    """Read a campaign (by name, id, or the newest when None) and compare its variants.

    ``min_effect``: the smallest change called better or worse (0.01: 1 %); None takes
    the campaign file's ``[campaign] min_effect``, else ``MIN_EFFECT``.
    """
    cid = campaign if isinstance(campaign, int) else resolve_campaign(store, campaign).id
    data = load_campaign(store, cid)
    if min_effect is None:
        min_effect = campaign_min_effect(data.campaign.config_text)
    return compare(
        data,
        confidence=confidence,
        resamples=resamples,
        seed=seed,
        min_effect=MIN_EFFECT if min_effect is None else min_effect,
    )


def render_html(report: Report) -> str:
    """The self-contained HTML report (imports plotly; UsageError naming the extra if absent)."""
    from servegate.report.html import render_html as render

    return render(report)
