"""Datasets on the real simulator: prefix groups hit the cache as designed, traces are
replayed on their own clock with their hash ids shared, each is deterministic by seed, and
a bad dataset spec is one sentence and exit 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.sim.helpers import Sim
from tests.sim.test_prefix_cache import _counters
from tests.sim.test_serving import FAST, READY

from servegate.bench.dataset import VOCABULARY, build_prompts
from servegate.bench.prefix import prefix_words
from servegate.bench.spec import parse_dataset, spec_from_table
from servegate.bench.trace import TraceRow, read_trace, trace_words
from servegate.errors import UsageError


def bench(*args: str) -> subprocess.CompletedProcess[str]:
    """``servegate bench ARGS``, its output captured."""
    return subprocess.run(
        [sys.executable, "-m", "servegate", "bench", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        env=os.environ.copy(),
    )


def _mooncake(path: Path, rows: list[tuple[int, int, int, list[int]]]) -> Path:
    """A Mooncake JSONL trace of (timestamp ms, input, output, hash ids) rows."""
    path.write_text(
        "".join(
            json.dumps({"timestamp": t, "input_length": i, "output_length": o, "hash_ids": h})
            + "\n"
            for t, i, o, h in rows
        )
    )
    return path


# --- the one-line form and the table -------------------------------------------------


def test_the_one_line_form_fills_defaults_and_round_trips() -> None:
    """prefix:groups=2 keeps the other keys' defaults, and its text parses back to it."""
    spec = parse_dataset("prefix:groups=2")
    assert dict(spec.params) == {"groups": 2, "per_group": 16, "shared": 512, "unique": 128}
    assert parse_dataset(spec.text) == spec
    assert spec.text == "prefix:groups=2,per_group=16,shared=512,unique=128"


@pytest.mark.parametrize(
    ("text", "file"),
    [
        ("trace:/data/a:b,c=d.jsonl,speed=2", "/data/a:b,c=d.jsonl"),
        ("trace:speed=2,file=/data/x,speed=3.jsonl", "/data/x,speed=3.jsonl"),
        ("prompts.jsonl", "prompts.jsonl"),
        ("jsonl:C:/p,q.jsonl", "C:/p,q.jsonl"),
    ],
)
def test_a_path_may_hold_colons_commas_and_equals(text: str, file: str) -> None:
    """The path runs to the first ,KEY= of its kind; file=PATH, last, takes the rest."""
    spec = parse_dataset(text)
    assert spec.file == file
    assert parse_dataset(spec.text) == spec


def test_the_table_is_the_same_spec_as_the_one_line_form() -> None:
    """[bench.dataset] kind = "trace", file, speed gives what trace:FILE,speed=2 gives."""
    table = {"kind": "trace", "file": "t.jsonl", "speed": 2}
    assert spec_from_table(table, "c.toml [bench.dataset]") == parse_dataset(
        "trace:t.jsonl,speed=2"
    )


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ("prefix:groups=0", "groups=0 must be a positive integer"),
        ("prefix:size=3", "'size' is not a key of prefix"),
        ("prefix:groups=2,groups=3", "gives groups twice"),
        ("bogus", "is not a dataset"),
        ("trace:t.jsonl,speed=-1", "speed=-1 must be a positive number"),
        ("trace:t.jsonl,format=csv", "is not one of: mooncake, azure, burstgpt"),
        ("sharegpt:", "sharegpt needs a file"),
        ("random:input=gauss:1:2", "is not a length distribution"),
        ("random:output=uniform:9:5", "HIGH is below LOW"),
        ("random:input=file:/nonexistent/l.txt", "the file cannot be read"),
        ("multiturn:think=-1", "think=-1 must be zero or a positive number"),
    ],
)
def test_a_bad_spec_is_one_sentence_and_exit_2(spec: str, words: str) -> None:
    """A bad --dataset is refused before anything is sent: one sentence naming the fix."""
    proc = bench("--url", "http://127.0.0.1:9", "--dataset", spec, "--requests", "1")
    assert (proc.returncode, proc.stdout) == (2, "")
    assert words in proc.stderr
    assert proc.stderr.startswith("Error: ") and proc.stderr.count("\n") == 1


def test_a_trace_with_a_rate_is_refused() -> None:
    """--rate cannot go with a trace, whose rows are the schedule."""
    proc = bench("--url", "http://127.0.0.1:9", "--dataset", "trace:t.jsonl", "--rate", "4")
    assert proc.returncode == 2
    assert "--rate cannot go with a trace dataset" in proc.stderr


# --- prefix ---------------------------------------------------------------------------


def test_prefix_groups_share_their_prefix_and_nothing_else() -> None:
    """Each prompt is its group's `shared` words then `unique` words of its own."""
    spec = parse_dataset("prefix:groups=3,per_group=4,shared=20,unique=7")
    prompts = prefix_words(spec, 12, 5, VOCABULARY)
    assert {len(p) for p in prompts} == {27}
    assert len({tuple(p[:20]) for p in prompts}) == 3
    assert len({tuple(p[20:]) for p in prompts}) == 12


def test_prefix_hit_rate_equals_the_design_on_the_simulator(port: int) -> None:
    """The point's measured hit rate (vLLM's prefix_cache_hits / queries on the simulator)
    equals the rate its prefix groups imply (whole 16-token blocks) within 1 point, and
    that design is what the groups' shapes give."""
    text = "prefix:groups=4,per_group=6,shared=200,unique=40"
    with Sim(port, "--engine", "vllm", *FAST) as sim:
        sim.wait_line(READY["vllm"])
        proc = bench(
            "--url", sim.url, "--dataset", text, "--requests", "24", "--output-len", "2",
            "--seed", "3", "--json",
        )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    (point,) = json.loads(proc.stdout)["points"]
    cache = point["cache"]
    # 4 first sends hit nothing; 20 others hit 12 blocks (192) of their 240 tokens
    assert cache["design_hit_rate"] == pytest.approx(20 * 192 / (24 * 240))
    assert abs(cache["measured_hit_rate"] - cache["design_hit_rate"]) <= 0.01
    assert (cache["contaminated"], cache["evicted"]) == (False, False)
    assert point["settings"]["dataset"] == text


# --- trace ----------------------------------------------------------------------------


def test_requests_sharing_hash_ids_share_those_blocks() -> None:
    """Rows with hash ids [1, 2] and [1, 2, 3] share 2 blocks of text; [4] shares none."""
    rows = [
        TraceRow(at_s=0.0, input_len=40, output_len=1, hash_ids=(1, 2, 3)),
        TraceRow(at_s=0.1, input_len=32, output_len=1, hash_ids=(1, 2)),
        TraceRow(at_s=0.2, input_len=16, output_len=1, hash_ids=(4,)),
    ]
    a, b, c = trace_words(rows, 16, 0, VOCABULARY)
    assert [len(a), len(b), len(c)] == [40, 32, 16]
    assert a[:32] == b
    assert c != a[:16]


def test_trace_hits_follow_its_hash_ids_on_the_simulator(port: int, tmp_path: Path) -> None:
    """A Mooncake trace whose rows share hash ids hits the simulator's cache as the ids
    say (one at a time, --concurrency 1): 0, then 2 blocks, then 3 of 4 (a block that a
    row's input_length cuts short is not a cached block)."""
    trace = _mooncake(
        tmp_path / "t.jsonl",
        [(0, 48, 2, [1, 2, 3]), (10, 40, 2, [1, 2, 5]), (20, 64, 2, [1, 2, 3, 6])],
    )
    with Sim(port, "--engine", "vllm", *FAST) as sim:
        sim.wait_line(READY["vllm"])
        proc = bench(
            "--url", sim.url, "--dataset", f"trace:{trace},block=16", "--requests", "3",
            "--concurrency", "1", "--cache", "share", "--quiet",
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        counters = _counters(sim.url)
    assert counters["vllm:prefix_cache_queries_total"] - 1 == 48 + 40 + 64
    assert counters["vllm:prefix_cache_hits_total"] == 0 + 32 + 48


def test_trace_replay_sends_on_the_trace_clock(port: int, tmp_path: Path) -> None:
    """A trace replayed at speed=2 is scheduled at each row's timestamp / 2 to the
    microsecond, and sent within 2 ms of it (the send times the client logs: the median
    of them, as a machine shared with other work preempts the client now and then), with
    the trace's output lengths as max_tokens and no ignore_eos (so an output shorter
    than asked is no warning)."""
    stamps = [round(i * 47.3 + (i % 4) * 9) for i in range(30)]
    trace = _mooncake(
        tmp_path / "t.jsonl", [(t, 8 + i, 2 + i % 3, [i]) for i, t in enumerate(stamps)]
    )
    with Sim(port, "--engine", "vllm", *FAST) as sim:
        sim.wait_line(READY["vllm"])
        proc = bench(
            "--url", sim.url, "--dataset", f"trace:{trace},speed=2", "--requests", "30",
            "--json",
        )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    (point,) = json.loads(proc.stdout)["points"]
    samples = sorted(point["samples"], key=lambda s: s["index"])
    assert [s["index"] for s in samples] == list(range(30))
    planned = [t / 1000 / 2 for t in stamps]
    assert [s["scheduled_s"] for s in samples] == pytest.approx(planned, abs=1e-6)
    late_ms = sorted((s["send_s"] - p) * 1000 for s, p in zip(samples, planned, strict=True))
    assert late_ms[0] >= 0
    assert late_ms[15] <= 2.0, late_ms
    assert [s["output_len"] for s in samples] == [2 + i % 3 for i in range(30)]
    assert point["settings"]["output_len"] is None
    # the model may stop before max_tokens without ignore_eos: no warning for that
    assert not [w for w in point["warnings"] if "output length other than requested" in w]


def test_azure_and_burstgpt_csv_traces_are_read(tmp_path: Path) -> None:
    """Azure's datetime stamps and BurstGPT's seconds become offsets from the first row."""
    azure = tmp_path / "azure.csv"
    azure.write_text(
        "TIMESTAMP,ContextTokens,GeneratedTokens\n"
        "2023-11-16 18:15:46.6805900,374,44\n"
        "2023-11-16 18:15:47.1805900,396,109\n"
    )
    burst = tmp_path / "burst.csv"
    burst.write_text(
        "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
        "5,ChatGPT,472,18,490,Conversation log\n"
        "7.5,GPT-4,1087,0,1087,Conversation log\n"
    )
    a = read_trace(parse_dataset(f"trace:{azure}"))
    b = read_trace(parse_dataset(f"trace:{burst}"))
    assert [(r.at_s, r.input_len, r.output_len) for r in a] == [
        (0.0, 374, 44),
        (pytest.approx(0.5), 396, 109),
    ]
    assert [(r.at_s, r.input_len, r.output_len) for r in b] == [(0.0, 472, 18), (2.5, 1087, 1)]


def test_a_bad_trace_row_names_its_line(tmp_path: Path) -> None:
    """A row without input_length is refused with its line number."""
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"timestamp": 0, "input_length": 5, "output_length": 1}\n{"timestamp": 1}\n')
    with pytest.raises(UsageError, match="line 2 needs a timestamp"):
        read_trace(parse_dataset(f"trace:{trace}"))


# --- determinism ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "kind",
    [
        "prefix:groups=2,per_group=3,shared=30,unique=5",
        "trace",
        "jsonl",
        "random",
        "multiturn:turns=2,first=6,user=3",
        "agentic:turns=2,fanout=2,sub_turns=1,first=5,user=3,sub_first=4",
        "random:input=lognormal:20:0.5,output=uniform:2:8",
    ],
)
def test_each_dataset_is_deterministic_by_seed(kind: str, tmp_path: Path) -> None:
    """The same seed builds the same request bodies; another seed builds others (a
    file's prompts in another order)."""
    if kind == "trace":
        kind = "trace:" + str(
            _mooncake(tmp_path / "t.jsonl", [(0, 20, 2, [1]), (5, 30, 2, [1, 2])])
        )
    if kind == "jsonl":
        path = tmp_path / "p,1.jsonl"
        path.write_text("".join(json.dumps({"prompt": f"question {i}"}) + "\n" for i in range(6)))
        kind = f"jsonl:{path}"

    def bodies(seed: int) -> list[bytes]:
        prompts = build_prompts(
            dataset=kind, count=6, input_len=8, output_len=None, api="completions",
            model="m", seed=seed, ignore_eos=False,
        )  # fmt: skip
        return [p.body for p in prompts]

    assert bodies(1) == bodies(1)
    assert bodies(1) != bodies(2)


# --- length distributions -------------------------------------------------------------


def test_drawn_lengths_are_sent_and_served_as_drawn(port: int) -> None:
    """random:input=uniform:20:60,output=uniform:3:9: every request's prompt is its drawn
    length on the simulator (usage.prompt_tokens) and, with ignore_eos, so is its output."""
    with Sim(port, "--engine", "vllm", *FAST) as sim:
        sim.wait_line(READY["vllm"])
        proc = bench(
            "--url", sim.url, "--dataset", "random:input=uniform:20:60,output=uniform:3:9",
            "--requests", "30", "--concurrency", "4", "--json",
        )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    (point,) = json.loads(proc.stdout)["points"]
    samples = point["samples"]
    assert [s["usage_input_tokens"] for s in samples] == [s["input_len"] for s in samples]
    assert [s["usage_output_tokens"] for s in samples] == [s["output_len"] for s in samples]
    assert {s["input_len"] for s in samples} <= set(range(20, 61))
    assert len({s["input_len"] for s in samples}) > 10
    assert {s["output_len"] for s in samples} <= set(range(3, 10))
    assert not point["warnings"]


def _lengths(dataset: str, count: int = 2000) -> list[tuple[int, int | None]]:
    prompts = build_prompts(
        dataset=dataset, count=count, input_len=100, output_len=50, api="completions",
        model="m", seed=7, ignore_eos=True,
    )  # fmt: skip
    return [(p.input_len, p.output_len) for p in prompts]


def test_each_distribution_has_its_shape() -> None:
    """fixed is one value; normal and lognormal centre where asked (seeded, 2000 draws);
    lognormal has the long right tail; a missing side keeps --input-len / --output-len."""
    assert set(_lengths("random:input=fixed:33")) == {(33, 50)}
    normal = sorted(n for n, _ in _lengths("random:input=normal:500:50"))
    assert 490 <= normal[1000] <= 510
    assert 410 <= normal[100] <= 460  # about 1.28 std below
    drawn = _lengths("random:output=lognormal:200:0.8")
    assert {n for n, _ in drawn} == {100}  # the input side is --input-len
    outs = sorted(o or 0 for _, o in drawn)
    assert 185 <= outs[1000] <= 215
    assert outs[1990] - outs[1000] > 2 * (outs[1000] - outs[10])


def test_an_empirical_file_is_sampled(tmp_path: Path) -> None:
    """input=file:PATH draws each request's length from the file's values."""
    path = tmp_path / "lengths.txt"
    path.write_text("7\n11\n\n13\n")
    drawn = {n for n, _ in _lengths(f"random:input=file:{path}", 60)}
    assert drawn == {7, 11, 13}


# --- jsonl ----------------------------------------------------------------------------


def test_jsonl_kind_and_a_bare_path_send_the_same(port: int, tmp_path: Path) -> None:
    """jsonl:FILE and a bare FILE.jsonl build the same bodies; on the simulator each
    request asks for its row's output_len (no --output-len: the data's, no ignore_eos)."""
    path = tmp_path / "p.jsonl"
    rows = [{"prompt": f"tell me about rivers number {i}", "output_len": 2 + i} for i in range(4)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))

    def bodies(dataset: str) -> list[bytes]:
        prompts = build_prompts(
            dataset=dataset, count=4, input_len=1, output_len=None, api="completions",
            model="m", seed=0, ignore_eos=False,
        )  # fmt: skip
        return [p.body for p in prompts]

    assert bodies(f"jsonl:{path}") == bodies(str(path))
    with Sim(port, "--engine", "vllm", *FAST) as sim:
        sim.wait_line(READY["vllm"])
        proc = bench("--url", sim.url, "--dataset", f"jsonl:{path}", "--requests", "4", "--json")
    assert proc.returncode == 0, proc.stderr
    (point,) = json.loads(proc.stdout)["points"]
    assert point["settings"]["dataset"] == f"jsonl:{path}"
    assert point["settings"]["output_len"] is None
    assert sorted(s["output_len"] for s in point["samples"]) == [2, 3, 4, 5]
