"""A CRASH recorded by a campaign names the root cause the log gives after the first line."""

from __future__ import annotations

from servegate.campaign.crash import refine_crash
from servegate.engines import get_profile

LOG = [
    "[TP0] Load weight begin. avail mem=78.50 GB",
    "[TP0] Scheduler hit an exception: Traceback (most recent call last):",
    '  File "model_runner.py", line 695, in load_model',
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.75 GiB.",
    "Received sigquit from a child process. It usually means the child failed.",
]


def verdict(kind: str | None, status: str = "crash") -> dict[str, object]:
    return {
        "status": status,
        "elapsed_s": 1.0,
        "reason": "the scheduler raised an exception",
        "kind": kind,
        "hint": "see the traceback",
        "matched_line": LOG[1],
        "tail": LOG[:2],
    }


def test_generic_crash_is_refined_to_the_cause_below_it() -> None:
    """'Scheduler hit an exception' followed by CUDA OOM is stored as oom with its hint."""
    refined = refine_crash(verdict("engine-init"), LOG, get_profile("sglang").fatal)
    assert refined["kind"] == "oom"
    assert refined["hint"]
    assert refined["matched_line"] == LOG[3]
    assert refined["gate_kind"] == "engine-init"
    assert refined["tail"] == LOG[:4]


def test_specific_kind_and_ready_verdicts_are_kept() -> None:
    """A verdict that already names a specific cause, or is not a crash, is left as it is."""
    fatal = get_profile("sglang").fatal
    assert refine_crash(verdict("nccl"), LOG, fatal) == verdict("nccl")
    assert refine_crash(verdict(None, "ready"), LOG, fatal) == verdict(None, "ready")
    assert refine_crash(verdict("engine-init"), LOG[:3], fatal) == verdict("engine-init")
