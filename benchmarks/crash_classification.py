"""Crash classification on real engine logs: status, kind and cause line, per split.

    python benchmarks/crash_classification.py [--split fit|held-out|all] [--engine NAME]
                                         [--batch DATE] [--root DIR] [--by-engine] [--json]

Replays every fixture of tests/fixtures/crash_logs (real log excerpts from public
issue threads, see its README) through the real gate, as a live process that writes
the log and then ends as the engine did, and prints for each split: status right %,
kind right % (over fixtures that expect a kind), cause line right % (over fixtures
that name one), and every miss. Signatures are fitted on the ``fit`` half only; the
``held-out`` half measures them. ``--batch DATE`` keeps only the fixtures of a blind
batch (those whose sidecar note starts with ``blind batch DATE``), collected after the
signatures were written and measured before any change; ``--by-engine`` adds the
figures per engine. Each split also counts the CRASH verdicts whose kind is the bare
``exit`` (how the process ended: no line, family, class or phase named more), and how
many of those quote a line. ``--root DIR`` replays the fixtures under DIR instead (default
tests/fixtures/crash_logs), so that a batch held back under
tests/fixtures/crash_logs_blind/<batch> is measured where it lies.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.gate.crash_replay import FIXTURES, SPLITS, figures, load_fixtures, replay_all


def _pct(right: int, counted: int) -> str:
    return f"{100.0 * right / counted:5.1f} % ({right}/{counted})" if counted else "   -"


BATCH_PREFIX = "blind batch "


def in_batch(note: str, batch: str) -> bool:
    """True when a sidecar note marks its fixture as part of blind batch ``batch``."""
    return note.startswith(f"{BATCH_PREFIX}{batch} ") or note.startswith(f"{BATCH_PREFIX}{batch}:")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--split", choices=(*SPLITS, "all"), default="all")
    parser.add_argument("--engine", help="only this engine's fixtures")
    parser.add_argument(
        "--batch", metavar="DATE", help="only the blind batch of that date (e.g. 2026-12-03)"
    )
    parser.add_argument(
        "--root",
        metavar="DIR",
        type=Path,
        default=FIXTURES,
        help="fixture folder (<engine>/<name>.json), default tests/fixtures/crash_logs",
    )
    parser.add_argument("--by-engine", action="store_true", help="figures per engine too")
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")
    args = parser.parse_args()
    if not args.root.is_dir():
        print(f"no such folder: {args.root}", file=sys.stderr)
        return 2
    fixtures = load_fixtures(root=args.root, split=args.split)
    if args.engine:
        fixtures = [f for f in fixtures if f.engine == args.engine]
    if args.batch:
        fixtures = [f for f in fixtures if in_batch(f.note, args.batch)]
    if not fixtures:
        print("no fixture matches; check --split, --engine and --batch", file=sys.stderr)
        return 2
    started = time.monotonic()
    outcomes = replay_all(fixtures)
    wall_s = time.monotonic() - started
    groups = [s for s in SPLITS if args.split in ("all", s)]
    if args.split == "all":
        groups.append("all")
    report: dict[str, object] = {"wall_s": round(wall_s, 2), "splits": {}}
    for group in groups:
        chosen = [o for o in outcomes if group in ("all", o.fixture.split)]
        fig = figures(chosen)
        misses = [o.describe() for o in chosen if not o.ok and group != "all"]
        # CRASH verdicts whose kind is the bare ``exit``: how the process ended, no more
        crashes = [o for o in chosen if o.verdict.status == "crash"]
        bare = [o for o in crashes if o.verdict.kind == "exit"]
        quoted = sum(1 for o in bare if o.verdict.matched_line)
        report["splits"][group] = {  # type: ignore[index]
            "n": fig.n,
            "status": fig.status,
            "kind": fig.kind,
            "cause": fig.cause,
            "misses": misses,
            "bare_exit": (len(bare), quoted, len(crashes)),
        }
        if not args.json:
            print(f"{group}: {fig.n} logs")
            print(f"  status right  {_pct(*fig.status)}")
            print(f"  kind right    {_pct(*fig.kind)}")
            print(f"  cause right   {_pct(*fig.cause)}")
            print(
                f"  bare exit     {len(bare)} of {len(crashes)} CRASH verdicts "
                f"({quoted} with a quoted line)"
            )
            for line in misses:
                print(f"  miss: {line}")
    if args.by_engine:
        engines: dict[str, object] = {}
        for engine in sorted({o.fixture.engine for o in outcomes}):
            fig = figures([o for o in outcomes if o.fixture.engine == engine])
            engines[engine] = {
                "n": fig.n,
                "status": fig.status,
                "kind": fig.kind,
                "cause": fig.cause,
            }
            if not args.json:
                print(
                    f"{engine:9s} {fig.n:3d} logs  status {_pct(*fig.status)}  "
                    f"kind {_pct(*fig.kind)}  cause {_pct(*fig.cause)}"
                )
        report["engines"] = engines
    if args.json:
        print(json.dumps(report, indent=1))
    else:
        print(f"{len(outcomes)} replays in {wall_s:.1f}s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
