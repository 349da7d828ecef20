"""``servegate demo``: the shipped campaign, and the demo run end to end (shortened)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from tests.campaign.helpers import query
from tests.store.runners import claimed, claimer

from servegate.campaign import demo
from servegate.campaign.config import parse_campaign
from servegate.cli.campaign import run_demo
from servegate.errors import RunnerBusyError
from servegate.store import Store


def test_shipped_demo_has_the_four_variants_on_the_simulator() -> None:
    """The demo compares baseline, a faster decode, an OOM at start and speculative decoding."""
    campaign = parse_campaign(demo.demo_text(), path=Path("demo.toml"))
    assert campaign.baseline == "baseline"
    assert [v.name for v in campaign.variants] == [
        "baseline",
        "faster-decode",
        "oom-at-start",
        "spec-decode",
    ]
    assert len(campaign.groups) == 4
    argv = {v.name: v.render(port=1)[0] for v in campaign.variants}
    assert argv["baseline"][1:4] == ["-m", "servegate", "sim"]
    assert "--profile" in argv["baseline"]
    assert argv["oom-at-start"][-4:] == ["--fail", "oom", "--fail-at", "load_weights"]
    assert argv["spec-decode"][-2:] == ["--spec-accept-length", "2.5"]
    assert campaign.port is None  # a free port for every start


@pytest.mark.slow
def test_demo_runs_the_campaign_and_writes_the_html_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The demo writes its file, runs it into a fresh database, prints the table and HTML path."""
    short = demo.demo_text()
    short = re.sub(r"concurrency = \[.*\]", "concurrency = [2]", short)
    short = short.replace("duration_s = 1.0", "requests = 4").replace("repeats = 2", "repeats = 1")
    short = short.replace("--jitter 0.05", "--jitter 0.05 --time-scale 0.2")
    monkeypatch.setattr(demo, "demo_text", lambda: short)
    folder = tmp_path / "servegate-demo"
    folder.mkdir()
    (folder / "servegate.db").write_text("left over from an older demo")

    assert run_demo(folder) == 0

    out = capsys.readouterr().out
    for name in ("baseline", "faster-decode", "oom-at-start", "spec-decode"):
        assert name in out
    html_line = next(line for line in out.splitlines() if line.startswith("HTML report: "))
    html = Path(html_line.removeprefix("HTML report: "))
    assert html == (folder / "report.html").resolve()
    assert "plotly" in html.read_text()[:2_000_000].lower()
    assert (folder / "demo.toml").read_text() == short
    db = folder / "servegate.db"
    assert query(db, "SELECT status FROM campaign") == [("done",)]
    crash = query(
        db,
        "SELECT a.status FROM attempt a JOIN variant v ON v.id = a.variant_id "
        "WHERE v.name = 'oom-at-start'",
    )
    assert crash == [("crash",)]
    # 3 variants started twice each (restarts = 2), one point a start
    assert int(query(db, "SELECT count(*) FROM point")[0][0]) == 6  # type: ignore[call-overload]


def test_demo_keeps_the_database_of_a_demo_still_running(tmp_path: Path) -> None:
    """A demo started in the folder of a running demo refuses (naming its PID) instead of
    deleting the database under it."""
    folder = tmp_path / "servegate-demo"
    folder.mkdir()
    db = folder / "servegate.db"
    Store.open(db).close()
    with claimer(db) as running:
        assert claimed(running) == "claimed"
        with pytest.raises(RunnerBusyError, match=f"PID {running.pid} "):
            run_demo(folder, quiet=True)
        assert query(db, "SELECT name FROM campaign") == [("c",)]


def test_servegate_run_and_the_demo_both_go_through_campaign_run(tmp_path: Path) -> None:
    """``servegate.campaign.run`` is the one front door: the command line's run and demo
    both call it, and both answer a folder given as --db with its one sentence."""
    import servegate.campaign as campaigns
    from servegate.campaign import session
    from servegate.cli import campaign as cli_campaign
    from servegate.errors import UsageError

    assert campaigns.run is session.run
    assert vars(cli_campaign)["campaigns"] is campaigns  # its import, not re-exported
    assert {"campaigns", "run"} <= set(cli_campaign._run.__code__.co_names)
    assert "_run" in cli_campaign.execute.__code__.co_names
    assert "_run" in cli_campaign.run_demo.__code__.co_names
    folder = tmp_path / "a-folder"
    folder.mkdir()
    said = f"--db {folder} is a folder; pass a database file such as {folder}/servegate.db."
    plan = campaigns.parse_campaign(demo.demo_text(), path=tmp_path / "demo.toml")
    with pytest.raises(UsageError) as by_cli:
        cli_campaign.execute(plan, folder, options=campaigns.RunOptions())
    with pytest.raises(UsageError) as by_demo:
        run_demo(tmp_path / "demo", db=folder, quiet=True)
    assert str(by_cli.value) == str(by_demo.value) == said
    assert list(folder.iterdir()) == []  # nothing was written, nothing started
