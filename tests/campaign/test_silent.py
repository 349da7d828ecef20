"""The library never prints: ``campaign.run`` returns the report; the CLI renders it."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from tests.campaign.helpers import write_campaign

import servegate.campaign as campaigns
from servegate.report import render_console


def test_campaign_run_prints_nothing_and_returns_the_report(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """Without a progress, a whole run (a server started, measured, stopped) writes
    nothing on stdout or stderr; the report it returns renders the table; a progress on
    a stream says the steps there."""
    file = write_campaign(
        tmp_path, '[[variant]]\nname = "baseline"\n', bench="concurrency = [1]\nrequests = 3"
    )
    plan = campaigns.load_campaign(file)
    done = campaigns.run(plan, tmp_path / "silent.db")
    assert capfd.readouterr() == ("", "")
    assert done.outcome.exit_code == 0
    assert [row.name for row in done.report.variants] == ["baseline"]
    said = io.StringIO()
    campaigns.run(plan, tmp_path / "said.db", progress=campaigns.CampaignProgress(said))
    assert capfd.readouterr() == ("", "")
    assert "baseline" in said.getvalue() and "READY" in said.getvalue()
    table = io.StringIO()
    from rich.console import Console

    render_console(done.report, Console(file=table, width=160))
    assert "baseline" in table.getvalue()
