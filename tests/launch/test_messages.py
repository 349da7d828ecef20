"""The keeper's messages and the verdict's states survive JSON as they are sent."""

from __future__ import annotations

import json

import pytest

from servegate.gate.verdict import DetectedBy, Kind, PhaseSpan, Status, Verdict
from servegate.launch.messages import (
    Decided,
    Exited,
    Failed,
    Message,
    Note,
    Sample,
    Started,
    Telemetry,
    parse,
)
from servegate.telemetry.model import GpuSample, ProcSample, Snapshot
from servegate.telemetry.summary import TelemetrySummary


def _snapshot(t_s: float, *, procs: bool) -> Snapshot:
    return Snapshot(
        t_s=t_s,
        cpu_pct=97.5,
        rss_bytes=1 << 30,
        threads=12,
        processes=2,
        read_bps=2.5e6,
        write_bps=0.0,
        net_rx_bps=125.0,
        procs=(
            ProcSample(
                pid=41, name="python3", cpu_pct=97.5, rss_bytes=1 << 30, threads=12, state="R"
            ),
        )
        if procs
        else (),
        gpus=(
            GpuSample(
                index=0,
                name="H200",
                mem_used_bytes=3 << 30,
                mem_tree_bytes=2 << 30,
                mem_total_bytes=141 << 30,
                util_pct=40.0,
                power_w=None,
            ),
        ),
    )


def _verdict() -> Verdict:
    return Verdict(
        status=Status.CRASH,
        elapsed_s=12.25,
        started_at="2026-01-01T00:00:00.000000+00:00",
        decided_at="2026-01-01T00:00:12.250000+00:00",
        detected_by=DetectedBy.EXIT,
        reason="the server was killed by SIGKILL",
        kind=Kind.KILLED,
        hint="SIGKILL without a message is often the OOM killer",
        matched_line=None,
        exit_code=-9,
        pid=41,
        engine="vllm",
        url="http://127.0.0.1:8000",
        log_path="/tmp/vllm.log",
        phases=(PhaseSpan(name="load_weights", start_s=0.5, end_s=None),),
        tail=("loading", "Killed"),
    )


MESSAGES: list[Message] = [
    Started(pid=41, pgid=41, keeper_pid=40, started_mono=1234.5, started_wall=1767225600.25),
    Note(text="no output for 240 s during jit_compile; slow, still working: 1 process"),
    Sample(snapshot=_snapshot(1.0, procs=False)),
    Decided(verdict=_verdict(), essential=(42, 43)),
    Telemetry(
        snapshots=(_snapshot(0.0, procs=True), _snapshot(1.0, procs=True)),
        summary=TelemetrySummary(
            samples=2,
            period_s=1.0,
            cpu_s=0.975,
            peak_rss_bytes=1 << 30,
            peak_processes=2,
            peak_gpu_mem_bytes=3 << 30,
            peak_gpu_tree_bytes=2 << 30,
        ),
    ),
    Telemetry(snapshots=(), summary=None),
    Exited(code=-15),
    Exited(code=None),
    Failed(message="cannot write /full/x.log: No space left on device (ENOSPC)"),
]


@pytest.mark.parametrize("message", MESSAGES, ids=lambda m: type(m).__name__)
def test_message_round_trip(message: Message) -> None:
    """Each message comes back equal from the line the keeper writes."""
    line = (json.dumps(message.to_json()) + "\n").encode()
    assert json.loads(line)["event"] == message.EVENT
    back = parse(line)
    assert type(back) is type(message)
    assert back == message
    assert back.to_json() == message.to_json()


def test_decided_carries_the_verdict_and_its_states() -> None:
    """The verdict inside a Decided comes back with its StrEnum states."""
    back = parse(json.dumps(Decided(verdict=_verdict(), essential=(42,)).to_json()))
    assert isinstance(back, Decided)
    assert back.verdict.status is Status.CRASH
    assert back.verdict.detected_by is DetectedBy.EXIT
    assert back.verdict.line() == _verdict().line()
    assert back.essential == (42,)


@pytest.mark.parametrize(
    "line",
    [b'{"event": "gossip"}', b"[1, 2]", b'{"event": "started", "pid": 1}', b"not json"],
)
def test_parse_refuses_what_is_no_message(line: bytes) -> None:
    """An unknown event, a non-object or a missing field is a ValueError, never a guess."""
    with pytest.raises(ValueError):
        parse(line)


def test_states_keep_their_json_strings() -> None:
    """Status, DetectedBy and Kind print as the strings the JSON always had."""
    assert [str(s) for s in Status] == ["ready", "crash", "timeout"]
    assert [str(d) for d in DetectedBy] == [
        "log",
        "probe",
        "exit",
        "child-exit",
        "signature",
        "stall",
        "deadline",
    ]
    assert [str(k) for k in Kind] == [
        "exit",
        "segfault",
        "killed",
        "abort",
        "child-exit",
        "stuck",
        "stall",
        "deadline",
    ]
    data = json.loads(json.dumps(_verdict().to_json()))
    assert (data["status"], data["detected_by"], data["kind"]) == ("crash", "exit", "killed")
    assert type(_verdict().to_json()["status"]) is str  # plain data, not the enum


def test_signature_kinds_pass_through() -> None:
    """A fatal signature's own kind (not a Kind) survives the JSON as written."""
    verdict = Verdict.from_json({**_verdict().to_json(), "kind": "oom", "detected_by": "signature"})
    assert (verdict.kind, verdict.detected_by) == ("oom", DetectedBy.SIGNATURE)
    assert verdict.to_json()["kind"] == "oom"
