"""The crash kinds judged by words (gate/learned.py), measured on logs they never saw.

    python benchmarks/learned_kinds.py [--json]     # the blind figure (about 2 minutes)
    python benchmarks/learned_kinds.py --write      # rewrite src/servegate/gate/kind_lines.tsv

Every blind batch of real crash logs was measured once, with the classifier of its day,
before it was fitted (benchmarks/README.md). This replays each batch again with that
day's classifier (a git worktree of the commit it was measured at, listed in
``MEASURED``), and trains the word model only on the crash logs the project held at
that commit (its tests/fixtures/crash_logs): the model's blind figure is how many of the
batch's kinds it turns right, and wrong, where that day's classifier fell back to the
bare ``exit`` after a plain exit code with a quoted line (the one case gate/decide.py
gives it). Needs the repository's history (a clone, not an sdist).

``--write`` writes the shipped model's examples: one ``kind<TAB>line`` for each crash
fixture of tests/fixtures/crash_logs with a kind and a cause line (the log's first line
holding the sidecar's ``cause``), sorted by fixture name; tests/gate/test_learned.py
checks the shipped file is what the fixtures give.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "src"))

from tests.gate.crash_replay import known_causes  # noqa: E402

from servegate.gate.learned import KindModel  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures" / "crash_logs"
BLIND = ROOT / "tests" / "fixtures" / "crash_logs_blind"
DATA = ROOT / "src" / "servegate" / "gate" / "kind_lines.tsv"

# blind batch -> the commit whose classifier measured it first (benchmarks/README.md)
MEASURED: dict[str, str] = {
    "2026-12-04b": "92407ba",
    **dict.fromkeys(("2026-12-05a", "2026-12-05b"), "c71cff1"),
    **dict.fromkeys(("2026-12-05c", "2026-12-05d", "2026-12-05e"), "8e28150"),
    **{f"2026-12-05{b}": "efdc1ca" for b in "fghij"},
    **{f"2026-12-05{b}": "4401f8c" for b in "klmno"},
    **{f"2026-12-05{b}": "87f0863" for b in "pqrs"},
    **{f"2026-12-05{b}": "93f7a52" for b in "tuvwxy"},
    **{f"2026-12-05z{b}": "bb73446" for b in "abcd"},
    **{f"2026-12-05z{b}": "6556a9b" for b in "efgh"},
    **{f"2026-12-05z{b}": "444d5af" for b in "ijklmp"},
    **{f"2026-12-05z{b}": "8440dad" for b in "rst"},
}
# exit codes gate/decide.py reads as a signal or a shell's cannot-run: never judged
NOT_PLAIN = frozenset({126, 127, 132, 134, 137, 139})

REPLAY = """
import json, sys
from pathlib import Path
sys.path.insert(0, ".")
from tests.gate.crash_replay import load_fixtures, replay_all
root, out, *batches = sys.argv[1:]
def batch_of(note):
    for b in batches:
        if note.startswith(f"blind batch {b}:") or note.startswith(f"blind batch {b} "):
            return b
    return None
fixtures = [f for f in load_fixtures(root=Path(root)) if batch_of(f.note)]
with open(out, "w") as fh:
    for o in replay_all(fixtures):
        f, v = o.fixture, o.verdict
        fh.write(json.dumps({"name": f.name, "batch": batch_of(f.note), "status": f.status,
            "kind": f.kind, "exit": f.exit, "got": v.kind, "line": v.matched_line or ""}) + "\\n")
"""


def render(pairs: list[tuple[str, str]]) -> str:
    """The shipped file's text."""
    return "".join(f"{kind}\t{line}\n" for kind, line in pairs)


def _pooled(folder: Path) -> None:
    """Every crash log from a public source, fixtures and batches still held back, in one
    fixture folder (the runs of real engines here, ``run: `` sources, came after every
    measured commit: their loaders would reject them)."""
    roots = [FIXTURES, *(p for p in sorted(BLIND.glob("2026-*")) if p.is_dir())]
    for root in roots:
        for sidecar in root.glob("*/*.json"):
            if sidecar.stem.startswith("run-"):
                continue
            engine = folder / sidecar.parent.name
            engine.mkdir(exist_ok=True)
            for path in (sidecar, sidecar.with_suffix(".log")):
                (engine / path.name).write_bytes(path.read_bytes())


def measure() -> dict[str, object]:
    """Replay each batch with its day's classifier; judge its bare exits with a model
    trained on that day's fixtures."""
    by_commit: dict[str, list[str]] = {}
    for batch, commit in MEASURED.items():
        by_commit.setdefault(commit, []).append(batch)
    totals: Counter[str] = Counter()
    changed: list[str] = []
    with tempfile.TemporaryDirectory(prefix="learned-kinds-") as tmp:
        pool = Path(tmp) / "pool"
        pool.mkdir()
        _pooled(pool)
        for commit, batches in sorted(by_commit.items()):
            tree = Path(tmp) / commit
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "add", "-q", "--detach", str(tree), commit],
                check=True,
            )
            try:
                out = Path(tmp) / f"{commit}.jsonl"
                env = {**os.environ, "PYTHONPATH": f"{tree / 'src'}{os.pathsep}{tree}"}
                subprocess.run(
                    [sys.executable, "-c", REPLAY, str(pool), str(out), *batches],
                    cwd=tree,
                    env=env,
                    check=True,
                )
                model = KindModel(known_causes(tree / "tests" / "fixtures" / "crash_logs"))
            finally:
                subprocess.run(
                    ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)],
                    check=True,
                )
            for row in map(json.loads, out.read_text().splitlines()):
                if row["status"] != "crash" or row["kind"] is None:
                    continue
                totals["kinds"] += 1
                got = row["got"]
                totals["before"] += got == row["kind"]
                code = row["exit"]
                plain = code is None or (code >= 0 and code not in NOT_PLAIN)
                if got == "exit" and row["line"] and plain:
                    totals["bare"] += 1
                    found = model.judge(row["line"])
                    if found is not None:
                        totals["judged"] += 1
                        got = found.kind
                        if got != row["kind"]:
                            changed.append(
                                f"{row['batch']} {row['name']}: {row['kind']} judged {got}"
                            )
                totals["after"] += got == row["kind"]
                totals["fixed"] += got == row["kind"] != row["got"]
                totals["broken"] += row["got"] == row["kind"] != got
    return {"batches": len(MEASURED), **totals, "judged_wrong": changed}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help=f"rewrite {DATA.name}")
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")
    args = parser.parse_args()
    if args.write:
        pairs = known_causes(FIXTURES)
        DATA.write_text(render(pairs), encoding="utf-8")
        print(f"{DATA.relative_to(ROOT)}: {len(pairs)} known cause lines")
        return 0
    report = measure()
    if args.json:
        print(json.dumps(report))
        return 0
    k, b, a = report["kinds"], report["before"], report["after"]
    print(f"{report['batches']} blind batches, {k} logs with a kind")
    print(f"kind right, that day's classifier: {b}/{k} ({100 * b / k:.1f} %)")  # type: ignore[operator]
    print(f"with the words judged:            {a}/{k} ({100 * a / k:.1f} %)")  # type: ignore[operator]
    print(
        f"bare exits with a quoted line: {report.get('bare', 0)}, judged "
        f"{report.get('judged', 0)}: {report.get('fixed', 0)} made right, "
        f"{report.get('broken', 0)} made wrong"
    )
    for row in report["judged_wrong"]:  # type: ignore[attr-defined]
        print(f"  judged wrong: {row}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
