"""A start's events: StartExecutor emits one typed event per thing that happens, and a
sink is one question (open_attempt) and one stream (emit)."""

from __future__ import annotations

import io
from pathlib import Path

from tests.campaign.helpers import write_campaign

from servegate.campaign import load_campaign
from servegate.campaign.events import (
    AttemptClosed,
    AttemptOpened,
    BenchTimed,
    Event,
    PointMeasured,
    RoundBegan,
    Said,
    ServerStopped,
    Standing,
    StartTimed,
    Tone,
    VariantsFailed,
    VerdictReached,
)
from servegate.campaign.execute import StartExecutor, StartSpec, tasks_of
from servegate.campaign.interrupt import Interrupts
from servegate.campaign.progress import CampaignProgress
from servegate.store import AttemptStatus


class Kept:
    """A sink that keeps every event, with attempt ids of its own (as a node's)."""

    def __init__(self) -> None:
        self.opened: list[AttemptOpened] = []
        self.events: list[Event] = []

    def open_attempt(self, event: AttemptOpened) -> int:
        self.opened.append(event)
        return 100 + len(self.opened)

    def emit(self, event: Event) -> None:
        self.events.append(event)


def _start(tmp_path: Path, variants: str) -> Kept:
    plan = load_campaign(
        write_campaign(tmp_path, variants, bench="concurrency = [1]\nrequests = 3\nrepeats = 2")
    )
    group = plan.groups[0]
    spec = StartSpec(
        cid=1, group=group, number=1, tag="[1/1]", names="x", todo=tuple(tasks_of(group, 1))
    )
    sink = Kept()
    with Interrupts() as interrupts:
        StartExecutor(plan, sink, interrupts, log_dir=tmp_path / "logs").run(spec)
    return sink


def test_a_served_start_emits_its_verdict_points_stop_and_close_in_order(tmp_path: Path) -> None:
    """One attempt opened; then the verdict, each point (repeats = 2), the stop and the
    close, each naming the id the sink answered; the progress lines are Said events."""
    sink = _start(tmp_path, '[[variant]]\nname = "baseline"\n')
    assert [o.variant for o in sink.opened] == ["baseline"]
    store = [e for e in sink.events if not isinstance(e, Said)]
    kinds = [type(e) for e in store]
    assert kinds == [
        StartTimed,
        VerdictReached,
        PointMeasured,
        PointMeasured,
        BenchTimed,
        ServerStopped,
        AttemptClosed,
    ]
    assert {e.attempt for e in store if hasattr(e, "attempt")} == {101}
    closed = store[-1]
    assert isinstance(closed, AttemptClosed) and closed.status is AttemptStatus.DONE
    tones = {e.tone for e in sink.events if isinstance(e, Said)}
    assert {Tone.GOOD, Tone.ACTIVITY, Tone.INFO} <= tones


def test_a_start_that_crashes_emits_its_verdict_and_the_variants_failed(tmp_path: Path) -> None:
    """CRASH at start: the verdict, the attempt closed as crash, the variant failed, and
    a FAILURE line with the log's tail."""
    sink = _start(
        tmp_path, '[[variant]]\nname = "baseline"\nargs = "--fail oom --fail-at load_weights"\n'
    )
    closed = [e for e in sink.events if isinstance(e, AttemptClosed)]
    assert [c.status for c in closed] == [AttemptStatus.CRASH]
    failed = [e for e in sink.events if isinstance(e, VariantsFailed)]
    assert [f.names for f in failed] == [("baseline",)]
    failure = [e for e in sink.events if isinstance(e, Said) and e.tone is Tone.FAILURE]
    assert len(failure) == 1 and failure[0].tail


def test_the_runner_says_a_round_and_where_it_stands_as_events() -> None:
    """A round begun and where the campaign stands are events (one emit, as a start's);
    the progress renders each as the line the runner printed before."""
    said = io.StringIO()
    progress = CampaignProgress(said)
    progress.emit(RoundBegan(round=2, starts=3, measurements=12))
    progress.emit(
        Standing(starts_done=0, starts_total=3, variants_done=0, variants_total=3, left_s=None)
    )
    progress.emit(
        Standing(starts_done=1, starts_total=3, variants_done=1, variants_total=3, left_s=90.0)
    )
    assert said.getvalue().splitlines() == [
        "round 2: 3 start(s) on the cluster at once, 12 measurement(s)",
        "campaign: 0/3 starts done, 0/3 variants done; time left known once a start is measured",
        "campaign: 1/3 starts done, 1/3 variants done; about 1m30s left",
    ]
