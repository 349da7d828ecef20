"""The campaign runner: for each server start, preflight -> launch -> bench -> stop.

Variants whose final command and environment are equal share one server start (a
group). Each group is started ``restarts`` times: in rounds, each round starting every
group once in a seeded random order (``start_order``), so the starts of the baseline
and the variants are interleaved and never all the baseline's first. For each start
the runner checks the machine (port, previous processes, GPU memory, model path, JIT
locks), launches and gates the server, runs every load point of every variant in the
group ``repeats`` times (the first repeat of each point after ``warmup`` requests), and
stops the server. With ``until_precision`` it then adds rounds until every compared
interval is narrow enough, or a budget is spent. Everything is written to the store as
it happens, so a run killed at any moment can be resumed in the same order without
repeating a finished measurement. A server that crashes or times out, at start or
mid-benchmark, is recorded with its verdict, kind, hint and log tail; its group is not
started again in this run, and the campaign moves on. Each start's telemetry series is
stored with its attempt, and each start joins the per-user start history
(servegate.startup) as plain launches do, so that start-up ETAs are shared: the
progress shows each start's ETA and the campaign's time left.

    with Store.open("servegate.db") as store, Interrupts() as interrupts:
        outcome = run_campaign(campaign, store, options=RunOptions(), progress=progress,
                               interrupts=interrupts)
"""

from __future__ import annotations

import math
import os
import random
import re
import socket
import time
from collections.abc import Iterator, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from servegate.bench import BenchSettings, PointResult, Progress, run_point
from servegate.campaign.config import Campaign, LoadPoint, ServerGroup, Variant, check_programs
from servegate.campaign.crash import TAIL_LINES, classify, log_tail
from servegate.campaign.gpu import GpuMonitor
from servegate.campaign.interrupt import Interrupted, Interrupts
from servegate.campaign.preflight import (
    Level,
    PreflightReport,
    ProcessRef,
    process_tree,
    run_preflight,
)
from servegate.campaign.progress import CampaignProgress, TimeLeft, duration
from servegate.campaign.provenance import engine_versions, git_commit, tool_versions
from servegate.engines import get_profile
from servegate.errors import (
    BenchError,
    GateError,
    ServegateError,
    StoreError,
    UsageError,
)
from servegate.gate.verdict import Verdict
from servegate.launch import Server, launch
from servegate.redact import Redactor
from servegate.startup import StartupRecord
from servegate.startup.eta import Eta, estimate
from servegate.startup.history import History, config_key, gpu_model
from servegate.startup.session import startup_telemetry
from servegate.store import AttemptStatus, CampaignStatus, Store
from servegate.telemetry.model import Snapshot

__all__ = [
    "PrecisionOutcome",
    "RunOptions",
    "RunOutcome",
    "check_programs",
    "run_campaign",
    "start_order",
]

_DEATH_WAIT_S = 1.0  # after failed requests: how long to wait for a dying server to exit


@dataclass(frozen=True, slots=True, kw_only=True)
class RunOptions:
    """How to run a campaign (the ``servegate run`` flags)."""

    resume: bool = False
    max_failed_variants: int | None = None  # exit 1 when more variants than this fail
    max_error_rate: float | None = None  # exit 1 when a point's failed fraction is above
    log_dir: Path | None = None  # server logs; None: next to the database
    restarts: int | None = None  # starts per server configuration; None: the file's
    seed: int | None = None  # seed of the start order; None: the file's [bench] seed
    until_precision: float | None = None  # add rounds until every half-width is this
    max_starts: int | None = None  # ... or each configuration has had this many starts
    budget_s: float | None = None  # ... or another round would end past this (seconds)


@dataclass(frozen=True, slots=True, kw_only=True)
class PrecisionOutcome:
    """How ``until_precision`` ended: the goal reached, or why not, with the half-widths."""

    target: float  # the half-width asked for, as a fraction (0.02)
    reached: bool
    why: str  # one sentence: what ended the rounds
    starts: int  # starts per server configuration so far
    widths: tuple[tuple[str, float | None, int], ...]  # (what, half-width, fewest starts)

    def lines(self) -> list[str]:
        """What the end of the run says about it: the outcome, then each half-width."""
        head = f"Precision {self.target:.1%} reached" if self.reached else "Precision not reached"
        out = [f"{head} after {self.starts} start(s) per server configuration: {self.why}"]
        for what, width, starts in self.widths:
            shown = "no interval yet" if width is None else f"+/- {width:.2%}"
            over = "" if width is not None and width <= self.target else " (above the target)"
            out.append(f"  {what}: {shown}, {starts} start(s){over}")
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class RunOutcome:
    """What a run did, and the exit code that follows from it."""

    campaign_id: int
    status: str  # done | interrupted
    measured: int  # points measured by this run
    skipped: int  # points already in the store (--resume)
    failed_variants: tuple[str, ...]
    breaches: tuple[str, ...]  # thresholds crossed (or nothing measured), one sentence each
    signum: int | None = None  # the signal that interrupted the run
    seed: int = 0  # the start order's seed
    precision: PrecisionOutcome | None = None  # with until_precision

    @property
    def exit_code(self) -> int:
        """0 completed; 1 a threshold crossed or no variant measured; 128 + signal when
        interrupted."""
        if self.signum is not None:
            return 128 + self.signum
        return 1 if self.breaches else 0


@dataclass(kw_only=True)
class _State:
    """Mutable bookkeeping of one run."""

    measured: int = 0
    skipped: int = 0
    failed: dict[str, str] = field(default_factory=dict)  # variant -> reason
    error_rates: list[tuple[str, str, int, float]] = field(default_factory=list)
    previous: tuple[ProcessRef, ...] = ()
    warned: set[tuple[str, str]] = field(default_factory=set)
    dead: dict[str, str] = field(default_factory=dict)  # group key -> why it is not restarted
    broken: set[str] = field(default_factory=set)  # variants whose benchmark cannot run
    seed: int = 0
    precision: PrecisionOutcome | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class _Task:
    """One measurement still to make."""

    variant: Variant
    point: LoadPoint
    repeat: int  # stored repeat number: (start - 1) * repeats + the repeat on this start


@dataclass(frozen=True, slots=True, kw_only=True)
class _Start:
    """One start of a server group: what it runs, what it measures, how it is announced."""

    cid: int
    group: ServerGroup
    number: int  # which start of the group: 1, 2, ...
    tag: str  # its place in the run: "[3/8]"
    names: str  # the variants it serves, as the progress names them
    port: int
    argv: list[str]
    env: dict[str, str]
    todo: list[_Task]  # the measurements still to make on it
    versions: dict[str, Any]  # recorded with each of its attempts, as is
    commit: str | None  # the git commit of the server's working folder

    @property
    def owner(self) -> str:
        """The variant its attempt is recorded under: the first one with work to do."""
        return self.todo[0].variant.name

    @property
    def sharing(self) -> list[str]:
        """The other variants measured on this server (they fail with it)."""
        return list(
            dict.fromkeys(t.variant.name for t in self.todo if t.variant.name != self.owner)
        )


def start_order(count: int, round_: int, seed: int, *, shuffle: bool = True) -> list[int]:
    """The order in which round ``round_`` (1, 2, ...) starts ``count`` server groups.

    Each round starts every group once, in a random order drawn from ``seed`` and the
    round: balanced, interleaved, and the same on every machine and on ``--resume``.
    ``shuffle=False`` keeps the file's order (one start per group, no restarts).
    """
    order = list(range(count))
    if shuffle:
        random.Random(f"servegate start order {seed} {round_}").shuffle(order)
    return order


def run_campaign(
    campaign: Campaign,
    store: Store,
    *,
    options: RunOptions,
    progress: CampaignProgress,
    interrupts: Interrupts,
) -> RunOutcome:
    """Run (or resume) ``campaign`` into ``store``; return what happened.

    Raises only for internal errors; server crashes, timeouts, failed preflights and
    unreachable servers are recorded and the campaign goes on.
    """
    check_programs(campaign)
    return _Runner(campaign, store, options, progress, interrupts).run()


class _Runner:
    def __init__(
        self,
        campaign: Campaign,
        store: Store,
        options: RunOptions,
        progress: CampaignProgress,
        interrupts: Interrupts,
    ) -> None:
        self.campaign = campaign
        self.store = store
        self.options = options
        self.progress = progress
        self.interrupts = interrupts
        self.state = _State()
        self.redactor = _redactor_for(campaign)
        self.log_dir = options.log_dir or Path(store.path).resolve().parent / (
            Path(store.path).stem + "-logs"
        )
        self.profile = get_profile(campaign.engine)
        self.gpu: GpuMonitor | None = None
        self.gpu_idle: tuple[Any, ...] = ()
        self._ready_offset = 0  # size of the current server's log when it became READY
        self._died_on = ""  # the variant whose benchmark the current server died in
        self.time_left = TimeLeft()
        self._etas: dict[str, float | None] = {}  # group key -> start-up ETA from history

    # --- the campaign ------------------------------------------------------------------

    def run(self) -> RunOutcome:
        store = self.store
        with self.interrupts.shielded():
            gone = store.claim_runner(campaign=self.campaign.name)
        if gone is not None:
            self.progress.info(
                f"the runner recorded in {store.path} (PID {gone.pid} on {gone.host}, "
                f"since {gone.claimed_at}) is gone; this run takes over"
            )
        try:
            return self._run()
        finally:
            store.release_runner()

    def _run(self) -> RunOutcome:
        store = self.store
        cid = self._open_campaign()
        done = store.done_points(cid) if self.options.resume else set()
        self.gpu = GpuMonitor.open()
        try:
            if self.gpu is not None:
                self.gpu_idle = self.gpu.idle_memory()
                total = sum(g.used_bytes for g in self.gpu_idle) / 2**30
                self.progress.info(
                    f"{len(self.gpu_idle)} GPU(s); idle memory in use: {total:.1f} GiB"
                )
            self._rounds(cid, done)
        except Interrupted as exc:
            self.interrupts.acknowledge()
            with self.interrupts.shielded():
                store.set_campaign_status(cid, CampaignStatus.INTERRUPTED)
            self.progress.done()
            return self._outcome(cid, "interrupted", exc.signum)
        except StoreError as exc:
            self.progress.done()
            raise self._store_failed(cid, exc) from None
        except BaseException:
            with suppress(ServegateError):  # the error on its way out is the one to report
                store.set_campaign_status(cid, CampaignStatus.FAILED)
            self.progress.done()
            raise
        finally:
            if self.gpu is not None:
                self.gpu.close()
        with self.interrupts.shielded():
            store.set_campaign_status(cid, CampaignStatus.DONE)
        self.progress.done()
        return self._outcome(cid, "done", None)

    def _store_failed(self, cid: int, exc: StoreError) -> StoreError:
        """Close the campaign after a failed write (a full disk); the error to raise.

        The server is already stopped. Writing the status may fail as well on a full
        disk: the campaign then reads as interrupted anyway, since its runner is gone.
        """
        store = self.store
        with suppress(ServegateError):
            store.set_campaign_status(cid, CampaignStatus.INTERRUPTED)
        try:
            kept = len(store.done_points(cid))
        except ServegateError:
            kept = self.state.measured + self.state.skipped
        file = self.campaign.path or "CAMPAIGN.toml"
        return StoreError(
            f"{exc}; the campaign is closed as interrupted with {kept} measurement(s) kept; "
            f"free space (or fix the disk) and continue with: servegate run {file} "
            f"--db {store.path} --resume"
        )

    def _open_campaign(self) -> int:
        campaign, store = self.campaign, self.store
        stored = store.find_campaign(campaign.name)
        text = self.redactor.text(campaign.text)
        if stored is not None and self.options.resume and stored.config_text != text:
            self.progress.warning(
                f"{campaign.path or 'the campaign file'} changed since campaign "
                f"{campaign.name!r} was stored; finished measurements are kept and not repeated"
            )
        if stored is not None and not self.options.resume:
            count = len(store.done_points(stored.id))
            if count:
                self.progress.warning(
                    f"campaign {campaign.name!r} ({stored.status}) already has {count} "
                    f"measurement(s) in {store.path}; this run measures every point again and "
                    "replaces them as it goes (--resume keeps them and measures what is missing)"
                )
        if stored is None and self.options.resume:
            self.progress.info(f"nothing stored for campaign {campaign.name!r}; starting it")
        with self.interrupts.shielded():
            cid = store.campaign(campaign.name, text, campaign.baseline)
            for variant in campaign.variants:
                store.add_variant(cid, variant.name)
            closed = store.mark_interrupted(cid, "the runner stopped before this attempt ended")
        if closed:
            self.progress.info(
                f"{closed} attempt(s) left open by a stopped runner marked interrupted"
            )
        return cid

    def _outcome(self, cid: int, status: str, signum: int | None) -> RunOutcome:
        breaches = []
        limit = self.options.max_failed_variants
        failed = tuple(self.state.failed)
        if limit is not None and len(failed) > limit:
            breaches.append(
                f"{len(failed)} variant(s) failed ({', '.join(failed)}), more than "
                f"--max-failed-variants {limit}"
            )
        if status == "done" and self.state.measured + self.state.skipped == 0 and failed:
            first = failed[0]
            breaches.append(
                f"no variant could be measured: all {len(failed)} failed (first: {first}: "
                f"{self.state.failed[first]})"
            )
        rate_limit = self.options.max_error_rate
        if rate_limit is not None:
            over = [r for r in self.state.error_rates if r[3] > rate_limit]
            if over:
                name, load, repeat, rate = max(over, key=lambda r: r[3])
                breaches.append(
                    f"{len(over)} point(s) had a request error rate above --max-error-rate "
                    f"{rate_limit:g} (worst: {name} {load} repeat {repeat + 1}: {rate:.1%})"
                )
        return RunOutcome(
            campaign_id=cid,
            status=status,
            measured=self.state.measured,
            skipped=self.state.skipped,
            failed_variants=failed,
            breaches=tuple(breaches),
            signum=signum,
            seed=self.state.seed,
            precision=self.state.precision,
        )

    # --- rounds of starts --------------------------------------------------------------

    def _order_seed(self, cid: int) -> int:
        """The start order's seed: the one recorded on --resume, else --seed or the file's."""
        wanted = self.options.seed if self.options.seed is not None else self.campaign.seed
        with self.interrupts.shielded():
            stored = self.store.start_seed(cid)
            if self.options.resume and stored is not None:
                if self.options.seed is not None and self.options.seed != stored:
                    self.progress.warning(
                        f"--seed {self.options.seed} ignored: --resume continues the stored "
                        f"start order (seed {stored})"
                    )
                return stored
            self.store.start_seed(cid, wanted)
        return wanted

    def _rounds(self, cid: int, done: set[tuple[str, str, int]]) -> None:
        """Start every group ``restarts`` times in seeded rounds, then (until_precision)
        add rounds until the intervals are narrow enough or the budget is spent."""
        groups = self.campaign.groups
        restarts = self.options.restarts or self.campaign.restarts
        seed = self.state.seed = self._order_seed(cid)
        if restarts > 1:
            rounds = " | ".join(
                ", ".join(groups[i].variants[0].name for i in start_order(len(groups), r, seed))
                for r in range(1, restarts + 1)
            )
            self.progress.info(f"start order (seed {seed}): {rounds}")
        planned = [
            groups[index]
            for r in range(1, restarts + 1)
            for index in start_order(len(groups), r, seed, shuffle=restarts > 1 or r > 1)
        ]
        self._etas = self._history_etas()
        began = time.monotonic()
        longest = 0.0  # the longest round measured by this run, for --budget
        number = 0
        round_ = 1
        while True:
            if round_ > restarts:
                if self.options.until_precision is None:
                    return
                self.state.precision = self._precision(cid, round_ - 1, began, longest)
                if self.state.precision is not None:
                    return
            clock = time.monotonic()
            measured = self.state.measured
            order = start_order(len(groups), round_, seed, shuffle=restarts > 1 or round_ > 1)
            for index in order:
                number += 1
                group = groups[index]
                tag = (
                    f"[{number}/{len(groups) * restarts}]" if round_ <= restarts else f"[{number}]"
                )
                self.interrupts.check()
                names = ", ".join(v.name for v in group.variants)
                if restarts > 1 or round_ > 1:
                    names += f" start {round_}" + (f"/{restarts}" if round_ <= restarts else "")
                why = self.state.dead.get(group.key)
                if why is not None:
                    self.progress.info(f"{tag} {names}: not started ({why})")
                    continue
                if round_ <= restarts:
                    self._standing(planned, number - 1, done)
                self._group(cid, group, tag, done, start=round_, names=names)
            if self.state.measured > measured:
                longest = max(longest, time.monotonic() - clock)
            round_ += 1

    def _precision(
        self, cid: int, starts: int, began: float, longest: float
    ) -> PrecisionOutcome | None:
        """None: add a round; else how the rounds end (goal reached or budget spent)."""
        from servegate.report.precision import half_widths

        target = self.options.until_precision
        assert target is not None
        with self.interrupts.shielded():
            widths = half_widths(self.store, cid)
        shown = tuple(
            (
                f"{w.variant} vs {w.reference} {w.metric} at {w.load}",
                w.half_width,
                min(w.starts_baseline, w.starts_variant),
            )
            for w in widths
        )

        def end(reached: bool, why: str) -> PrecisionOutcome:
            return PrecisionOutcome(
                target=target, reached=reached, why=why, starts=starts, widths=shown
            )

        if not widths:
            return end(False, "nothing is compared (a failed baseline, or no variant measured)")
        # an interval from one start per side leaves out the variation between starts
        wide = [w for w in shown if w[1] is None or w[1] > target or w[2] < 2]
        if not wide:
            return end(True, f"every compared interval is within +/- {target:.1%}")
        if all(g.key in self.state.dead for g in self.campaign.groups):
            return end(False, "no server configuration can be started again")
        limit = self.options.max_starts
        if limit is not None and starts >= limit:
            return end(False, f"--max-starts {limit} reached")
        budget = self.options.budget_s
        spent = time.monotonic() - began
        if budget is not None and spent + longest > budget:
            return end(
                False,
                f"--budget {_duration(budget)} spent ({_duration(spent)} so far, and a round "
                f"takes about {_duration(longest)})",
            )
        widest = max(wide, key=lambda w: math.inf if w[1] is None else w[1])
        width = "no interval yet" if widest[1] is None else f"+/- {widest[1]:.2%}"
        self.progress.info(
            f"precision after {starts} start(s): {len(wide)} of {len(shown)} interval(s) "
            f"wider than +/- {target:.1%} (widest: {widest[0]}, {width}); adding a round"
        )
        return None

    def _history_etas(self) -> dict[str, float | None]:
        """Each server configuration's start-up ETA from the start history (None: none)."""
        etas: dict[str, float | None] = {group.key: None for group in self.campaign.groups}
        try:
            gpu = gpu_model()
            with History.open() as history:
                for group in self.campaign.groups:
                    argv, env = group.render(port=0)
                    key = config_key(self.campaign.engine, argv, env=env, gpu=gpu)
                    eta = estimate(history.starts(config=key.key, limit=50), None)
                    etas[group.key] = None if eta is None else eta.total_s
        except (UsageError, OSError) as exc:
            self.progress.warning(f"start history not read: {exc}")
        return etas

    def _standing(
        self, planned: list[ServerGroup], position: int, done: set[tuple[str, str, int]]
    ) -> None:
        """Say where the campaign stands before start ``position`` (0-based) of ``planned``,
        and its time left."""
        upcoming: list[tuple[float | None, int]] = []
        open_groups: set[str] = set()
        starts: dict[str, int] = {}
        for number, group in enumerate(planned):
            start = starts[group.key] = starts.get(group.key, 0) + 1
            if number < position or group.key in self.state.dead:
                continue
            open_groups.add(group.key)
            tasks = sum(
                1
                for t in _tasks(group, start)
                if t.variant.name not in self.state.broken
                and (t.variant.name, t.point.label, t.repeat) not in done
            )
            upcoming.append((self._etas.get(group.key), tasks))
        variants = [v for g in self.campaign.groups for v in g.variants]
        finished = [v for g in self.campaign.groups if g.key not in open_groups for v in g.variants]
        self.progress.standing(
            starts_done=position,
            starts_total=len(planned),
            variants_done=len(finished),
            variants_total=len(variants),
            left_s=self.time_left.estimate(upcoming),
        )

    def _startup_record(self, argv: list[str], env: dict[str, str]) -> StartupRecord | None:
        """The start's cold/warm evidence and ETA (servegate.startup); None if it fails."""
        try:
            record = StartupRecord.before(
                engine=self.campaign.engine, command=argv, env=env, via="campaign"
            )
        except Exception as exc:  # the start history must never cost a start
            self.progress.warning(f"startup record failed: {self.redactor.text(str(exc))}")
            return None
        for text in record.warnings:
            self.progress.warning(self.redactor.text(text))
        record.warnings.clear()
        return record

    def _finish_startup(self, record: StartupRecord | None, verdict: Verdict) -> None:
        """Count the start's time, and add it to the start history (once, at its verdict)."""
        self.time_left.started(verdict.elapsed_s)
        if record is None:
            return
        try:
            record.finish(self._redacted(verdict.to_json()), telemetry=startup_telemetry(verdict))
        except Exception as exc:  # the start history must never cost the campaign
            self.progress.warning(f"startup record failed: {self.redactor.text(str(exc))}")
            return
        for text in record.warnings:
            self.progress.warning(self.redactor.text(text))
        record.warnings.clear()

    # --- one server group ---------------------------------------------------------------

    def _group(
        self,
        cid: int,
        group: ServerGroup,
        tag: str,
        done: set[tuple[str, str, int]],
        *,
        start: int,
        names: str,
    ) -> None:
        """One start of ``group``: preflight, launch, benchmark what is not stored, stop."""
        todo = self._todo(group, start, done, tag=tag, names=names)
        if not todo:
            return
        campaign = self.campaign
        port = campaign.port if campaign.port is not None else _free_port()
        argv, env = group.render(port=port)
        report = self._preflight(port, env, lead=f"{tag} {names}", tag=tag)
        one = _Start(
            cid=cid,
            group=group,
            number=start,
            tag=tag,
            names=names,
            port=port,
            argv=argv,
            env=env,
            todo=todo,
            versions=self._versions(argv),
            commit=git_commit(Path(campaign.cwd) if campaign.cwd else None),
        )
        with self.interrupts.shielded():
            aid = self._start_attempt(one, one.owner)
        if not report.ok:
            self._start_failed(
                one,
                aid,
                status=AttemptStatus.FAILED,
                said=f"preflight failed: {report.reason()}",
                dead=f"its start {start} failed preflight",
            )
            return
        skipped = [c.name for c in report.checks if c.level is Level.SKIPPED]
        self.progress.info(
            f"{tag} {names}: preflight ok in {report.duration_s:.1f}s"
            + (f" (not checked: {', '.join(skipped)})" if skipped else "")
        )
        record = self._startup_record(argv, env)
        server = self._launch(one, aid, record)
        if server is None:
            return
        self._finish_startup(record, server.verdict)
        self._serve(aid, server, group=group, todo=todo, tag=tag, names=names)
        if owners_died := self._died_on:
            self.state.dead[group.key] = f"its server died during start {start} ({owners_died})"
            self._died_on = ""

    def _todo(
        self,
        group: ServerGroup,
        start: int,
        done: set[tuple[str, str, int]],
        *,
        tag: str,
        names: str,
    ) -> list[_Task]:
        """The measurements of this start not stored yet (``--resume``); says what is skipped."""
        tasks = [t for t in _tasks(group, start) if t.variant.name not in self.state.broken]
        todo = [t for t in tasks if (t.variant.name, t.point.label, t.repeat) not in done]
        self.state.skipped += len(tasks) - len(todo)
        if not todo:
            self.progress.info(f"{tag} {names}: all {len(tasks)} measurements stored; skipped")
        elif len(todo) < len(tasks):
            self.progress.info(
                f"{tag} {names}: {len(tasks) - len(todo)} of {len(tasks)} measurements "
                "already stored; measuring the rest"
            )
        return todo

    def _versions(self, argv: list[str]) -> dict[str, Any]:
        """Tool, engine and GPU versions recorded with each attempt of a start."""
        versions = {**tool_versions(), "engine": self.campaign.engine, **engine_versions(argv)}
        if self.gpu_idle:
            versions["gpus"] = [f"{g.index}: {g.name}" for g in self.gpu_idle]
        return versions

    def _preflight(self, port: int, env: dict[str, str], *, lead: str, tag: str) -> PreflightReport:
        """Check the machine before a start; warnings said, the report returned."""
        self.progress.activity(f"{lead}: preflight (port {port})")
        report = run_preflight(
            port=port,
            previous=self.state.previous,
            gpu=self.gpu,
            gpu_idle=self.gpu_idle,
            model=self.campaign.model,
            env=env,
            timeout_s=self.campaign.release_timeout_s,
            on_wait=lambda text: self.progress.activity(f"{lead}: preflight: {text}"),
        )
        for check in report.warnings:
            self.progress.warning(f"{tag} {check.message}")
        return report

    def _start_attempt(self, one: _Start, variant: str) -> int:
        """Record an attempt of ``variant`` on this start's server; its id."""
        return self.store.start_attempt(
            one.cid,
            variant=variant,
            server_key=one.group.key,
            command=self.redactor.command(one.argv),
            env=self.redactor.env(one.env),
            host=self.campaign.host,
            versions=one.versions,
            git_commit=one.commit,
            start=one.number,
        )

    def _launch(self, one: _Start, aid: int, record: StartupRecord | None) -> Server | None:
        """Launch and gate the start's server; None when it did not come up (recorded)."""
        campaign, lead = self.campaign, f"{one.tag} {one.names}"
        shown = " ".join(self.redactor.command(one.argv))
        self.progress.activity(f"{lead}: launching {shown}{_eta_note(record)}")

        def note(text: str) -> None:  # a silent server found busy: "slow, still working"
            self.progress.info(f"{lead}: {self.redactor.text(text)}")

        log_path = self.log_dir / f"{_slug(campaign.name)}-{aid}-{_slug(one.owner)}.log"
        log_path.parent.mkdir(parents=True, exist_ok=True)
        try:
            return launch(
                one.argv,
                engine=campaign.engine,
                port=one.port,
                timeout_s=campaign.timeout_s,
                stall_s=campaign.stall_s,
                env=one.env,
                cwd=campaign.cwd,
                log_path=str(log_path),
                name=_slug(f"{campaign.name}-{one.owner}"),
                keep=False,
                ready=campaign.ready,
                crash=campaign.crash,
                health_url=campaign.probe_url(port=one.port),
                on_note=note,
            )
        except GateError as exc:
            verdict = exc.verdict
            self._finish_startup(record, verdict)
            data = self._redacted(verdict.to_json())
            self._start_failed(
                one,
                aid,
                status=AttemptStatus(verdict.status),
                said=self.redactor.text(verdict.line()),
                dead=f"start {one.number}: {verdict.status.upper()}",
                verdict=data,
                snapshots=verdict.snapshots,
                tail=tuple(data["tail"][-10:]),
            )
            self.state.previous = ()
        except UsageError as exc:  # the port was taken between preflight and launch
            reason = f"could not launch: {self.redactor.text(str(exc))}"
            self._start_failed(
                one,
                aid,
                status=AttemptStatus.FAILED,
                said=reason,
                dead=f"start {one.number} could not be launched",
            )
        except Interrupted:
            self.interrupts.acknowledge()
            with self.interrupts.shielded():
                self.store.finish_attempt(
                    aid, AttemptStatus.INTERRUPTED, "interrupted while starting"
                )
            raise
        return None

    def _start_failed(
        self,
        one: _Start,
        aid: int,
        *,
        status: AttemptStatus,
        said: str,
        dead: str,
        verdict: dict[str, Any] | None = None,
        snapshots: Sequence[Snapshot] = (),
        tail: tuple[str, ...] = (),
    ) -> None:
        """A start that never served: its attempt closed with ``status``, and one attempt
        with the same record for each variant sharing its server; those variants failed
        with ``said``; the group is not started again (``dead`` says why).

        With a ``verdict`` (CRASH, TIMEOUT) the reason is the verdict's; without one it is
        ``said``."""
        reason = None if verdict is not None else said
        with self.interrupts.shielded():
            for name in (one.owner, *one.sharing):
                attempt = aid if name == one.owner else self._start_attempt(one, name)
                if verdict is not None:
                    self.store.record_verdict(attempt, verdict)
                    if attempt == aid:
                        self.store.record_telemetry(aid, snapshots)
                self.store.finish_attempt(attempt, status, reason)
        self._fail(one.group.variants, said)
        self.state.dead[one.group.key] = dead
        self.progress.failure(f"{one.tag} {one.names}: {said}", tail)

    def _serve(
        self,
        aid: int,
        server: Server,
        *,
        group: ServerGroup,
        todo: list[_Task],
        tag: str,
        names: str,
    ) -> None:
        """Benchmark a READY server, then stop it, whatever happens in between."""
        try:  # fatal lines from here on mean the server is dying
            self._ready_offset = os.path.getsize(server.log_path)
        except OSError:
            self._ready_offset = 0
        with self.interrupts.shielded():
            self.store.record_verdict(aid, self._redacted(server.verdict.to_json()))
            self.store.record_telemetry(aid, server.verdict.snapshots)
        self.progress.good(f"{tag} {names}: {server.verdict.line()} on {server.url}")
        status: AttemptStatus = AttemptStatus.DONE
        reason: str | None = None
        owners: tuple[str, ...] = ()
        began, measured = time.monotonic(), self.state.measured
        try:
            status, reason, owners = self._bench(aid, server, todo, tag)
            self.time_left.benched(time.monotonic() - began, self.state.measured - measured)
        except Interrupted:
            self.interrupts.acknowledge()
            status, reason = AttemptStatus.INTERRUPTED, "interrupted by the user"
            raise
        except BaseException as exc:
            status = AttemptStatus.FAILED
            reason = f"internal error while benchmarking: {exc!r}"
            raise
        finally:
            self.state.previous = process_tree(server.pid) if server.pid else ()
            self.progress.activity(f"{tag} {names}: stopping the server")
            stop = server.stop(grace_s=self.campaign.stop_grace_s)
            with self.interrupts.shielded():
                self.store.record_stop(aid, stop)
                self.store.finish_attempt(aid, status, reason, failed_variants=owners)
            port_note = "port free" if stop.port_free else "port STILL IN USE"
            self.progress.info(
                f"{tag} {names}: stopped in {stop.duration_s:.1f}s ({port_note}"
                + (f", killed {len(stop.killed)} process(es)" if stop.killed else "")
                + ")"
            )

    def _bench(
        self, aid: int, server: Server, todo: list[_Task], tag: str
    ) -> tuple[AttemptStatus, str | None, tuple[str, ...]]:
        """Measure each task; returns the attempt's final status, its reason and the
        variants a failure belongs to."""
        broken: set[str] = set()  # variants whose measurement cannot work on this server
        warmed: set[tuple[str, str]] = set()  # warmup: each point's first repeat per start
        for task in todo:
            name = task.variant.name
            if name in broken:
                continue
            self.interrupts.check()
            if not server.alive():
                return self._died(server, task, tag)
            repeats = task.variant.bench.repeats
            label = f"{name} {task.point.label} #{task.repeat % repeats + 1}/{repeats}"
            self.progress.activity(f"{tag} {label}: benchmarking")

            def counts(p: Progress, label: str = label) -> None:
                self.interrupts.check()  # a stop whose exception Python dropped
                failed = f", {p.failed} failed" if p.failed else ""
                eta = "" if p.eta_s is None else f", ETA {duration(p.eta_s)}"
                self.progress.counts(
                    f"{tag} {label}: {p.done}/{p.total or '?'} requests{failed}{eta}"
                )

            try:
                warm = (name, task.point.label) not in warmed
                warmed.add((name, task.point.label))
                result = run_point(
                    _settings(server.url, task, self.campaign.engine, warmup=warm),
                    progress=counts,
                )
            except BenchError as exc:
                if self._server_failed(server):
                    return self._died(server, task, tag)
                reason = f"could not benchmark: {self.redactor.text(str(exc))}"
                broken.add(name)
                self.state.broken.add(name)
                self._fail([task.variant], reason)
                self.progress.failure(f"{tag} {name}: {reason}")
                continue
            with self.interrupts.shielded():
                self.store.record_point(
                    aid, variant=name, load=task.point.label, repeat=task.repeat, result=result
                )
            self.state.measured += 1
            self._note_point(label, tag, task, result)
            if not server.alive() or (result.failed and self._server_failed(server)):
                return self._died(server, task, tag, measured=True)
        if broken:
            failed = f"could not benchmark {', '.join(sorted(broken))}"
            return AttemptStatus.FAILED, failed, tuple(broken)
        return AttemptStatus.DONE, None, ()

    def _note_point(self, label: str, tag: str, task: _Task, result: PointResult) -> None:
        total = result.completed + result.failed
        rate = result.failed / total if total else 0.0
        self.state.error_rates.append((task.variant.name, task.point.label, task.repeat, rate))
        summary = result.summary
        text = (
            f"{tag} {label}: {summary.get('output_throughput', float('nan')):.1f} tok/s, "
            f"TTFT p50 {summary.get('ttft_ms_p50', float('nan')):.1f} ms, "
            f"ITL p50 {summary.get('itl_ms_p50', float('nan')):.2f} ms"
        )
        if result.failed:
            kinds = ", ".join(f"{k} {v}" for k, v in sorted(result.failures.items()))
            self.progress.warning(f"{text}, {result.failed} of {total} requests failed ({kinds})")
        else:
            self.progress.good(text)
        for warning in result.warnings:
            # the same warning at every point of a variant is said once
            key = (task.variant.name, re.sub(r"[0-9][0-9.,]*", "#", warning))
            if key not in self.state.warned:
                self.state.warned.add(key)
                self.progress.warning(f"{tag} {label}: {warning}")

    def _server_failed(self, server: Server) -> bool:
        """Whether the server is dead or dying: after failed requests, look closer.

        A server whose engine process died may keep its HTTP process up for a moment
        (or for good: sglang#18421), so wait a little for it to exit, and read the log
        for a fatal line (the campaign's crash patterns or the engine's signatures).
        """
        log = Path(server.log_path)
        cause = classify(log, self.profile, crash=self.campaign.crash, start=self._ready_offset)
        if cause is not None:
            return True
        deadline = time.monotonic() + _DEATH_WAIT_S
        while time.monotonic() < deadline:
            if not server.alive():
                return True
            time.sleep(0.05)
        return False

    def _died(
        self, server: Server, task: _Task, tag: str, *, measured: bool = False
    ) -> tuple[AttemptStatus, str, tuple[str, ...]]:
        """The server died between or during points: record why, with its log tail."""
        tail = tuple(self.redactor.lines(log_tail(Path(server.log_path), TAIL_LINES)))
        when = "after" if measured else "before"
        log = Path(server.log_path)
        cause = classify(log, self.profile, crash=self.campaign.crash, start=self._ready_offset)
        reason = (
            f"server died during the benchmark ({when} {task.variant.name} {task.point.label} "
            f"repeat {task.repeat + 1})"
            + (f": {self.redactor.text(cause.summary())}" if cause else "")
            + ("\n" + "\n".join(tail) if tail else "")
        )
        self._fail([task.variant], reason.split("\n", 1)[0])
        self._died_on = task.variant.name
        self.progress.failure(f"{tag} {reason.splitlines()[0]}", tail[-10:])
        return AttemptStatus.FAILED, reason, (task.variant.name,)

    def _fail(self, variants: Any, reason: str) -> None:
        for variant in variants:
            self.state.failed.setdefault(variant.name, reason)

    def _redacted(self, verdict: dict[str, Any]) -> dict[str, Any]:
        data = dict(verdict)
        for key in ("reason", "matched_line", "hint"):
            if isinstance(data.get(key), str):
                data[key] = self.redactor.text(data[key])
        data["tail"] = self.redactor.lines(data.get("tail") or [])
        return data


# --- helpers -----------------------------------------------------------------------------


def _tasks(group: ServerGroup, start: int) -> Iterator[_Task]:
    """The measurements of one start of ``group`` (start 1, 2, ...)."""
    for variant in group.variants:
        repeats = variant.bench.repeats
        for point in variant.bench.points:
            for repeat in range(repeats):
                yield _Task(variant=variant, point=point, repeat=(start - 1) * repeats + repeat)


def _eta_note(record: StartupRecord | None) -> str:
    """`` (ETA 41s, warm, from 3 past starts)``; empty without history."""
    eta: Eta | None = None if record is None else record.eta
    if eta is None:
        return ""
    temp = {True: "cold, ", False: "warm, ", None: ""}[eta.cold]
    return f" (ETA {duration(eta.total_s)}, {temp}from {eta.based_on} past start(s))"


def _duration(seconds: float) -> str:
    """``90s``, ``12m``, ``1h30m``: a budget as one would write it."""
    whole = round(seconds)
    if whole < 120:
        return f"{whole}s"
    minutes = whole // 60
    return f"{minutes // 60}h{minutes % 60:02d}m" if minutes >= 60 else f"{minutes}m"


def _settings(url: str, task: _Task, engine: str, *, warmup: bool = True) -> BenchSettings:
    bench = task.variant.bench
    return BenchSettings(
        url=url,
        api=bench.api,  # type: ignore[arg-type]
        concurrency=task.point.concurrency,
        rate=task.point.rate,
        requests=None if bench.duration_s is not None else bench.requests,
        duration_s=bench.duration_s,
        warmup=bench.warmup if warmup else 0,
        input_len=bench.input_len,
        output_len=bench.output_len,
        dataset=bench.dataset,
        seed=bench.seed + task.repeat,
        engine=engine,
    )


def _redactor_for(campaign: Campaign) -> Redactor:
    envs, commands = [], []
    for variant in campaign.variants:
        argv, env = variant.render(port=0)
        envs.append(env)
        commands.append(argv)
    return Redactor.collect(envs=envs, commands=commands)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-")[:60] or "x"
