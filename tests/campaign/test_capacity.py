"""``find_max`` in a campaign's ``[bench]``: each start's answer is its capacity under
``[slo]``, found by probes on one server; a crash while probing bounds it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.campaign.helpers import SIM, query, servegate, write_campaign

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
SLO = '\n[slo]\ntpot_p99 = "9ms"\n'


def test_find_max_reaches_each_variants_bench_as_one_search_per_start() -> None:
    """find_max = "concurrency" with its knobs: one search point per start, the range
    from max_concurrency, the precision as a percentage."""
    campaign = parse_campaign(
        HEAD + '[bench]\nfind_max = "concurrency"\nmax_concurrency = 64\nmax_probes = 9\n'
        'precision = "10%"\nretry_below_crash = true\nrestarts = 3\n' + SLO,
        path=Path("c.toml"),
    )
    bench = campaign.variants[0].bench
    assert bench.search is not None
    assert (bench.search.over, bench.search.low, bench.search.high) == ("concurrency", 1.0, 64.0)
    assert (bench.search.max_probes, bench.search.precision) == (9, 0.1)
    assert bench.search.retry_below_crash
    assert [p.label for p in bench.points] == ["find-max"]
    assert bench.repeats == 1
    rate = (
        parse_campaign(
            HEAD + '[bench]\nfind_max = "rate"\nrate = [2.0, 40.0]\nduration_s = 5\n' + SLO,
            path=Path("c.toml"),
        )
        .variants[0]
        .bench.search
    )
    assert rate is not None
    assert (rate.over, rate.low, rate.high, rate.duration_s) == ("rate", 2.0, 40.0, 5.0)


@pytest.mark.parametrize(
    ("bench", "slo", "says"),
    [
        ('find_max = "concurrency"', "", "searches for the largest load that meets [slo]; add"),
        ('find_max = "load"', SLO, 'find_max must be "concurrency" or "rate", not \'load\''),
        ("max_probes = 9", SLO, "max_probes tunes the capacity search; add find_max"),
        ('find_max = "concurrency"\nmax_probes = 1', SLO, "max_probes must be a whole number"),
        ('find_max = "concurrency"\nprecision = "5"', SLO, "precision must be a share"),
        ('find_max = "concurrency"\nprecision = 1.5', SLO, "precision must be a share"),
        ('find_max = "concurrency"\nrate = 4.0', SLO, "runs closed-loop probes; remove rate"),
        ('find_max = "concurrency"\nduration_s = 9', SLO, "bound by a request count; remove"),
        ('find_max = "rate"\nconcurrency = 8', SLO, "lifts the concurrency cap; remove"),
        ('find_max = "rate"\nmax_rate = -1.0', SLO, "max_rate must be requests per second"),
        (
            'find_max = "concurrency"\nconcurrency = 64\nmax_concurrency = 8',
            SLO,
            "the lowest load 64 is above the top 8; raise max_concurrency",
        ),
    ],
)
def test_a_bad_find_max_is_one_sentence_naming_the_fix(bench: str, slo: str, says: str) -> None:
    """Each mistake is one ConfigError naming the file and the fix."""
    with pytest.raises(ConfigError) as info:
        parse_campaign(HEAD + "[bench]\n" + bench + "\n" + slo, path=Path("c.toml"))
    assert says in str(info.value)
    assert str(info.value).startswith("c.toml")
    assert "\n" not in str(info.value)


def test_the_cli_refuses_a_bad_find_max_with_exit_2(tmp_path: Path) -> None:
    """servegate run: one line on stderr, exit 2, nothing started."""
    path = write_campaign(
        tmp_path, '[[variant]]\nname = "baseline"\n', bench='find_max = "concurrency"'
    )
    run = servegate("run", path, "--db", tmp_path / "c.db")
    assert run.returncode == 2
    assert "add [slo] with a target such as" in run.stderr


BENCH = """\
requests = 40
find_max = "concurrency"
max_concurrency = 64
restarts = 2
[slo]
tpot_mean = "9ms\""""


@pytest.mark.slow
def test_each_start_finds_its_capacity_and_every_probe_is_a_point(tmp_path: Path) -> None:
    """On the simulator (fast profile: TPOT 8 ms x (1 + 0.015 (c - 1)), so tpot_mean <= 9 ms
    holds to about c=9; with --itl-ms 6 to about c=34): two starts a side, each with its
    capacity stored with its attempt, each probe a point of that attempt, and the faster
    variant's capacity higher at every start."""
    variants = '[[variant]]\nname = "baseline"\n[[variant]]\nname = "fast"\nargs = "--itl-ms 6"\n'
    path = write_campaign(tmp_path, variants, bench=BENCH)
    path.write_text(path.read_text().replace("output_len = 4", "output_len = 16"))
    db = tmp_path / "c.db"
    run = servegate("run", path, "--db", db, timeout=300)
    assert run.returncode == 0, run.stderr
    rows = query(
        db,
        "SELECT v.name, c.start, c.attempt_id, c.json FROM capacity c "
        "JOIN variant v ON v.id = c.variant_id ORDER BY v.name, c.start",
    )
    assert [(r[0], r[1]) for r in rows] == [("baseline", 1), ("baseline", 2), ("fast", 1),
                                            ("fast", 2)]  # fmt: skip
    found = {(str(r[0]), int(str(r[1]))): json.loads(str(r[3])) for r in rows}
    for (name, start), data in found.items():
        (aid,) = [int(str(r[2])) for r in rows if (r[0], r[1]) == (name, start)]
        assert data["value"] is not None and not data["censored"], data["words"]
        assert 2 <= len(data["probes"]) <= 15
        points = query(db, "SELECT load, repeat FROM point WHERE attempt_id = ?", aid)
        assert sorted(str(p[0]) for p in points) == sorted(
            f"c={p['load']:g}" for p in data["probes"]
        )
        assert {int(str(p[1])) for p in points} == {start - 1}
        assert data["bracket"]["passes"] <= data["value"] < data["bracket"]["fails"]
    for start in (1, 2):
        assert found[("fast", start)]["value"] > 2 * found[("baseline", start)]["value"]
    assert 3 <= found[("baseline", 1)]["value"] <= 12
    _the_report_compares_the_capacities(tmp_path, db, found)


def _the_report_compares_the_capacities(
    tmp_path: Path, db: Path, found: dict[tuple[str, int], dict[str, Any]]
) -> None:
    """The report (terminal, --json-file, markdown, HTML) says each start's capacity and
    the ratio of the means over starts, with the interval over starts."""
    out, md, page = tmp_path / "r.json", tmp_path / "r.md", tmp_path / "r.html"
    report = servegate(
        "report", "--db", db, "--json-file", out, "--markdown-file", md, "--html-file", page
    )
    assert report.returncode == 0, report.stderr
    capacity = json.loads(out.read_text())["capacity"]
    (comp,) = capacity["comparisons"]
    est = comp["estimate"]
    means = {
        name: (found[(name, 1)]["value"] + found[(name, 2)]["value"]) / 2
        for name in ("baseline", "fast")
    }
    assert est["ratio"] == pytest.approx(means["fast"] / means["baseline"], rel=1e-4)
    assert est["starts_baseline"] == est["starts_variant"] == 2
    assert est["ratio_low"] <= est["ratio"] <= est["ratio_high"]
    assert comp["call"] == "better"
    assert comp["words"].startswith(
        f"fast: {est['ratio']:.2f}x [{est['ratio_low']:.2f}, {est['ratio_high']:.2f}] "
        "the baseline's capacity (concurrency) at tpot_mean<=9ms"
    )
    assert comp["words"] in report.stdout
    assert [v["variant"] for v in capacity["variants"]] == ["baseline", "fast"]
    assert comp["words"] in md.read_text()
    assert "## Capacity under the SLO" in md.read_text()
    html = page.read_text()
    assert 'id="plot-capacity"' in html
    assert "SLO tpot_mean" in html  # the bound's line (plotly escapes the <)


CRASH = SIM + " --fail crash-after-ready --fail-at 60req"


@pytest.mark.parametrize("retry", [False, True])
def test_a_crash_while_probing_bounds_the_capacity_with_its_kind_and_cause(
    tmp_path: Path, retry: bool
) -> None:
    """A server that crashes with its 60th completion (c=1's probe sends 41 with its
    warmup, so c=2's probe meets the crash, however busy the machine): the probe it
    crashed in is a failure at that
    load, "crashed at c=N" with the crash's kind and cause, never a slow point; the
    capacity is the highest load that passed below it. With retry_below_crash the
    search goes on below the crash on a new server of the same start (a second attempt),
    unless the crash came one user above a pass (nothing is left to search there)."""
    bench = BENCH.replace("restarts = 2", "restarts = 1")
    bench = bench.replace("max_concurrency = 64", "max_concurrency = 64\nmax_probes = 8")
    if retry:
        bench = bench.replace("restarts = 1", "restarts = 1\nretry_below_crash = true")
    path = write_campaign(tmp_path, '[[variant]]\nname = "baseline"\n', bench=bench)
    path.write_text(path.read_text().replace(SIM, CRASH))
    db = tmp_path / "c.db"
    run = servegate("run", path, "--db", db, timeout=300)
    assert run.returncode == 0, run.stderr
    ((text,),) = query(db, "SELECT json FROM capacity")
    data = json.loads(str(text))
    crash = data["crashed"][0]
    assert crash["status"] == "crash"
    assert crash["kind"] is not None and crash["cause"]
    assert f"crashed at {crash['label']}" in data["words"]
    loads = [p["load"] for p in data["probes"]]
    # the probe the server died in is measured and failed, or not measured at all (it
    # died in that probe's warmup, before its first answer): never a pass
    assert not any(p["met"] for p in data["probes"] if p["load"] == crash["load"])
    assert all(load < crash["load"] for load in loads if load != crash["load"])
    if data["value"] is not None:
        assert data["value"] < crash["load"]
    assert loads and crash["load"] > min(loads)
    attempts = query(db, "SELECT id, status, start, reason FROM attempt ORDER BY id")
    # the crash is the capacity's bound, not the variant's failure
    assert attempts[0][1] == "done"
    assert str(attempts[0][3]).startswith(f"crashed at {crash['label']} while probing: ")
    # how far the search had come below the crash depends on the machine's speed: when
    # the crash's load is one user above a load that passed, nothing is left to search
    first = query(db, "SELECT load FROM point WHERE attempt_id = ?", attempts[0][0])
    first_loads = {float(str(load)[2:]) for (load,) in first}
    passed = [p["load"] for p in data["probes"] if p["met"] and p["load"] in first_loads]
    settled = bool(passed) and crash["load"] - max(passed) <= 1
    if settled:  # the fit's answer stands: the highest pass, the crash just above it
        assert len(attempts) == 1, attempts
        assert (data["value"], data["bounded_by_crash"]) == (max(passed), False)
    elif retry:
        assert len(attempts) >= 2 and {int(str(a[2])) for a in attempts} == {1}
        later = query(db, "SELECT load FROM point WHERE attempt_id != ?", attempts[0][0])
        assert later and all(float(str(load)[2:]) < crash["load"] for (load,) in later)
    else:
        assert len(attempts) == 1
        assert data["bounded_by_crash"]
        assert max(loads) <= crash["load"]


@pytest.mark.slow
def test_a_rate_search_per_start_and_its_censored_top(tmp_path: Path) -> None:
    """find_max = "rate" from rate = 8.0 up to max_rate, probes of 3 s: the fast
    profile's tpot_mean <= 9 ms holds to some tens of requests per second (about c=9 in
    flight), found between two probes; with --itl-ms 4 the top passes: ">= rate=256",
    censored, and the ratio a lower bound."""
    bench = (
        'find_max = "rate"\nrate = 8.0\nmax_rate = 256.0\nduration_s = 3\n[slo]\ntpot_mean = "9ms"'
    )
    variants = '[[variant]]\nname = "baseline"\n[[variant]]\nname = "fast"\nargs = "--itl-ms 4"\n'
    path = write_campaign(tmp_path, variants, bench=bench)
    path.write_text(path.read_text().replace("output_len = 4", "output_len = 8"))
    db = tmp_path / "c.db"
    run = servegate("run", path, "--db", db, timeout=300)
    assert run.returncode == 0, run.stderr
    rows = query(db, "SELECT v.name, c.json FROM capacity c JOIN variant v ON v.id = c.variant_id")
    found = {str(name): json.loads(str(text)) for name, text in rows}
    base, fast = found["baseline"], found["fast"]
    assert base["over"] == "rate" and not base["censored"]
    assert 16 <= base["value"] <= 200, base["words"]
    # rate probes are fitted at the rate their schedule held, not the nominal one
    assert all(p["load"] >= 8.0 for p in base["probes"])
    assert base["low"] <= base["value"] <= base["high"]
    assert fast["censored"] and fast["value"] == 256.0
    assert fast["words"].startswith(">= rate=256/s (the top load passed; raise max_rate)")
    assert ">= " in run.stdout and "the baseline's capacity (rate)" in run.stdout


def test_dry_run_says_each_start_searches(tmp_path: Path) -> None:
    """--dry-run names the search instead of load points and repeats."""
    bench = 'find_max = "concurrency"\nmax_concurrency = 64\n[slo]\nttft_p99 = "500ms"'
    path = write_campaign(tmp_path, '[[variant]]\nname = "baseline"\n', bench=bench)
    run = servegate("run", path, "--dry-run")
    assert run.returncode == 0, run.stderr
    assert (
        "variant baseline: capacity search per start (concurrency 1 to 64, at most 15 "
        "probes, ttft_p99<=500ms)" in run.stdout
    )


def test_until_precision_is_refused_for_a_search(tmp_path: Path) -> None:
    """--until-precision narrows load points' intervals: one sentence, exit 2."""
    bench = 'find_max = "concurrency"\nmax_concurrency = 64\n[slo]\nttft_p99 = "500ms"'
    path = write_campaign(tmp_path, '[[variant]]\nname = "baseline"\n', bench=bench)
    run = servegate(
        "run", path, "--db", tmp_path / "c.db", "--until-precision", "2%", "--max-starts", "5"
    )
    assert run.returncode == 2, run.stderr
    assert "a find_max campaign's answer is its capacity per start: set restarts" in run.stderr
