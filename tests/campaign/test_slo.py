"""``[slo]`` in campaign files: checked like ``bench --slo``, carried to every point and
shown beside the throughput in the report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.campaign.helpers import query, servegate, write_campaign

from servegate.campaign.config import parse_campaign
from servegate.errors import ConfigError

HEAD = """\
[campaign]
name = "c"
baseline = "a"
[server]
engine = "vllm"
command = "serve --port {port}"
[[variant]]
name = "a"
"""


def test_slo_targets_and_attainment_reach_each_variants_bench() -> None:
    """ttft_p99 = "0.5s" and tpot_mean = "50ms" become the targets of bench --slo."""
    campaign = parse_campaign(
        HEAD + '[slo]\nttft_p99 = "0.5s"\ntpot_mean = "50ms"\nattainment = 0.9\n',
        path=Path("c.toml"),
    )
    bench = campaign.variants[0].bench
    assert [t.text for t in bench.slo] == ["ttft_p99<=500ms", "tpot_mean<=50ms"]
    assert bench.attainment == 0.9


@pytest.mark.parametrize(
    ("table", "says"),
    [
        ('ttft_p99 = "500"', "c.toml: [slo] target 'ttft_p99<=500' must read"),
        (
            "ttft_p99 = 500",
            'ttft_p99 must be a bound with its unit in quotes, e.g. ttft_p99 = "500ms"',
        ),
        ('foo_p99 = "5ms"', "target 'foo_p99<=5ms' must read"),
        ("attainment = 1.5", "[slo] attainment must be a share above 0 and at most 1"),
        ("attainment = 0.9", '[slo] names no target; add one such as ttft_p99 = "500ms"'),
    ],
)
def test_a_bad_slo_table_is_one_sentence(table: str, says: str) -> None:
    """Each mistake in [slo] is one ConfigError naming the file and the fix."""
    with pytest.raises(ConfigError) as info:
        parse_campaign(HEAD + "[slo]\n" + table + "\n", path=Path("c.toml"))
    assert says in str(info.value)
    assert "\n" not in str(info.value)


def test_a_campaign_with_slo_stores_it_per_point_and_reports_met_and_goodput(
    tmp_path: Path,
) -> None:
    """On the simulator: a loose SLO is met at every point and an impossible one at none;
    each stored point keeps its slo, and the report's JSON, table and HTML say met k/n
    with the goodput beside the throughput."""
    for name, bound, met in (("loose", '"60s"', True), ("tight", '"1us"', False)):
        bench = f"concurrency = [1, 2]\nrequests = 4\nrepeats = 1\n\n[slo]\ne2el_p99 = {bound}"
        path = write_campaign(tmp_path, '[[variant]]\nname = "baseline"\n', name=name, bench=bench)
        db = tmp_path / f"{name}.db"
        run = servegate("run", path, "--db", db, timeout=120)
        assert run.returncode == 0, run.stderr
        stored = [json.loads(str(r[0])) for r in query(db, "SELECT detail FROM point")]
        assert [d["slo"]["met"] for d in stored] == [met, met]
        assert all(d["settings"]["slo"] == f"e2el_p99<={'60000' if met else '0.001'}ms"
                   for d in stored)  # fmt: skip
        out = tmp_path / f"{name}.json"
        report = servegate("report", "--db", db, name, "--json-file", out)
        assert report.returncode == 0, report.stderr
        (row,) = json.loads(out.read_text())["variants"]
        for load in ("c=1", "c=2"):
            cell = row["loads"][load]["slo"]
            assert (cell["met"], cell["of"]) == ((1 if met else 0), 1)
            assert (cell["goodput_output_tokens_per_s_mean"] > 0) == met
        words = "SLO met 1/1, goodput" if met else "SLO not met 0/1, goodput 0.0 tok/s"
        assert words in report.stdout
        page = tmp_path / f"{name}.html"
        assert servegate("report", "--db", db, name, "--html-file", page).returncode == 0
        assert words in page.read_text()
