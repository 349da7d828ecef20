"""A fatal signature's line that itself says the engine proceeds without what failed is a
warning: the gate goes on to READY (a live process through the real gate)."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.gate.crash_replay import run_log

from servegate.gate.verdict import Status

MISSING = (
    "[2026-08-01 23:37:49] Failed to load generation config for org/m: org/m does not "
    "appear to have a file named generation_config.json. Checkout "
    "'https://huggingface.co/org/m/tree/main' for available files."
)


@pytest.mark.parametrize(
    ("tail", "status", "kind"),
    [
        (". Proceeding without generation config.", Status.READY, None),
        (" Falling back to the model's defaults.", Status.READY, None),
        ("", Status.CRASH, "model-load"),
    ],
)
def test_a_line_that_says_the_engine_goes_on_is_no_failure(
    tmp_path: Path, tail: str, status: Status, kind: str | None
) -> None:
    log = tmp_path / "start.log"
    ready = "[2026-08-01 23:43:47] The server is fired up and ready to roll!"
    log.write_text(f"{MISSING}{tail}\n[2026-08-01 23:43:43] loading weights\n{ready}\n")
    verdict = run_log(log, engine="sglang", exit=None if status is Status.READY else 1)
    assert verdict.status is status, verdict
    assert verdict.kind == kind
