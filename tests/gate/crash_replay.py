"""Replay real engine logs through the real gate and score its verdicts.

Each fixture is ``tests/fixtures/crash_logs/<engine>/<name>.log`` (an excerpt of a log
pasted in a public issue thread) with a ``<name>.json`` sidecar that says what the gate
must decide (format: tests/fixtures/crash_logs/README.md). ``replay`` starts a real
process that writes the log in a few bursts and then exits, kills itself with a signal,
or stays alive, exactly as the sidecar's ``exit`` says, and runs ``Gate`` on its output
pipe with the engine's profile, as ``servegate launch`` does. ``score`` compares the
verdict with the sidecar. Used by tests/gate/test_crash_logs.py and
benchmarks/crash_classification.py.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shlex
import socket
import subprocess
import sys
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from servegate.gate.decide import Gate, GateSources
from servegate.gate.flags import given_options
from servegate.gate.options import GateOptions, port_from_command
from servegate.gate.verdict import Verdict

__all__ = [
    "FIXTURES",
    "Fixture",
    "Outcome",
    "known_causes",
    "load_fixtures",
    "posix_code",
    "replay",
    "replay_all",
    "run_log",
    "split_of",
]

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "crash_logs"
WRITER = Path(__file__).resolve().parent / "scripts" / "replay_log.py"
STATUSES = ("ready", "crash", "timeout")
SPLITS = ("fit", "held-out")
# Where a log comes from: a public thread, file or page (its https URL), or a run of a real
# engine on the project's own machines ("run: " then the engine's version and the command).
SOURCES = ("https://", "run: ")
KEYS = {"engine", "source", "status", "kind", "cause", "exit", "split", "note"}
OPTIONAL_KEYS = {"ready"}
CHUNKS = 3  # bursts the log is written in
GAP_S = 0.02  # between bursts
TIMEOUT_S = 1.5  # --timeout for a fixture that expects TIMEOUT
CRASH_TIMEOUT_S = 8.0  # for the others (only reached when the gate misses the crash)


def posix_code(code: int) -> int:
    """An exit status as a POSIX parent sees it: a status wider than a byte (Windows'
    ``0xc0000135``, reported by a runner) keeps its low byte, 1 where that byte is 0,
    so that the replay still exits nonzero."""
    if 0 <= code <= 255:
        return code
    return (code & 0xFF) or 1


def split_of(name: str) -> str:
    """The fixture's half, fixed by its file name: ``fit`` or ``held-out``."""
    return SPLITS[int(hashlib.sha256(name.encode()).hexdigest(), 16) % 2]


@dataclass(frozen=True, slots=True, kw_only=True)
class Fixture:
    """One real log excerpt and the verdict the gate must reach on it."""

    name: str  # <engine>/<stem>
    log: Path
    engine: str
    source: str
    status: str
    kind: str | None
    cause: str | None
    exit: int | None
    split: str
    note: str
    ready: tuple[str, ...] = ()

    @property
    def command(self) -> tuple[str, ...]:
        """The words of the command a ``run: `` source names (the engine's version before
        it is no option and is skipped when read, gate/flags.py); () for a public log,
        whose command is not known. A launched server's gate knows its command, so the
        replay passes it as ``servegate launch`` would."""
        if not self.source.startswith("run: "):
            return ()
        text = self.source[len("run: ") :]
        try:
            return tuple(shlex.split(text))
        except ValueError:  # an unbalanced quote in the description around the command
            return tuple(text.split())


def _fixture(sidecar: Path) -> Fixture:
    data = json.loads(sidecar.read_text())
    name = f"{sidecar.parent.name}/{sidecar.stem}"
    keys = set(data)
    if not KEYS <= keys <= KEYS | OPTIONAL_KEYS:
        raise ValueError(
            f"{name}.json: keys must be {sorted(KEYS)} (+ {sorted(OPTIONAL_KEYS)}), "
            f"not {sorted(keys)}"
        )
    log = sidecar.with_suffix(".log")
    if not log.is_file():
        raise ValueError(f"{name}.json has no {log.name} beside it")
    if data["status"] not in STATUSES or data["split"] not in SPLITS:
        raise ValueError(f"{name}.json: bad status {data['status']!r} or split {data['split']!r}")
    if data["split"] != split_of(sidecar.stem):
        raise ValueError(f"{name}.json: split must be {split_of(sidecar.stem)!r} (by file name)")
    if data["engine"] != sidecar.parent.name:
        raise ValueError(f"{name}.json: engine {data['engine']!r} is not its folder's name")
    if not str(data["source"]).startswith(SOURCES):
        raise ValueError(
            f"{name}.json: source must be the thread's https URL or 'run: ' and the command"
        )
    cause = data["cause"]
    if cause is not None and not any(cause in line for line in log.read_text().splitlines()):
        raise ValueError(f"{name}.json: cause {cause!r} is not in any line of {log.name}")
    if data["engine"] == "generic" and not data.get("ready"):
        raise ValueError(f"{name}.json: a generic log needs 'ready' (what --ready would be)")
    code = data["exit"]
    if code is not None and not isinstance(code, int):
        raise ValueError(f"{name}.json: exit must be an integer or null")
    return Fixture(
        name=name,
        log=log,
        engine=data["engine"],
        source=data["source"],
        status=data["status"],
        kind=data["kind"],
        cause=cause,
        exit=code,
        split=data["split"],
        note=data["note"],
        ready=tuple(data.get("ready", ())),
    )


def load_fixtures(root: Path = FIXTURES, split: str = "all") -> list[Fixture]:
    """Every fixture under ``root`` (``split``: fit, held-out or all), sorted by name."""
    found = [_fixture(path) for path in sorted(root.glob("*/*.json"))]
    return [f for f in found if split in ("all", f.split)]


def known_causes(root: Path = FIXTURES) -> list[tuple[str, str]]:
    """``(kind, line)`` of every crash fixture under ``root`` that has a kind and a cause:
    the log's first line holding the sidecar's ``cause``, its whitespace runs made one
    space, sorted by fixture name (what gate/learned.py's shipped model is trained on)."""
    pairs = []
    for sidecar in sorted(root.glob("*/*.json")):
        data = json.loads(sidecar.read_text())
        if data["status"] != "crash" or not data["kind"] or not data["cause"]:
            continue
        text = sidecar.with_suffix(".log").read_text(encoding="utf-8", errors="replace")
        line = next((row for row in text.splitlines() if data["cause"] in row), data["cause"])
        pairs.append((data["kind"], " ".join(line.split())))
    return pairs


@dataclass(frozen=True, slots=True, kw_only=True)
class Outcome:
    """A fixture's verdict and which of its expectations it met."""

    fixture: Fixture
    verdict: Verdict
    status_ok: bool
    kind_ok: bool | None  # None: the sidecar expects no particular kind
    cause_ok: bool | None  # None: the sidecar names no cause line

    @property
    def ok(self) -> bool:
        """True when every expectation was met."""
        return self.status_ok and self.kind_ok is not False and self.cause_ok is not False

    def describe(self) -> str:
        """One line: the fixture, what was expected and what the gate said."""
        f, v = self.fixture, self.verdict
        want = f"{f.status}/{f.kind}/{f.cause!r}"
        got = f"{v.status}/{v.kind}/{(v.matched_line or '')[:120]!r}"
        return f"{f.name} [{f.split}]: expected {want}, got {got}"


def score(fixture: Fixture, verdict: Verdict) -> Outcome:
    """Compare a verdict with what the fixture's sidecar expects."""
    kind_ok = None if fixture.kind is None else verdict.kind == fixture.kind
    cause_ok = None
    if fixture.cause is not None:
        # the gate quotes a line without its ends' blanks; a label may keep them
        # ("...adapter chat: " of an empty reason)
        cause = fixture.cause.strip()
        cause_ok = verdict.matched_line is not None and cause in verdict.matched_line
    return Outcome(
        fixture=fixture,
        verdict=verdict,
        status_ok=verdict.status == fixture.status,
        kind_ok=kind_ok,
        cause_ok=cause_ok,
    )


def run_log(
    log: Path,
    *,
    engine: str,
    exit: int | None,
    timeout_s: float = CRASH_TIMEOUT_S,
    ready: Sequence[str] = (),
    command: Sequence[str] = (),
    answers: bool = False,
) -> Verdict:
    """Gate a live process that prints ``log`` and then ends as ``exit`` says; the
    options of ``command`` are those its gate knows (what the engine was started with).
    ``answers``: the run answered its health probe when its log was cut (it came up), so
    once the log is written the process answers the gate's probe on a port of its own
    (a server whose log has no ready line: ``--log-level WARNING``)."""
    end = (
        "hold" if exit is None else (f"signal:{-exit}" if exit < 0 else f"exit:{posix_code(exit)}")
    )
    listener = None
    said = port_from_command(command)
    if answers or said is not None:
        # answers: bound here, listening only once the log is written (refused until
        # then). Else the command gave a port, which a live gate probes
        # (GateOptions.for_command), and nothing answered there when the log was cut:
        # bound and never listening, it refuses, as the collector's probe was refused
        # (a server in a network namespace of its own says it listens where no client
        # reaches). The command's own port where it is free, so that the log's
        # "listening on" line names the port the gate probes.
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            listener.bind(("127.0.0.1", said or 0))
        except OSError:
            listener.bind(("127.0.0.1", 0))
    if answers and listener is not None:
        end = f"serve:{listener.fileno()}"
    options = GateOptions(
        engine=engine,
        ready=tuple(ready),
        timeout_s=timeout_s,
        stall_s=None,
        command_options=given_options(command),
        port=None if listener is None else listener.getsockname()[1],
    )
    resolved = options.resolve()
    out_r, out_w = os.pipe()
    try:
        argv = [sys.executable, "-S", str(WRITER), str(log), str(CHUNKS), str(GAP_S), end]
        child = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=out_w,
            stderr=out_w,
            start_new_session=True,
            pass_fds=(listener.fileno(),) if answers and listener is not None else (),
        )
    finally:
        os.close(out_w)
        if listener is not None and answers:
            listener.close()  # the child holds it now
    os.set_blocking(out_r, False)
    try:
        gate = Gate(resolved, GateSources(pid=child.pid, is_parent=True, pipe_fd=out_r))
        return gate.run()
    finally:
        if listener is not None and not answers:
            listener.close()  # held bound, so that no other process takes the port
        with contextlib.suppress(ProcessLookupError):
            child.kill()
        child.wait()  # reaped by the gate already when it saw the exit: returns at once
        with contextlib.suppress(OSError):
            os.close(out_r)


def replay(fixture: Fixture) -> Outcome:
    """Run the fixture's log through the gate as a live process; score the verdict."""
    verdict = run_log(
        fixture.log,
        engine=fixture.engine,
        exit=fixture.exit,
        timeout_s=TIMEOUT_S if fixture.status == "timeout" else CRASH_TIMEOUT_S,
        ready=fixture.ready,
        command=fixture.command,
        answers=fixture.status == "ready",
    )
    return score(fixture, verdict)


def replay_all(fixtures: Iterable[Fixture], workers: int = 8) -> list[Outcome]:
    """Replay fixtures concurrently (each gate waits on its own events); in order."""
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(replay, fixtures))


@dataclass(frozen=True, slots=True, kw_only=True)
class Figures:
    """Classification figures over a set of outcomes."""

    n: int
    status: tuple[int, int]  # right, counted
    kind: tuple[int, int]
    cause: tuple[int, int]


def figures(outcomes: Sequence[Outcome]) -> Figures:
    """Right / counted for status, kind (where one is expected) and cause line."""
    kinds = [o.kind_ok for o in outcomes if o.kind_ok is not None]
    causes = [o.cause_ok for o in outcomes if o.cause_ok is not None]
    return Figures(
        n=len(outcomes),
        status=(sum(o.status_ok for o in outcomes), len(outcomes)),
        kind=(sum(kinds), len(kinds)),
        cause=(sum(causes), len(causes)),
    )
