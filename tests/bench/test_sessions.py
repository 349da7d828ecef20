"""Multi-turn sessions and agentic session trees on the real simulator: each turn's prompt
is the conversation so far (with the server's own replies) and a new message, turns of a
session run in order with think time, --concurrency counts sessions, sessions start on the
rate's schedule, stay on one worker, sub-agents fork, run in parallel and join, and the
point reports metrics per turn."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from tests.bench.test_datasets import bench
from tests.sim.helpers import Sim
from tests.sim.test_serving import FAST, READY

from servegate.bench.dataset import build_prompts
from servegate.bench.plan import plan_workers
from servegate.bench.schedule import arrival_offsets
from servegate.bench.settings import BenchSettings


def _run(port: int, *args: str) -> dict[str, Any]:
    """One bench point against a fresh vLLM-shaped simulator; its JSON point."""
    with Sim(port, "--engine", "vllm", *FAST) as sim:
        sim.wait_line(READY["vllm"])
        proc = bench("--url", sim.url, "--json", *args)
    assert proc.returncode == 0, proc.stderr
    (point,) = json.loads(proc.stdout)["points"]
    return point  # type: ignore[no-any-return]


def _sessions(point: dict[str, Any], turns: int) -> list[list[dict[str, Any]]]:
    samples = sorted(point["samples"], key=lambda s: s["index"])
    return [samples[i : i + turns] for i in range(0, len(samples), turns)]


@pytest.mark.parametrize("api", ["completions", "chat"])
def test_each_turn_sends_the_conversation_so_far_and_a_new_message(api: str, port: int) -> None:
    """Turn t's prompt is turn t-1's prompt, the server's reply and 8 new words (and, for
    chat, the template's same few tokens each turn): prompt tokens grow by exactly that;
    the prefix cache hits what the design implies, to the token (the replies sent back are
    the server's own tokens)."""
    point = _run(
        port, "--api", api, "--dataset", "multiturn:turns=3,first=30,user=8",
        "--requests", "12", "--concurrency", "2", "--output-len", "5",
    )  # fmt: skip
    sessions = _sessions(point, 3)
    assert len(sessions) == 4
    template = set()
    for turns in sessions:
        assert [s["error"] for s in turns] == [None] * 3
        for before, after in itertools.pairwise(turns):
            grown = after["usage_input_tokens"] - before["usage_input_tokens"]
            template.add(grown - before["usage_output_tokens"] - 8)
    (extra,) = template  # the same every turn
    assert extra == 0 if api == "completions" else extra > 0
    first = sessions[0][0]["usage_input_tokens"]
    assert [t["turn"] for t in point["turns"]] == [1, 2, 3]
    assert point["turns"][0]["prompt_tokens_mean"] == first
    cache = point["cache"]
    assert cache["design_hit_rate"] > 0.4
    assert abs(cache["measured_hit_rate"] - cache["design_hit_rate"]) <= 0.01
    assert (cache["contaminated"], cache["evicted"]) == (False, False)


def test_turns_wait_for_the_reply_and_the_think_time(port: int) -> None:
    """A session's next turn is sent no sooner than think=0.2 s after its last reply ended,
    and with --concurrency 2 no more than two requests (two sessions) are ever in flight."""
    point = _run(
        port, "--dataset", "multiturn:turns=3,first=10,user=4,think=0.2", "--requests", "12",
        "--concurrency", "2", "--output-len", "3",
    )  # fmt: skip
    for turns in _sessions(point, 3):
        for before, after in itertools.pairwise(turns):
            assert after["send_s"] >= before["send_s"] + before["end_s"] + 0.2
    edges = sorted(
        [(s["send_s"], 1) for s in point["samples"]]
        + [(s["send_s"] + s["end_s"], -1) for s in point["samples"]]
    )
    in_flight = peak = 0
    for _, step in edges:
        in_flight += step
        peak = max(peak, in_flight)
    assert peak <= 2


def test_sessions_start_on_the_rate_schedule(port: int) -> None:
    """Under --rate 20, each session's first turn is planned at the schedule's n-th time
    (a rate of sessions), uncapped."""
    point = _run(
        port, "--dataset", "multiturn:turns=2,first=10,user=4", "--requests", "10",
        "--rate", "20", "--output-len", "2", "--seed", "4",
    )  # fmt: skip
    firsts = [turns[0] for turns in _sessions(point, 2)]
    planned = arrival_offsets(20.0, 5, None, 4, 1.0)
    assert sorted(s["scheduled_s"] for s in firsts) == pytest.approx(planned, abs=1e-6)
    assert all(s["scheduled_s"] is None for turns in _sessions(point, 2) for s in turns[1:])


def test_a_session_stays_on_its_worker() -> None:
    """With 2 workers each session's turns all go to one worker, in turn order."""
    settings = BenchSettings(
        url="http://127.0.0.1:9", dataset="multiturn:turns=3", requests=12, concurrency=4,
        workers=2,
    )  # fmt: skip
    prompts = build_prompts(
        dataset=settings.dataset, count=12, input_len=1, output_len=4, api="completions",
        model="m", seed=0, ignore_eos=True,
    )  # fmt: skip
    plans = plan_workers(settings, {}, [], prompts)
    seen: dict[int, int] = {}
    for plan in plans:
        assert plan.sessions is not None
        for tree in plan.sessions:
            assert ([p.turn for _, p in tree.main], tree.forks) == ([0, 1, 2], {})
            for _, p in tree.main:
                assert seen.setdefault(p.session or 0, plan.slot) == plan.slot
    assert sorted(seen) == [0, 1, 2, 3]
    assert [plan.concurrency for plan in plans] == [2, 2]


def test_multiturn_with_a_duration_is_refused(tmp_path: Path) -> None:
    """Sessions are counted by --requests: --duration is one sentence and exit 2."""
    proc = bench(
        "--url", "http://127.0.0.1:9", "--dataset", "multiturn", "--duration", "5",
    )  # fmt: skip
    assert proc.returncode == 2
    assert proc.stderr.startswith("Error: a multiturn dataset runs whole sessions")


def test_agentic_sub_agents_fork_run_in_parallel_and_join(port: int) -> None:
    """After each main turn but the last, its 2 sub-agents start once that turn's reply has
    ended, both before either ends; each runs its 2 turns in order; the next main turn
    starts after both have ended and sends their last replies with its new message."""
    spec = "agentic:turns=3,fanout=2,sub_turns=2,first=30,user=8,sub_first=10"
    point = _run(
        port, "--dataset", spec, "--requests", "22", "--concurrency", "1",
        "--output-len", "4",
    )  # fmt: skip
    prompts = build_prompts(
        dataset=spec, count=22, input_len=1, output_len=4, api="completions", model="m",
        seed=0, ignore_eos=True,
    )  # fmt: skip
    assert len(prompts) == 22  # two trees of 3 + 2 x 2 x 2 requests
    by_index = {s["index"]: s for s in point["samples"]}
    assert sorted(by_index) == list(range(22))

    def end(i: int) -> float:
        return float(by_index[i]["send_s"] + by_index[i]["end_s"])

    main = {(p.session, p.turn): i for i, p in enumerate(prompts) if p.parent is None}
    subs: dict[tuple[int | None, int], dict[int | None, list[int]]] = {}
    for i, p in enumerate(prompts):
        if p.parent is not None:
            subs.setdefault((p.parent, p.fork), {}).setdefault(p.session, []).append(i)
    assert len(subs) == 4 and all(len(agents) == 2 for agents in subs.values())
    for (parent, fork), agents in subs.items():
        forked = main[parent, fork]
        firsts = [turns[0] for turns in agents.values()]
        lasts = [turns[-1] for turns in agents.values()]
        assert min(by_index[i]["send_s"] for i in firsts) >= end(forked)
        assert max(by_index[i]["send_s"] for i in firsts) < min(end(i) for i in firsts)
        for first, second in agents.values():
            assert by_index[second]["send_s"] >= end(first)
        joined = by_index[main[parent, fork + 1]]
        assert joined["send_s"] >= max(end(i) for i in lasts)
        before = by_index[forked]
        replies = sum(by_index[i]["usage_output_tokens"] for i in lasts)
        assert joined["usage_input_tokens"] == (
            before["usage_input_tokens"] + before["usage_output_tokens"] + replies + 8
        )
    assert [(t["agent"], t["turn"]) for t in point["turns"]] == [
        ("main", 1), ("main", 2), ("main", 3), ("sub", 1), ("sub", 2),
    ]  # fmt: skip
    cache = point["cache"]
    assert abs(cache["measured_hit_rate"] - cache["design_hit_rate"]) <= 0.01
