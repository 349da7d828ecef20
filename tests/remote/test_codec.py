"""The one codec of frames (remote/codec.py): a frame reads back equal, and a line that is
not a frame this channel allows is a FrameError of one sentence, never code."""

from __future__ import annotations

import base64
import math
import pickle
from pathlib import Path

import pytest
from tests.campaign.helpers import write_campaign

from servegate.bench.result import ClientStats, PointResult
from servegate.bench.sample import RequestSample
from servegate.bench.settings import BenchSettings
from servegate.campaign.config import parse_campaign
from servegate.campaign.events import Placement, PointMeasured, Said, Tone
from servegate.campaign.execute import StartSpec, tasks_of
from servegate.campaign.node import FRAMES, JOB, NodeJob
from servegate.remote.codec import FrameError, decode, encode, kinds
from servegate.remote.wire import EVENTS, REQUESTS, Exit, File, Hello, RunJob
from servegate.telemetry.energy import Energy


def test_an_agent_event_reads_back_equal() -> None:
    """encode then decode: the same frame, its name first on the line."""
    line = encode(Exit(code=3))
    assert line == b'{"event":"exit","code":3}\n'
    assert decode(line, EVENTS) == Exit(code=3)


def test_a_point_and_a_job_read_back_equal(tmp_path: Path) -> None:
    """A measured point (settings, raw samples, NaN in its summary) and a start's job
    (the whole campaign) cross as JSON and come back equal."""
    sample = RequestSample(
        index=0,
        send_s=0.1,
        scheduled_s=None,
        chunks_s=(0.2, 0.3),
        end_s=0.4,
        usage_output_tokens=2,
        usage_input_tokens=5,
        input_len=5,
        output_len=2,
        error=None,
        detail=None,
        reconnected=False,
    )
    result = PointResult(
        settings=BenchSettings(url="http://127.0.0.1:1", rate=math.inf, requests=1),
        model="m",
        summary={"ttft_ms_p50": 1.5, "itl_ms_p50": math.nan},
        completed=1,
        failed=0,
        failures={},
        samples=[sample],
        server_metrics={"kv": [1, 2]},
        warnings=[],
        client=ClientStats(
            workers=1,
            cpu_fraction=0.1,
            cpu_fraction_mean=0.1,
            loop_lag_ms_p50=0.0,
            loop_lag_ms_p99=0.0,
            loop_lag_ms_max=0.0,
        ),
        started_at="2026-12-05T00:00:00Z",
        energy=Energy(
            gpus=(0, 1), by="processes", gpu_seen=True, energy_j=12.5, per_gpu_j=(5.0, 7.5)
        ),
    )
    point = PointMeasured(attempt=1, variant="v", load="c=1", repeat=0, result=result, label="x")
    back = decode(encode(point), FRAMES)
    assert back.result.summary["ttft_ms_p50"] == 1.5
    assert math.isnan(back.result.summary["itl_ms_p50"])
    assert back.result.samples == [sample] and back.result.settings == result.settings
    assert back.result.energy == result.energy  # read on the host, carried to the driver
    plan = parse_campaign(write_campaign(tmp_path, '[[variant]]\nname = "baseline"\n').read_text())
    group = plan.groups[0]
    spec = StartSpec(
        cid=1, group=group, number=1, tag="[1/1]", names="baseline", todo=tuple(tasks_of(group, 1))
    )
    job = NodeJob(campaign=plan, spec=spec, log_dir="/l", placement=Placement(node="h"))
    assert decode(encode(job), JOB) == job


@pytest.mark.parametrize(
    ("line", "said"),
    [
        (b'{"event":"exit","code":"zero"}', "field 'code' of event 'exit' must be an integer"),
        (b'{"event":"exit","code":true}', "must be an integer, not True"),
        (b'{"event":"exit"}', "event 'exit' lacks its field 'code'"),
        (b'{"event":"exit","code":0,"x":1}', "event 'exit' has an unknown field 'x'"),
        (b"not json", "a line that is not JSON: b'not json'"),
        (b"[1]", "a JSON value that is not an object"),
        (b'{"event":"run_job"}', "an unknown event 'run_job'"),
        (b'{"event":"file","name":"..","first":true,"data":""}', "'..' is not a file name"),
        (b'{"event":"file","name":"a/b","first":true,"data":""}', "'a/b' is not a file name"),
    ],
)
def test_a_line_that_is_not_an_allowed_frame_is_refused(line: bytes, said: str) -> None:
    """Each fault is one FrameError naming the field or the line."""
    with pytest.raises(FrameError) as raised:
        decode(line, EVENTS)
    assert said in str(raised.value)
    assert "\n" not in str(raised.value)


def test_a_pickle_is_not_a_frame() -> None:
    """The pickled frames of before, raw or base64, are refused without being run."""
    evil = pickle.dumps(("info", ("x",), {}))
    for line in (evil, base64.b64encode(evil)):
        with pytest.raises(FrameError):
            decode(line, FRAMES)


def test_each_channel_allows_only_its_frames() -> None:
    """A request is not an event, and a host cannot send a job of its own."""
    request = encode(RunJob(id="0" * 32, command="launch", argv=[]))
    assert isinstance(decode(request, REQUESTS), RunJob)
    with pytest.raises(FrameError, match="an unknown event 'run_job'"):
        decode(request, EVENTS)
    with pytest.raises(FrameError, match="an unknown event 'hello'"):
        decode(
            encode(Hello(protocol=1, version="v", build="b", python="3", machine="m", dir="/d")),
            FRAMES,
        )
    with pytest.raises(FrameError, match="must be one of 'info', 'good'"):
        decode(b'{"event":"said","tone":"loud","text":"x"}', FRAMES)
    assert decode(encode(Said(tone=Tone.GOOD, text="ok")), FRAMES) == Said(
        tone=Tone.GOOD, text="ok"
    )
    assert kinds(File)["file"] is File
