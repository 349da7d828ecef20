"""Arrivals in campaign files (issue 24, item 3): ``burstiness`` in ``[bench]`` reaches
every point's settings, and a rate without ``concurrency`` is uncapped, as in bench."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from tests.campaign.helpers import query, servegate, write_campaign

from servegate.campaign.config import parse_campaign
from servegate.campaign.execute import _settings, tasks_of
from servegate.errors import ConfigError

CAMPAIGN = """
[campaign]
name = "c"
baseline = "b"
[server]
command = "srv {{port}}"
[bench]
rate = [2, 8]
burstiness = 0.5
{extra}
[[variant]]
name = "b"
[[variant]]
name = "regular"
bench = {{ burstiness = 4.0 }}
"""


def _campaign(extra: str = "") -> object:
    return parse_campaign(textwrap.dedent(CAMPAIGN.format(extra=extra)), path=Path("c.toml"))


def test_burstiness_reaches_every_point_and_a_rate_is_uncapped() -> None:
    """[bench] burstiness = 0.5 (a variant's 4.0) is in each point's BenchSettings; with a
    rate and no concurrency, no cap (None), labelled ``rate=R``."""
    campaign = _campaign()
    seen = {}
    for group in campaign.groups:  # type: ignore[attr-defined]
        for task in tasks_of(group, 1):
            settings = _settings("http://127.0.0.1:9", task, "vllm")
            seen[(task.variant.name, task.point.label)] = (
                settings.burstiness,
                settings.concurrency,
                settings.rate,
            )
    assert seen == {
        ("b", "rate=2"): (0.5, None, 2.0),
        ("b", "rate=8"): (0.5, None, 8.0),
        ("regular", "rate=2"): (4.0, None, 2.0),
        ("regular", "rate=8"): (4.0, None, 8.0),
    }


def test_concurrency_caps_every_rate() -> None:
    """concurrency = [4, 16] with two rates: four points, each rate under each cap."""
    campaign = _campaign("concurrency = [4, 16]")
    points = campaign.variant("b").bench.points  # type: ignore[attr-defined]
    assert [(p.rate, p.concurrency, p.label) for p in points] == [
        (2.0, 4, "rate=2,c=4"), (2.0, 16, "rate=2,c=16"),
        (8.0, 4, "rate=8,c=4"), (8.0, 16, "rate=8,c=16"),
    ]  # fmt: skip


def test_without_a_rate_the_default_is_one_user() -> None:
    """No rate and no concurrency: one point at c=1, as bench's default."""
    text = textwrap.dedent(CAMPAIGN.format(extra="")).replace("rate = [2, 8]\n", "")
    points = parse_campaign(text, path=Path("c.toml")).variant("b").bench.points
    assert [(p.rate, p.concurrency, p.label) for p in points] == [(None, 1, "c=1")]


@pytest.mark.parametrize("value", ["0", "-1.0", "nan"])
def test_bad_burstiness_names_the_key(value: str) -> None:
    """burstiness = 0 (or negative, or nan) is one ConfigError naming bench.burstiness."""
    text = textwrap.dedent(CAMPAIGN.format(extra="")).replace(
        "burstiness = 0.5", f"burstiness = {value}"
    )
    with pytest.raises(ConfigError) as info:
        parse_campaign(text, path=Path("c.toml"))
    assert "burstiness" in str(info.value)


def test_a_rate_campaign_stores_burstiness_percentiles_and_rates(tmp_path: Path) -> None:
    """On the simulator: rate = [20, 40], burstiness = 0.5, percentiles = [95, 99.9]: each
    stored point is uncapped, keeps its burstiness, its p95/p99.9 keys beside p50/p90/p99
    and its offered and achieved rates; the report shows them beside the throughput."""
    bench = "rate = [20, 40]\nburstiness = 0.5\npercentiles = [95, 99.9]\nrequests = 8\nrepeats = 1"
    path = write_campaign(tmp_path, '[[variant]]\nname = "baseline"\n', name="r", bench=bench)
    db = tmp_path / "r.db"
    run = servegate("run", path, "--db", db, timeout=120)
    assert run.returncode == 0, run.stderr
    rows = query(db, "SELECT load, summary, detail FROM point ORDER BY load")
    assert [r[0] for r in rows] == ["rate=20", "rate=40"]
    for load, summary_text, detail_text in rows:
        summary, settings = json.loads(str(summary_text)), json.loads(str(detail_text))["settings"]
        assert (settings["burstiness"], settings["concurrency"]) == (0.5, None)
        assert summary["offered_rate"] == float(str(load).removeprefix("rate="))
        assert summary["achieved_rate"] > 0
        for p in ("p50", "p90", "p95", "p99", "p99.9"):
            assert f"ttft_ms_{p}" in summary
    report = servegate("report", "--db", db, "r")
    assert report.returncode == 0, report.stderr
    assert "offered 20/s (burstiness 0.5), achieved" in report.stdout


def test_bad_percentiles_name_the_key() -> None:
    """percentiles = [100] is one ConfigError naming bench.percentiles."""
    text = textwrap.dedent(CAMPAIGN.format(extra="percentiles = [100]"))
    with pytest.raises(ConfigError) as info:
        parse_campaign(text, path=Path("c.toml"))
    assert "bench percentiles must be numbers between 0 and 100" in str(info.value)
