"""servegate tune: a flag search on the simulator's tuning surface, through the real CLI."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from servegate.campaign.tune import Param, SearchSpace, Trial, dominated
from servegate.sim.surface import Flags, evaluate
from servegate.store import Store

pytest.importorskip("optuna")

# an 8B model on 80 GiB: 0.94 without fp8 and 0.96 with graphs up to 128 or more run out of
# memory while capturing CUDA graphs; 0.94 with fp8 starts
CAMPAIGN = """
[campaign]
name = "tune-sim"
baseline = "baseline"

[server]
engine = "sglang"
command = "{{python}} -m servegate sim --engine sglang --port {{port}} --time-scale 0.005 {extra}"
port = "auto"
timeout_s = 60
env = {{ FLASHINFER_WORKSPACE_BASE = "{cache}" }}

[bench]
concurrency = 8
requests = {requests}
input_len = 16
output_len = 8
repeats = 1

[search]
name = "f{{fraction}}-bs{{bs}}-{{quant}}"
args = [
  "--mem-fraction-static", "{{fraction}}", "--cuda-graph-max-bs", "{{bs}}",
  "--quantization", "{{quant}}", "--attention-backend", "fa3", "--chunked-prefill-size", "4096",
]
objective = "throughput"

[search.params.fraction]
choices = [0.91, 0.94, 0.96]
memory = "increasing"

[search.params.bs]
choices = [64, 128, 160]
memory = "increasing"

[search.params.quant]
choices = ["none", "fp8"]
"""


def write(tmp_path: Path, *, requests: int = 16, extra: str = "", text: str = CAMPAIGN) -> Path:
    path = tmp_path / "search.toml"
    cache = tmp_path / "cache"
    path.write_text(text.format(requests=requests, extra=extra, cache=cache))
    return path


def tune(path: Path, *args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    db = path.parent / "t.db"
    return subprocess.run(
        [sys.executable, "-m", "servegate", "tune", str(path), "--db", str(db), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def events(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def surface_oom(params: dict[str, Any]) -> bool:
    """Whether the simulator's surface says this configuration runs out of memory."""
    flags = Flags(
        mem_fraction_static=float(str(params["fraction"])),
        cuda_graph_max_bs=int(str(params["bs"])),
        chunked_prefill_size=4096,
        attention_backend="fa3",
        quantization=str(params["quant"]),
    )
    return evaluate(flags).oom_phase is not None


def test_a_tune_finds_a_feasible_best_and_keeps_ooms_infeasible(tmp_path: Path) -> None:
    """A small budget on the surface: the best is feasible, the OOM-ed trials are
    infeasible with kind oom (never scored), and each matches the surface; every trial is
    an attempt of the campaign in the store."""
    path = write(tmp_path)
    log = tmp_path / "trials.jsonl"
    # seed 4: TPE's 5 seeded random draws hold 3 that run out of memory and 2 that start
    done = tune(path, "--max-trials", "8", "--events-file", str(log), "--json", "--seed", "4")
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout)
    trials = events(log)
    assert [t["trial"] for t in trials] == list(range(9))  # the baseline, then 8
    assert result["best"]["state"] == "feasible"
    assert not surface_oom(result["best"]["params"])
    infeasible = [t for t in trials if t["state"] == "infeasible"]
    assert infeasible, "the seeded draws include a configuration that runs out of memory"
    for trial in trials[1:]:
        if trial["state"] in ("infeasible", "skipped"):
            assert trial["kind"] == "oom"
            assert trial["value"] is None  # never scored
            assert surface_oom(trial["params"])  # a skip too: it really would have crashed
        elif trial["state"] == "feasible":
            assert not surface_oom(trial["params"])
    with Store.open(tmp_path / "t.db") as store:
        info = store.find_campaign("tune-sim")
        assert info is not None
        attempts = store.attempts(info.id)
    started = {a.variant for a in attempts}
    for trial in trials:
        if trial["state"] == "skipped":
            assert trial["variant"] not in started  # skipped without a start
        elif trial["state"] in ("feasible", "infeasible"):
            assert trial["variant"] in started
    for attempt in attempts:
        if attempt.variant in {t["variant"] for t in infeasible}:
            assert attempt.verdict is not None and attempt.verdict["kind"] == "oom"


def space() -> SearchSpace:
    return SearchSpace(
        params=(
            Param(name="fraction", choices=(0.91, 0.94, 0.96), memory=True),
            Param(name="bs", choices=(64, 128, 160), memory=True),
            Param(name="quant", choices=("none", "fp8")),
        ),
        name="f{fraction}-bs{bs}-{quant}",
        args="",
        env={},
        command=None,
        objective="throughput",
        sampler="tpe",
    )


def test_the_memory_skip_skips_exactly_the_dominated_configurations() -> None:
    """Skipped: at least the OOM-ed trial in every memory parameter and equal in the
    others. Not skipped: smaller in one, or another quantization (fp8 lowers memory: the
    surface starts it)."""
    oom = Trial(
        number=1,
        name="f0.94-bs128-none",
        values={"fraction": 0.94, "bs": 128, "quant": "none"},
        state="infeasible",
        value=None,
        kind="oom",
    )
    grid = [
        {"fraction": f, "bs": b, "quant": q}
        for f in (0.91, 0.94, 0.96)
        for b in (64, 128, 160)
        for q in ("none", "fp8")
    ]
    skipped = [v for v in grid if dominated(space(), v, [oom]) is not None]
    assert skipped == [
        {"fraction": 0.94, "bs": 128, "quant": "none"},
        {"fraction": 0.94, "bs": 160, "quant": "none"},
        {"fraction": 0.96, "bs": 128, "quant": "none"},
        {"fraction": 0.96, "bs": 160, "quant": "none"},
    ]
    assert all(surface_oom(dict(v)) for v in skipped)
    assert not surface_oom({"fraction": 0.94, "bs": 128, "quant": "fp8"})


def test_a_resume_after_sigint_measures_no_finished_trial_twice(tmp_path: Path) -> None:
    """Ctrl-C mid-search: exit 130; --resume goes on to the budget, redoing only the trial
    in flight; no configuration is measured to the end twice."""
    path = write(tmp_path, requests=400, extra="--itl-ms 20")
    log = tmp_path / "trials.jsonl"
    db = tmp_path / "t.db"
    argv = [sys.executable, "-m", "servegate", "tune", str(path), "--db", str(db)]
    argv += ["--max-trials", "5", "--events-file", str(log), "-q"]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:  # until two trials (baseline and one) ended
            if log.exists() and len(log.read_text().splitlines()) >= 2:
                break
            assert proc.poll() is None, proc.communicate()[1][-3000:]
            time.sleep(0.1)
        time.sleep(0.5)  # into the next trial's start or benchmark
        os.kill(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err[-3000:]
    before = events(log)
    assert "--resume" in err
    again = tune(path, "--max-trials", "5", "--events-file", str(log), "--resume", "-q")
    assert again.returncode == 0, again.stderr[-3000:]
    after = events(log)[len(before) :]
    assert max(int(str(t["trial"])) for t in after) == 5
    with Store.open(db) as store:
        info = store.find_campaign("tune-sim")
        assert info is not None
        attempts = store.attempts(info.id)
    ended = Counter(a.variant for a in attempts if str(a.status) in ("done", "crash", "timeout"))
    assert ended and max(ended.values()) == 1, ended  # nothing measured to the end twice
    for trial in before:
        measured = [a for a in attempts if a.variant == trial["variant"]]
        assert len(measured) == 1, (trial, measured)  # a finished trial was not started again


@pytest.mark.parametrize(
    ("search", "words"),
    [
        ('[search]\nargs = "--x {a}"\n[search.params.a]\nlow = 5\nhigh = 1\n', "low < high"),
        (
            '[search]\nargs = "--x {a}"\nobjective = "speed"\n[search.params.a]\nchoices = [1]\n',
            "objective",
        ),
        (
            '[search]\nargs = "--x {a}"\n[search.params.a]\nchoices = ["x"]\n'
            'memory = "increasing"\n',
            "memory",
        ),
        (
            '[search]\nargs = "--x {a}"\n[search.params.a]\nchoices = [1]\nwhen = { b = 1 }\n',
            "when",
        ),
        (
            '[search]\nname = "only-{a}"\nargs = "--x {a} {b}"\n'
            "[search.params.a]\nchoices = [1]\n[search.params.b]\nchoices = [2]\n",
            "name template",
        ),
        ("", "needs a [search] table"),
        (
            '[search]\nargs = "--x {a}"\nobjective = "capacity"\n'
            "[search.params.a]\nchoices = [1]\n",
            "find_max",
        ),
        (
            '[search]\nargs = "--x {a}"\nobjective = "goodput"\n[search.params.a]\nchoices = [1]\n',
            "[slo]",
        ),
        (
            '[search]\nargs = "--x {a}"\nobjective = "throughput"\nfidelity = { keep = 0.5 }\n'
            "[search.params.a]\nchoices = [1]\n",
            "fidelity: say what makes the rung short",
        ),
        (
            '[search]\nargs = "--x {a}"\nobjective = "throughput"\n'
            "fidelity = { requests = 4, keep = 1.5 }\n[search.params.a]\nchoices = [1]\n",
            "fidelity.keep",
        ),
        (
            '[search]\nargs = "--x {a}"\nobjective = "throughput"\nfidelity = { requests = 0 }\n'
            "[search.params.a]\nchoices = [1]\n",
            "fidelity.requests",
        ),
        (
            '[search]\nargs = "--x {a}"\n[search.params.a]\nchoices = [1]\ncache = "yes"\n',
            "params.a.cache",
        ),
    ],
)
def test_bad_search_input_is_exit_2_with_one_sentence(
    tmp_path: Path, search: str, words: str
) -> None:
    """A mistake in [search] is exit 2 before anything starts, one sentence naming it."""
    head = CAMPAIGN.split("[search]", maxsplit=1)[0].format(requests=16, extra="", cache=tmp_path)
    path = tmp_path / "bad.toml"
    path.write_text(head + search)
    done = tune(path, "--max-trials", "3")
    assert done.returncode == 2, done.stderr
    assert words in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "t.db").exists()


def test_names_read_back_into_values_with_conditions_and_floats() -> None:
    """A trial's variant name gives its values back (what --resume relies on): a float
    range, and a parameter absent when its condition is not met."""
    conditional = SearchSpace(
        params=(
            Param(name="backend", choices=("fa3", "triton")),
            Param(name="bs", low=16, high=256, integer=True, log=True),
            Param(name="frac", low=0.8, high=0.95),
            Param(name="tile", choices=(32, 64), when=(("backend", "triton"),)),
        ),
        name="{backend}-bs{bs}-f{frac}-t{tile}",
        args="",
        env={},
        command=None,
        objective="throughput",
        sampler="tpe",
    )
    for values in (
        {"backend": "fa3", "bs": 48, "frac": 0.912345678901},
        {"backend": "triton", "bs": 16, "frac": 0.8, "tile": 64},
    ):
        name = conditional.name_of(values)
        assert conditional.values_of(name) == values
    assert conditional.name_of({"backend": "fa3", "bs": 48, "frac": 0.9}) == "fa3-bs48-f0.9-tnone"
    assert conditional.values_of("something-else") is None


def test_the_gpu_hours_budget_ends_the_search(tmp_path: Path) -> None:
    """--gpu-hours: the search stops once its starts' wall time reaches the budget."""
    path = write(tmp_path)
    done = tune(path, "--gpu-hours", "0.0001", "--json", "-q")  # 0.36 s: the baseline spends it
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout)
    assert result["stopped_by"].startswith("--gpu-hours 0.0001 spent")
    assert [t["trial"] for t in result["trials"]] == [0]
    assert result["gpu_hours"] >= 0.0001


def test_every_trial_infeasible_is_exit_1(tmp_path: Path) -> None:
    """A baseline and a space that all run out of memory while starting: exit 1, no best."""
    text = CAMPAIGN.replace(
        "[search]",
        '[[variant]]\nname = "baseline"\nargs = "--mem-fraction-static 0.96"\n\n[search]',
    ).replace("choices = [0.91, 0.94, 0.96]", "choices = [0.96]")
    text = text.replace("choices = [64, 128, 160]", "choices = [128, 160]")  # fp8 64 starts
    path = write(tmp_path, text=text)
    done = tune(path, "--max-trials", "2", "--json", "-q")
    assert done.returncode == 1, done.stderr[-3000:]
    result = json.loads(done.stdout)
    assert result["best"] is None
    assert all(t["state"] in ("infeasible", "skipped", "reused") for t in result["trials"])
    assert {t["kind"] for t in result["trials"]} == {"oom"}


def test_finalists_are_restarted_fresh_and_interleaved(tmp_path: Path) -> None:
    """--finalists 2: the two best trials and the baseline get 2 fresh starts each, in
    rounds (every start 2 before any start 3); each finalist's mean and interval come from
    those fresh starts only."""
    path = write(tmp_path)
    done = tune(path, "--max-trials", "3", "--finalists", "2", "--finalist-starts", "2", "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout)
    finalists = result["finalists"]
    feasible = [t for t in result["trials"] if t["state"] == "feasible" and t["trial"] > 0]
    assert len(finalists) == 1 + min(2, len(feasible))
    assert finalists[-1]["variant"] == "baseline"
    assert finalists[-1]["vs_baseline"]["ratio"] == pytest.approx(1.0)
    for finalist in finalists:
        assert len(finalist["starts"]) == 2
        low, high = finalist["interval"]
        assert low <= finalist["mean"] <= high
        ratio = finalist["vs_baseline"]  # Fieller's interval over the paired fresh starts
        assert ratio["low"] is not None, ratio
        assert ratio["low"] <= ratio["ratio"] <= ratio["high"]
    with Store.open(tmp_path / "t.db") as store:
        info = store.find_campaign("tune-sim")
        assert info is not None
        attempts = store.attempts(info.id)
    names = {f["variant"] for f in finalists}
    fresh = [a for a in attempts if a.variant in names and (a.start or 1) > 1]
    assert sorted(Counter(a.variant for a in fresh).values()) == [2] * len(names)
    order = [a.start or 1 for a in sorted(fresh, key=lambda a: a.id)]
    assert order == sorted(order)  # rounds: every configuration's start 2, then start 3


def test_an_unset_parameter_takes_its_argument_and_flag_out() -> None:
    """A parameter whose condition is not met leaves no empty argument behind: its flag
    and value go, and so does an env key that uses it."""
    from servegate.campaign.tune import _trial_variant

    conditional = SearchSpace(
        params=(
            Param(name="backend", choices=("fa3", "triton")),
            Param(name="tile", choices=(32, 64), when=(("backend", "triton"),)),
        ),
        name="{backend}-t{tile}",
        args="--attention-backend {backend} --triton-tile {tile} --extra=x{tile} --port-less",
        env={"TILE": "{tile}", "B": "{backend}"},
        command=None,
        objective="throughput",
        sampler="tpe",
    )
    fa3 = _trial_variant(conditional, {"backend": "fa3"})
    assert fa3["args"] == ["--attention-backend", "{backend}", "--port-less"]
    assert fa3["env"] == {"B": "{backend}"}
    assert fa3["name"] == "fa3-tnone"
    triton = _trial_variant(conditional, {"backend": "triton", "tile": 64})
    assert triton["args"] == [
        "--attention-backend",
        "{backend}",
        "--triton-tile",
        "{tile}",
        "--extra=x{tile}",
        "--port-less",
    ]
    assert triton["vars"] == {"backend": "triton", "tile": "64"}


# a space whose speed differs tenfold (--itl-ms 4 or 40): a slow configuration after a fast
# one is clearly worse at the short rung; nothing runs out of memory (0.91, fp8)
PRUNING = CAMPAIGN.replace(
    """name = "f{{fraction}}-bs{{bs}}-{{quant}}"
args = [
  "--mem-fraction-static", "{{fraction}}", "--cuda-graph-max-bs", "{{bs}}",
  "--quantization", "{{quant}}", "--attention-backend", "fa3", "--chunked-prefill-size", "4096",
]
objective = "throughput"
""",
    """name = "itl{{itl}}-bs{{bs}}"
args = "--itl-ms {{itl}} --cuda-graph-max-bs {{bs}} --mem-fraction-static 0.91 --quantization fp8"
objective = "throughput"
fidelity = {{ requests = 4, keep = 0.01, min_trials = 1 }}

[search.params.itl]
choices = [4, 40]

[search.params.bs]
choices = [32, 64, 128]
""",
).split("[search.params.fraction]")[0]


def test_a_pruned_trial_stops_at_its_rung_and_a_resume_keeps_it_pruned(tmp_path: Path) -> None:
    """[search.fidelity]: every trial runs a short rung (NAME~rung1) first; one clearly
    worse than the best rung so far is pruned there (no full measurement, its rung value
    kept, its cost counted); --resume reads it back pruned and starts it never again."""
    path = write(tmp_path, text=PRUNING)
    log = tmp_path / "trials.jsonl"
    done = tune(path, "--max-trials", "4", "--events-file", str(log), "--json", "--seed", "4")
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout)
    pruned = [t for t in result["trials"] if t["state"] == "pruned"]
    assert pruned, [(t["variant"], t["state"], t["rung_value"]) for t in result["trials"]]
    assert result["pruned"] == len(pruned)
    assert "-> pruned at rung 1 of 2: " in done.stderr
    feasible = [t for t in result["trials"] if t["state"] == "feasible" and t["trial"] > 0]
    assert feasible and all(t["rung"] == 2 for t in feasible)
    for trial in pruned:
        assert trial["rung"] == 1 and trial["value"] is None and trial["cost_s"] > 0
        earlier = [t["rung_value"] for t in feasible if t["trial"] < trial["trial"]]
        assert earlier and trial["rung_value"] < max(earlier)  # worse than the best rung
    with Store.open(tmp_path / "t.db") as store:
        info = store.find_campaign("tune-sim")
        assert info is not None
        first = Counter(a.variant for a in store.attempts(info.id))
    for trial in pruned:
        assert first[trial["variant"] + "~rung1"] == 1
        assert first[trial["variant"]] == 0  # not fully measured
    for trial in feasible:
        assert first[trial["variant"] + "~rung1"] == 1 and first[trial["variant"]] == 1
    report = subprocess.run(
        [sys.executable, "-m", "servegate", "report", "--db", str(tmp_path / "t.db"), "--json"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert report.returncode == 0, report.stderr
    rows = {v["name"]: v for v in json.loads(report.stdout)["variants"]}
    rungs = [name for name in rows if name.endswith("~rung1")]
    assert rungs, list(rows)
    for name in rungs:  # a short rung is never compared with the full baseline
        assert rows[name]["reference"] is None, rows[name]
        assert rows[name]["not_compared"].startswith("not compared: the short rung of tune trial")
    compared = {c["variant"] for c in json.loads(report.stdout)["comparisons"]}
    assert not compared & set(rungs)

    again = tune(path, "--max-trials", "6", "--json", "--seed", "4", "--resume", "-q")
    assert again.returncode == 0, again.stderr[-3000:]
    resumed = json.loads(again.stdout)
    by_trial = {t["trial"]: t for t in resumed["trials"] if t["resumed"]}
    for trial in pruned:
        back = by_trial[trial["trial"]]
        assert (back["state"], back["rung"], back["rung_value"]) == (
            "pruned",
            1,
            pytest.approx(trial["rung_value"]),
        )
    with Store.open(tmp_path / "t.db") as store:
        info = store.find_campaign("tune-sim")
        assert info is not None
        after = Counter(a.variant for a in store.attempts(info.id))
    for trial in pruned:  # measured never again: neither its rung nor its full objective
        assert after[trial["variant"] + "~rung1"] == 1 and after[trial["variant"]] == 0


def test_the_sampler_s_random_draws_run_warm_cache_first() -> None:
    """With a cache = true parameter, TPE's seeded random draws are asked together and
    run grouped by cache key: a key, once left, does not come back among them."""
    import optuna

    from servegate.campaign.tune import STARTUP_TRIALS, Search, TuneOptions

    cached = SearchSpace(
        params=(
            Param(name="backend", choices=("fa3", "flashinfer", "triton"), cache=True),
            Param(name="bs", choices=(32, 64, 128, 160, 256)),
        ),
        name="{backend}-{bs}",
        args="",
        env={},
        command=None,
        objective="throughput",
        sampler="tpe",
    )
    for seed in range(4):
        search = Search(optuna, cached, TuneOptions(max_trials=10, seed=seed), campaign="c")
        order = []
        while search.spent_why() is None:
            values = search.next_values() or {}
            name = cached.name_of(values) if values else "baseline"
            found = search.without_start(name, values) or Trial(
                number=0, name=name, values=values, state="feasible", value=1.0, cost_s=1.0
            )
            trial = search.record(found)
            if 0 < trial.number <= STARTUP_TRIALS and trial.state == "feasible":
                order.append(values["backend"])  # the random draws (re-draws are reused)
        draws = order
        runs = [k for i, k in enumerate(draws) if i == 0 or draws[i - 1] != k]
        assert len(runs) == len(set(runs)), (seed, draws)  # each key in one run
