"""A real process that claims a database as its runner, for tests of the runner lock."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).parents[2]

# claims the database for campaign 'c', marks an attempt running, then waits for stdin
_CLAIMER = textwrap.dedent(
    """
    import sys
    from servegate.errors import RunnerBusyError
    from servegate.store import Store
    with Store.open(sys.argv[1]) as store:
        if len(sys.argv) > 2:  # a race: start when the go file appears
            import os, time
            while not os.path.exists(sys.argv[2]):
                time.sleep(0.005)
        try:
            store.claim_runner(campaign="c")
        except RunnerBusyError as exc:
            print("busy", exc, flush=True)
            sys.exit(0)
        cid = store.campaign("c", "cfg", "baseline")
        store.start_attempt(cid, variant="baseline", server_key="k", command=["x"], env={},
                            host="local", versions={}, git_commit=None)
        print("claimed", flush=True)
        sys.stdin.readline()
    """
)


@contextmanager
def claimer(db: Path, *extra: str) -> Iterator[subprocess.Popen[str]]:
    """A process that claims ``db`` (see _CLAIMER); killed when the block ends."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _CLAIMER, str(db), *extra],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    try:
        yield proc
    finally:
        proc.kill()
        proc.communicate(timeout=30)


def claimed(proc: subprocess.Popen[str]) -> str:
    assert proc.stdout is not None
    return proc.stdout.readline().strip()
