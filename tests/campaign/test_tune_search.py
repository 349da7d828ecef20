"""servegate tune's samplers by name, and what a search reports: the Pareto front, the
parameters' importances and the crash map, from real trials on the simulator."""

from __future__ import annotations

import importlib.util
import json
import statistics
import sys
from collections import Counter
from typing import Any

import pytest
from tests.campaign.test_tune import events, space, surface_oom, tune, write

from servegate.campaign.tune import SAMPLERS, Param, Search, Trial, TuneOptions
from servegate.report.search import _crash_map
from servegate.store import Store

optuna = pytest.importorskip("optuna")

TAKE_CONSTRAINTS = {"tpe", "gp", "nsga2"}  # the samplers told crashes through constraints


def measured(values: dict[str, Any] | None) -> tuple[str, float | None, str | None]:
    """A stand-in measurement from the simulator's surface: state, value, kind."""
    if values is None:
        return "feasible", 100.0, None
    if surface_oom(values):
        return "infeasible", None, "oom"
    return "feasible", 100.0 + values["bs"] / 10 + (5.0 if values["quant"] == "fp8" else 0.0), None


@pytest.mark.parametrize("name", [s for s in SAMPLERS if s != "gp"] + ["gp"])
def test_each_sampler_proposes_valid_configurations_with_crashes_as_constraints(
    name: str,
) -> None:
    """Every offered sampler proposes configurations of the space through Search; an
    out-of-memory trial reaches the samplers that take constraints as a violated
    constraint (never a score), and the memory rule skips what it dominates."""
    if name == "gp" and importlib.util.find_spec("torch") is None:
        pytest.skip("the gp sampler needs torch, not installed here")
    grid = space()
    search = Search(optuna, grid, TuneOptions(max_trials=14, sampler=name, seed=1), campaign="c")
    while search.spent_why() is None:
        values = search.next_values()
        trial_name = "baseline" if values is None else grid.name_of(values)
        found = search.without_start(trial_name, values or {})
        if found is None:
            state, value, kind = measured(values)
            found = Trial(
                number=0, name=trial_name, values=values or {}, state=state, value=value, kind=kind
            )
        search.record(found)
    proposed = [t for t in search.trials if t.number > 0]
    assert len(proposed) == 14
    for trial in proposed:
        assert trial.values["fraction"] in (0.91, 0.94, 0.96)
        assert trial.values["bs"] in (64, 128, 160)
        assert trial.values["quant"] in ("none", "fp8")
        if trial.state == "skipped":
            assert surface_oom(trial.values)  # the memory rule never skips a feasible one
    crashed = [t for t in proposed if t.state in ("infeasible", "skipped")]
    assert crashed, "14 draws from a space with 7 OOM configurations of 18 hold one"
    told = search.study.trials
    assert len(told) == 14
    for frozen, trial in zip(told, proposed, strict=True):
        constraints = frozen.system_attrs.get("constraints")
        if name in TAKE_CONSTRAINTS:
            infeasible = trial.value is None  # crashed, skipped, or a crashed one proposed again
            assert list(constraints) == [1.0 if infeasible else 0.0], (trial, constraints)
        else:
            assert constraints is None  # random and qmc take no constraints: nothing to learn


def test_a_sampler_by_flag_runs_a_short_tune(tmp_path: Any) -> None:
    """--sampler nsga2 replaces [search] sampler: a short real tune on the simulator."""
    path = write(tmp_path)
    done = tune(path, "--max-trials", "3", "--sampler", "nsga2", "--json", "-q")
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout)
    assert [t["trial"] for t in result["trials"]] == [0, 1, 2, 3]


@pytest.mark.parametrize("where", ["flag", "file"])
def test_an_unknown_sampler_is_exit_2_in_one_sentence(tmp_path: Any, where: str) -> None:
    """cmaes is not offered (no constraints, no categorical parameters): exit 2 before
    anything starts, one line naming the samplers there are."""
    path = write(tmp_path)
    if where == "file":
        path.write_text(path.read_text().replace("[search]\n", '[search]\nsampler = "cmaes"\n'))
        done = tune(path, "--max-trials", "2")
    else:
        done = tune(path, "--max-trials", "2", "--sampler", "cmaes")
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "cmaes" in done.stderr
    assert "tpe, random, qmc, gp or nsga2" in done.stderr
    assert not (tmp_path / "t.db").exists()


def test_the_gp_sampler_without_torch_names_what_to_install(tmp_path: Any) -> None:
    """gp needs torch (and scipy), which Optuna does not install: exit 2, one sentence."""
    if importlib.util.find_spec("torch") is not None:
        pytest.skip("torch is installed here: the gp sampler runs")
    path = write(tmp_path)
    done = tune(path, "--max-trials", "2", "--sampler", "gp")
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "pip install torch" in done.stderr
    assert not (tmp_path / "t.db").exists()


def dominates(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """At least as good in every measure both have, better in one (the test's own rule)."""
    keys = (("objective", 1), ("ttft_ms_p99", -1), ("tpot_ms_p99", -1), ("joules_per_token", -1))
    pairs = [(s * a[k], s * b[k]) for k, s in keys if a[k] is not None and b[k] is not None]
    return all(x >= y for x, y in pairs) and any(x > y for x, y in pairs)


def test_a_tune_reports_its_front_importances_and_crash_map(tmp_path: Any) -> None:
    """A real tune whose trials hold OOMs and feasible ones: the crash map counts each
    value's trials run, feasible and infeasible by kind as the trials (and the store's
    verdicts) say; the front holds every feasible trial that nothing dominates and no
    other; importances come with enough feasible trials; servegate report shows the same."""
    path = write(tmp_path)
    log = tmp_path / "trials.jsonl"
    done = tune(path, "--max-trials", "10", "--seed", "4", "--events-file", str(log), "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout)
    trials = [t for t in events(log) if t["trial"] > 0 and t["state"] != "reused"]
    assert any(t["kind"] == "oom" and t["state"] == "infeasible" for t in trials)

    buckets = {(b["param"], b["value"]): b for b in result["crash_map"]["buckets"]}
    assert result["crash_map"]["skips_known"] is True
    for param, choices in (("fraction", ("0.91", "0.94", "0.96")), ("bs", ("64", "128", "160"))):
        for choice in choices:
            mine = [t for t in trials if str(t["params"][param]) == choice]
            bucket = buckets[(param, choice)]
            assert bucket["run"] == sum(t["state"] in ("feasible", "infeasible") for t in mine)
            assert bucket["feasible"] == sum(t["state"] == "feasible" for t in mine)
            kinds = Counter(t["kind"] for t in mine if t["state"] == "infeasible")
            assert bucket["infeasible"] == dict(kinds)
            assert bucket["skipped"] == sum(t["state"] == "skipped" for t in mine)
    with Store.open(tmp_path / "t.db", read_only=True) as store:
        info = store.find_campaign("tune-sim")
        assert info is not None
        verdicts = Counter(
            (a.verdict or {}).get("kind")
            for a in store.attempts(info.id)
            if str(a.status) == "crash"
        )
        stored = store.points(info.id)
    crashed = sum(sum(buckets[("quant", q)]["infeasible"].values()) for q in ("none", "fp8"))
    assert crashed == verdicts["oom"] == sum(verdicts.values())

    pareto = result["pareto"]
    feasible = {t["trial"] for t in events(log) if t["state"] == "feasible"}
    assert {p["trial"] for p in pareto["points"]} == feasible
    for point in pareto["points"]:
        ttft = [p.summary["ttft_ms_p99"] for p in stored if p.variant == point["variant"]]
        assert point["ttft_ms_p99"] == pytest.approx(statistics.fmean(ttft))
        assert point["joules_per_token"] is None  # not measured: absent, not 0
        beaten = [q for q in pareto["points"] if dominates(q, point)]
        assert point["front"] == (not beaten), (point, beaten)
    assert pareto["front"] == [p for p in pareto["points"] if p["front"]]
    assert pareto["front"]

    importances = result["importances"]
    assert importances["trials"] >= 4, importances
    assert set(importances["values"]) == {"fraction", "bs", "quant"}
    assert sum(importances["values"].values()) == pytest.approx(1.0)

    report, page = tune_report(tmp_path)
    assert "## Search: crash map" in report
    assert f"| fraction | 0.96 | {buckets[('fraction', '0.96')]['run']} |" in report
    if page is not None:
        assert "<h2>Search: crash map</h2>" in page
        assert f"<td>fraction</td><td>0.96</td><td>{buckets[('fraction', '0.96')]['run']}<" in page


def test_the_capacity_front_takes_the_latency_at_the_capacity(tmp_path: Any) -> None:
    """objective = "capacity": a trial's latency on the front is that of its points at
    the highest load that met the SLO, not of every probe."""
    text = (
        write(tmp_path)
        .read_text()
        .replace("concurrency = 8\n", 'find_max = "concurrency"\nmax_concurrency = 16\n')
        .replace('objective = "throughput"', 'objective = "capacity"')
        .replace("[search]", '[slo]\nttft_p99 = "200ms"\n\n[search]')
    )
    path = tmp_path / "search.toml"
    path.write_text(text)
    done = tune(path, "--max-trials", "1", "--seed", "4", "--json", "-q")
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout)
    with Store.open(tmp_path / "t.db", read_only=True) as store:
        info = store.find_campaign("tune-sim")
        assert info is not None
        capacities = store.capacities(info.id)
        stored = store.points(info.id)
    for point in result["pareto"]["points"]:
        (capacity,) = [c for c in capacities if c.variant == point["variant"]]
        load = f"c={capacity.data['bracket']['passes']:g}"
        mine = [p for p in stored if p.variant == point["variant"]]
        assert len({p.load for p in mine}) > 1  # probes at other loads, left out
        at = [p.summary["ttft_ms_p99"] for p in mine if p.load == load]
        assert point["ttft_ms_p99"] == pytest.approx(statistics.fmean(at))
        assert point["objective"] == capacity.data["value"]


def tune_report(tmp_path: Any) -> tuple[str, str | None]:
    """servegate report --markdown of the tune campaign, and its HTML where plotly is."""
    import subprocess

    html = tmp_path / "report.html"
    plotly = importlib.util.find_spec("plotly") is not None
    argv = [sys.executable, "-m", "servegate", "report", "tune-sim", "--markdown"]
    argv += ["--db", str(tmp_path / "t.db")]
    argv += ["--html-file", str(html)] if plotly else []
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout, html.read_text() if plotly else None


def test_the_crash_map_counts_skips_with_the_trial_that_dominated_them() -> None:
    """A skipped configuration is counted in each of its values' buckets with the trial
    that ran out of memory; a range parameter falls in four buckets; a reused trial is
    not counted again; a pruned one is run, neither feasible nor infeasible; an unset
    parameter has its own row."""
    params = (
        Param(name="fraction", low=0.8, high=0.96, memory=True),
        Param(name="quant", choices=("none", "fp8")),
        Param(name="tile", choices=(32, 64), when=(("quant", "fp8"),)),
    )

    def trial(n: int, fraction: float, quant: str, state: str, **more: Any) -> Trial:
        values: dict[str, Any] = {"fraction": fraction, "quant": quant}
        if quant == "fp8":
            values["tile"] = 64
        value = 1.0 if state in ("feasible", "reused") else None
        return Trial(number=n, name=f"t{n}", values=values, state=state, value=value, **more)

    trials = [
        trial(0, 0.8, "none", "feasible"),
        trial(1, 0.93, "none", "infeasible", kind="oom"),
        trial(2, 0.95, "none", "skipped", kind="oom", skipped_by="t1"),
        trial(3, 0.85, "fp8", "feasible"),
        trial(4, 0.85, "fp8", "reused"),
        trial(5, 0.81, "none", "infeasible", kind="timeout"),
        trial(6, 0.86, "none", "pruned"),
    ]
    rows = {(b.param, b.label): b for b in _crash_map(params, trials)}
    assert list(rows)[:4] == [
        ("fraction", "[0.8, 0.84)"),
        ("fraction", "[0.84, 0.88)"),
        ("fraction", "[0.88, 0.92)"),
        ("fraction", "[0.92, 0.96]"),
    ]
    top = rows[("fraction", "[0.92, 0.96]")]
    assert (top.run, top.feasible, top.infeasible, top.skipped) == (
        1,
        0,
        {"oom": 1},
        (("t2", "t1"),),
    )
    low = rows[("fraction", "[0.8, 0.84)")]
    assert (low.run, low.infeasible) == (1, {"timeout": 1})  # the baseline is not a trial
    mid = rows[("fraction", "[0.84, 0.88)")]
    assert (mid.run, mid.feasible, mid.pruned) == (2, 1, 1)
    none = rows[("quant", "none")]
    assert (none.run, none.infeasible, len(none.skipped)) == (3, {"oom": 1, "timeout": 1}, 1)
    assert rows[("quant", "fp8")].run == 1  # the reused trial is not counted again
    assert rows[("tile", "unset")].run == 3
    assert rows[("tile", "64")].feasible == 1
    assert ("tile", "32") in rows and rows[("tile", "32")].run == 0
