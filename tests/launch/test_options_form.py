"""launch(command, options=GateOptions(...), observer=...): the gate's settings as one
value, what happens as events; the keyword form is the same call."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest
from click.testing import CliRunner
from tests.gate.helpers import FAKE, PY

from servegate.cli import cli
from servegate.errors import ServerCrashed, UsageError
from servegate.gate.defaults import STALL_S, TIMEOUT_S
from servegate.gate.options import GateOptions
from servegate.launch import launch
from servegate.launch.events import (
    GateNote,
    LaunchEvent,
    StartBegan,
    TelemetrySampled,
    VerdictCompleted,
    VerdictDecided,
)


class Seen:
    """An observer that keeps every event."""

    def __init__(self) -> None:
        self.events: list[LaunchEvent] = []

    def emit(self, event: LaunchEvent) -> None:
        self.events.append(event)


def test_the_options_form_tells_the_observer_each_event_in_order(port: int, tmp_path: Path) -> None:
    """StartBegan first, samples and notes while it waits, then the verdict as decided
    (no series yet) and completed (with its series), before launch() returns."""
    seen = Seen()
    options = GateOptions(engine="sglang", port=port, timeout_s=30, sample_s=0.05)
    with launch(
        [PY, FAKE, "sglang", str(port)],
        options=options,
        observer=seen,
        log_path=str(tmp_path / "server.log"),
    ) as server:
        kinds = [type(e) for e in seen.events]
        assert kinds[0] is StartBegan
        assert kinds[-2:] == [VerdictDecided, VerdictCompleted]
        assert set(kinds[1:-2]) <= {GateNote, TelemetrySampled}
        first = seen.events[0]
        assert isinstance(first, StartBegan) and first.tracked.name == server.name
        decided, completed = seen.events[-2:]
        assert isinstance(decided, VerdictDecided) and decided.verdict.status == "ready"
        assert not decided.verdict.snapshots
        assert isinstance(completed, VerdictCompleted)
        assert completed.verdict is server.verdict


def test_the_keyword_forms_callbacks_hear_what_the_observer_would(port: int) -> None:
    """on_started, on_verdict and on_telemetry of the documented keyword form are called
    with the tracked record and the verdict, as before."""
    calls: list[str] = []
    with launch(
        [PY, FAKE, "sglang", str(port)],
        engine="sglang",
        port=port,
        timeout_s=30,
        on_started=lambda tracked: calls.append(f"started {tracked.name}"),
        on_verdict=lambda verdict: calls.append(f"verdict {verdict.status}"),
        on_telemetry=lambda verdict: calls.append(f"telemetry {verdict.status}"),
    ) as server:
        assert calls == [f"started {server.name}", "verdict ready", "telemetry ready"]


def test_a_crash_is_told_before_it_is_raised() -> None:
    """A CRASH reaches the observer as decided and completed, then raises."""
    seen = Seen()
    options = GateOptions(ready=("never",), timeout_s=30, sample_s=0)
    with pytest.raises(ServerCrashed):
        launch(
            [PY, "-c", "print('CUDA out of memory', flush=True); raise SystemExit(1)"],
            options=options,
            observer=seen,
        )
    assert [type(e) for e in seen.events][-2:] == [VerdictDecided, VerdictCompleted]


@pytest.mark.parametrize(
    ("keywords", "said"),
    [
        ({"engine": "vllm"}, "move engine into the GateOptions"),
        ({"on_note": print}, "handle on_note in the observer"),
    ],
)
def test_the_two_forms_do_not_mix(keywords: dict[str, object], said: str, tmp_path: Path) -> None:
    """options= with gate keywords, or observer= with on_* callbacks: UsageError naming
    the fix; nothing is started."""
    log = tmp_path / "never.log"
    with pytest.raises(UsageError, match=said):
        launch(
            [PY, "-c", "pass"],
            options=GateOptions(ready=("x",)),
            observer=Seen(),
            log_path=str(log),
            **keywords,  # type: ignore[arg-type]
        )
    assert not log.exists()


def test_each_stall_default_is_defined_once() -> None:
    """The library's launch() has no stall limit; the command line's --stall, wait() and
    the pytest plugin have STALL_S (300 s); the hard cap is TIMEOUT_S (900 s) everywhere."""
    from servegate.gate.running import wait
    from servegate.pytest_plugin import ServerFactory

    assert GateOptions().stall_s is None
    assert GateOptions().timeout_s == TIMEOUT_S == 900.0
    assert inspect.signature(wait).parameters["stall_s"].default == STALL_S == 300.0
    assert inspect.signature(ServerFactory.__call__).parameters["stall"].default == STALL_S
    help_text = CliRunner().invoke(cli, ["launch", "--help"]).output
    assert "without new output (0: never). [default: 300.0]" in " ".join(help_text.split())
