"""Restart replicates on the simulator: seeded interleaved order, warmup per start, resume,
sequential stopping (--until-precision) and the flags' mistakes."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from tests.campaign.helpers import query, servegate, wait_for_points, write_campaign
from tests.conftest import leftovers

from servegate.campaign.rounds import start_order

TWO = """
[[variant]]
name = "baseline"

[[variant]]
name = "fast"
args = "--itl-ms 2"

[[variant]]
name = "chat"
bench = { api = "chat" }
"""


def _plan(rounds: int, seed: int) -> list[tuple[str, int]]:
    """The (variant, start) sequence the runner promises: baseline's server (shared with
    chat) is server 0, fast's server 1."""
    names = ("baseline", "fast")
    return [(names[i], r) for r in range(1, rounds + 1) for i in start_order(2, r, seed)]


def _starts(db: Path) -> list[tuple[str, int]]:
    rows = query(
        db,
        "SELECT v.name, a.start FROM attempt a JOIN variant v ON v.id = a.variant_id "
        "WHERE a.status = 'done' ORDER BY a.id",
    )
    # a resumed start of the baseline's server whose baseline points were measured is
    # recorded for chat, the variant it measures
    shared = {"chat": "baseline"}
    return [(shared.get(str(n), str(n)), int(s)) for n, s in rows]  # type: ignore[call-overload]


@pytest.mark.slow
def test_restarts_interleave_in_seeded_rounds_with_warmup_per_start(tmp_path: Path) -> None:
    """restarts = 3: each server starts 3 times in the order start_order gives for the
    recorded seed; each start's first repeat of a point has the warmup, the next none;
    repeats are numbered across starts; progress says "start 2/3"."""
    path = write_campaign(
        tmp_path,
        TWO,
        bench="concurrency = [1]\nrequests = 4\nrepeats = 2\nrestarts = 3",
    )
    db = tmp_path / "c.db"
    plan = servegate("run", path, "--db", db, "--seed", "5", "--dry-run")
    assert plan.returncode == 0, plan.stderr
    assert "3 starts per server, in this order (seed 5):" in plan.stdout
    out = servegate("run", path, "--db", db, "--seed", "5")
    assert out.returncode == 0, out.stderr

    expected = _plan(3, 5)
    assert _starts(db) == expected
    assert query(db, "SELECT start_seed FROM campaign") == [(5,)]
    names = [name for name, _ in expected]
    assert names[:3] != ["baseline"] * 3 and sorted(names[:2]) == ["baseline", "fast"]
    for number in (1, 2, 3):
        assert f"baseline, chat start {number}/3: SERVER READY" in out.stderr
    assert "start order (seed 5):" in out.stderr

    rows = query(
        db,
        "SELECT v.name, p.repeat, a.start, json_extract(p.detail, '$.settings.warmup') "
        "FROM point p JOIN variant v ON v.id = p.variant_id JOIN attempt a ON a.id = p.attempt_id",
    )
    points = {(str(v), int(r)): (int(s), int(w)) for v, r, s, w in rows}  # type: ignore[call-overload]
    assert sorted(points) == [(v, r) for v in ("baseline", "chat", "fast") for r in range(6)]
    for (_, repeat), (start, warmup) in points.items():
        assert start == repeat // 2 + 1  # repeats 0-1 on start 1, 2-3 on start 2, ...
        assert warmup == (1 if repeat % 2 == 0 else 0)  # warmup = 1 in the file
    cold = query(db, "SELECT a.cold FROM attempt a ORDER BY a.id")
    assert [c for (c,) in cold] == [1, 1, 0, 0, 0, 0]


@pytest.mark.slow
def test_resume_continues_the_order_and_keeps_measured_starts(tmp_path: Path) -> None:
    """A run stopped in its second round, resumed without --seed, goes on with the
    recorded seed's order; starts already measured are not started again."""
    path = write_campaign(
        tmp_path,
        TWO,
        bench="concurrency = [1]\nrequests = 4\nrepeats = 1\nrestarts = 3",
    )
    db = tmp_path / "c.db"
    runner = subprocess.Popen(
        [sys.executable, "-m", "servegate", "run", str(path), "--db", str(db), "--seed", "9"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    with runner:
        wait_for_points(db, 4, timeout=60)  # two starts of the six
        runner.send_signal(signal.SIGTERM)
        runner.wait(timeout=30)
    assert runner.returncode == 143
    assert leftovers(grace_s=15) == []
    before = {row[0]: row[1:] for row in query(db, "SELECT id, attempt_id, recorded_at FROM point")}
    done_before = _starts(db)

    out = servegate("run", path, "--db", db, "--resume")
    assert out.returncode == 0, out.stderr
    expected = _plan(3, 9)
    assert _starts(db) == expected  # completed starts: each once, in the planned order
    assert done_before == expected[: len(done_before)]
    after = {row[0]: row[1:] for row in query(db, "SELECT id, attempt_id, recorded_at FROM point")}
    assert {k: after[k] for k in before} == before  # kept, not measured again
    assert len(after) == 9
    assert "measurements stored; skipped" in out.stderr


@pytest.mark.slow
def test_until_precision_stops_at_the_target_or_the_budget(tmp_path: Path) -> None:
    """A loose target is reached after the first rounds; a tight one adds one seeded
    round up to --max-starts and says so, with the half-widths; --budget ends it too."""
    path = write_campaign(
        tmp_path,
        """
        [[variant]]
        name = "baseline"

        [[variant]]
        name = "fast"
        args = "--itl-ms 2"
        """,
        bench="concurrency = [1]\nrequests = 4\nrepeats = 2\nrestarts = 2",
    )
    loose = tmp_path / "loose.db"
    out = servegate("run", path, "--db", loose, "--until-precision", "1000%", "--max-starts", "4")
    assert out.returncode == 0, out.stderr
    assert "Precision 1000.0% reached after 2 start(s)" in out.stderr
    assert "fast vs baseline output_throughput at c=1: +/- " in out.stderr
    assert len(_starts(loose)) == 4

    tight = tmp_path / "tight.db"
    out = servegate("run", path, "--db", tight, "--until-precision", "0.01%", "--max-starts", "3")
    assert out.returncode == 0, out.stderr
    assert "Precision not reached after 3 start(s) per server configuration: --max-starts 3" in (
        out.stderr
    )
    assert "(above the target)" in out.stderr
    assert "adding a round" in out.stderr
    assert _starts(tight) == _plan(3, 0)  # the added round is seeded like the others

    budget = tmp_path / "budget.db"
    out = servegate("run", path, "--db", budget, "--until-precision", "0.01%", "--budget", "1s")
    assert out.returncode == 0, out.stderr
    assert "Precision not reached after 2 start(s)" in out.stderr
    assert "--budget 1s spent" in out.stderr
    assert len(_starts(budget)) == 4


@pytest.mark.parametrize(
    ("flags", "bench", "message"),
    [
        (("--restarts", "0"), "", "--restarts 0: give a whole number of at least 1"),
        ((), "restarts = 0", "bench.restarts: Input should be greater than or equal to 1"),
        (("--until-precision", "0%", "--max-starts", "3"), "", "--until-precision 0%: give"),
        (("--until-precision", "abc", "--budget", "1m"), "", "--until-precision abc: give"),
        (("--until-precision", "2%"), "", "needs a budget; add --max-starts N"),
        (("--max-starts", "3"), "", "--max-starts is a budget for --until-precision"),
        (("--budget", "soon", "--until-precision", "2%"), "", "--budget soon: give a wall"),
        (
            ("--until-precision", "2%", "--max-starts", "1"),
            "restarts = 2",
            "--max-starts 1 is fewer than the 2 start(s)",
        ),
        (("--seed", "-1"), "", "--seed -1: give a whole number of at least 0"),
        # planned before the first start: a trillion starts planned for minutes, silently
        (
            ("--restarts", "1000000000000", "--dry-run"),
            "",
            "--restarts 1000000000000: at most 1000 starts per server configuration",
        ),
        ((), "restarts = 1001", "bench.restarts: Input should be less than or equal to 1000"),
        (
            ("--until-precision", "2%", "--max-starts", "1000000000000"),
            "",
            "--max-starts 1000000000000: at most 1000 starts per server configuration",
        ),
    ],
)
def test_bad_values_exit_2_with_one_sentence(
    tmp_path: Path, flags: tuple[str, ...], bench: str, message: str
) -> None:
    """Mistakes in the flags or the file: one line naming the fix, exit 2, nothing run."""
    path = write_campaign(
        tmp_path,
        '[[variant]]\nname = "baseline"\n',
        bench=f"concurrency = [1]\nrequests = 2\n{bench}",
    )
    db = tmp_path / "c.db"
    out = servegate("run", path, "--db", db, *flags)
    assert out.returncode == 2, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and message in lines[0], lines
    assert not db.exists()


def test_min_effect_in_the_file_is_checked_and_used(tmp_path: Path) -> None:
    """[campaign] min_effect takes a percentage string; the report uses it unless
    --min-effect is given."""
    bad = write_campaign(tmp_path, '[[variant]]\nname = "baseline"\n', name="bad")
    text = bad.read_text().replace('baseline = "baseline"', 'baseline = "baseline"\nmin_effect = 2')
    bad.write_text(text)
    out = servegate("run", bad, "--db", tmp_path / "bad.db")
    assert out.returncode == 2
    assert (
        'campaign.min_effect: a percentage from 0 to 100 as a string, e.g. min_effect = "2%"'
        in (out.stderr)
    )

    path = write_campaign(
        tmp_path,
        TWO,
        bench="concurrency = [1]\nrequests = 4\nrepeats = 2",
    )
    path.write_text(
        path.read_text().replace(
            'baseline = "baseline"', 'baseline = "baseline"\nmin_effect = "90%"'
        )
    )
    db = tmp_path / "c.db"
    out = servegate("run", path, "--db", db)
    assert out.returncode == 0, out.stderr
    report = servegate("report", "--db", db, "--json")
    assert report.returncode == 0, report.stderr
    data = json.loads(report.stdout)
    assert data["method"]["min_effect"] == pytest.approx(0.9)
    given = json.loads(servegate("report", "--db", db, "--min-effect", "0", "--json").stdout)
    assert given["method"]["min_effect"] == 0.0
