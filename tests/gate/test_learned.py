"""Crash kinds judged by the words of the quoted line (gate/learned.py), where no rule
names one: the model, the shipped examples, and the gate's use of it on live processes."""

from __future__ import annotations

from pathlib import Path

from tests.gate.crash_replay import FIXTURES, known_causes, run_log

from servegate.gate.learned import DATA, THRESHOLD, KindModel, read_examples, shipped, words_of

SHIPPED = Path(__file__).resolve().parents[2] / "src" / "servegate" / "gate" / DATA


def gate(tmp_path: Path, lines: list[str], exit: int) -> tuple[str | None, str, str | None]:
    """(kind, reason, matched line) of a live generic server that prints ``lines``."""
    log = tmp_path / "server.log"
    log.write_text("".join(line + "\n" for line in lines))
    verdict = run_log(log, engine="generic", exit=exit, ready=("serving on port",))
    assert verdict.status == "crash"
    return verdict.kind, verdict.reason, verdict.matched_line


def test_the_shipped_examples_are_the_fixtures_known_causes() -> None:
    """kind_lines.tsv is what tests/fixtures/crash_logs gives: rewrite it with
    ``python benchmarks/learned_kinds.py --write`` when a fixture is added or relabelled."""
    assert read_examples(SHIPPED.read_text(encoding="utf-8")) == known_causes(FIXTURES)
    assert len(shipped().kinds) >= 15


def test_words_split_at_case_and_punctuation_without_numbers() -> None:
    words = words_of("torch.OutOfMemoryError: CUDA out of 2.00 GiB")
    assert words == {"torch", "out", "of", "memory", "error", "cuda", "gi"}


def test_the_model_takes_the_kind_whose_lines_share_the_words() -> None:
    model = KindModel(
        [
            ("model-load", "KeyError: 'model.layers.0.self_attn.q_proj.weight'"),
            ("model-load", "missing weight file in the checkpoint folder"),
            ("bad-args", "error: argument --max-num-seqs: invalid int value"),
            ("bad-args", "unrecognized arguments: --tensor-paralel"),
            ("exit", "the process exited"),  # how it ended: never a judged kind
            ("killed", "Killed"),
        ]
    )
    assert model.kinds == ("bad-args", "model-load")
    found = model.likely("KeyError: 'lm_head.weight' not in the checkpoint")
    assert found is not None and found.kind == "model-load" and found.share > THRESHOLD
    found = model.likely("error: argument --dtype: invalid choice")
    assert found is not None and found.kind == "bad-args"
    assert model.likely("12345 ... !!!") is None  # no known word


def test_a_plain_exit_after_an_unknown_error_line_is_judged_by_its_words(
    tmp_path: Path,
) -> None:
    """No rule names a parallel size that must divide the heads: its words make it
    bad-args, the reason says the kind was judged so, the quoted line is the one printed."""
    cause = "AssertionError: tensor parallel size 3 must divide the number of attention heads 32"
    lines = [
        "INFO starting the server",
        "Traceback (most recent call last):",
        '  File "/app/config.py", line 88, in verify_parallel_config',
        "    assert heads % tp == 0, msg",
        cause,
    ]
    kind, reason, line = gate(tmp_path, lines, exit=1)
    assert (kind, line) == ("bad-args", cause)
    said = reason.rpartition("; judged bad-args by its words (")[2]
    assert said.endswith(")") and {"heads", "parallel"} <= set(said[:-1].split(", "))


def test_a_signal_a_line_that_says_one_or_a_go_bug_is_not_judged(tmp_path: Path) -> None:
    """How a process ended is not what its words say: a SIGKILL stays killed, a line that
    says a child was signalled leaves the bare exit, and so does a Go runtime error (the
    program's own bug, whose words the known crashes share by chance)."""
    cause = "AssertionError: tensor parallel size 3 must divide the number of attention heads 32"
    kind, reason, _ = gate(tmp_path, [cause], exit=-9)
    assert kind == "killed" and "judged" not in reason
    signalled = "ERROR download: Download process was signaled to shutdown with signal 4"
    kind, reason, line = gate(tmp_path, [signalled], exit=1)
    assert (kind, line) == ("exit", signalled) and "judged" not in reason
    bug = "panic: runtime error: slice bounds out of range [:5] with capacity 3"
    assert shipped().likely(bug) is not None  # words it knows
    kind, reason, line = gate(tmp_path, [bug], exit=2)
    assert (kind, line) == ("exit", bug) and "judged" not in reason


def test_paths_addresses_and_os_errors_are_no_words_of_a_kind() -> None:
    """A path or an address names the machine's folders, not what failed (logs written
    under /tmp would teach that `tmp` is a kind's); an OS error's own text is what a
    system call returned: such a line is not judged."""
    words = words_of("unable to open /tmp/blind/x.fifo or ~/cache/y and https://hub.example/m")
    assert words == {"unable", "to", "open", "or", "and"}
    model = KindModel([("bad-args", "invalid argument for --n-ctx")] * 5)
    assert model.judge("invalid argument for --n-ctx") is not None
    assert model.judge("OSError: [Errno 22] Invalid argument for --n-ctx") is None
