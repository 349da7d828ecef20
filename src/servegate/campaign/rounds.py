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

Executing a start (``campaign/execute.py``) is kept apart from recording it: the
``Recorder`` here, a consumer of the executor's events (``campaign/events.py``), is the
only writer of the store. On a Ray cluster (``[cluster] ray`` or
``RunOptions(ray=...)``, ``campaign/cluster.py``) the starts of a round run at once, one
Ray task each, and their events reach the same ``Recorder`` on the driver.

    with Store.open("servegate.db") as store, Interrupts() as interrupts:
        outcome = run_campaign(campaign, store, options=RunOptions(), progress=progress,
                               interrupts=interrupts)
"""

from __future__ import annotations

import math
import random
import re
import time
from collections.abc import Callable, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from servegate.campaign.config import Campaign, ServerGroup, check_programs
from servegate.campaign.events import (
    AttemptClosed,
    AttemptOpened,
    BenchTimed,
    CapacityFound,
    Event,
    GroupDead,
    PointMeasured,
    RoundBegan,
    Said,
    ServerStopped,
    Standing,
    StartTimed,
    VariantBroken,
    VariantsFailed,
    VerdictReached,
)
from servegate.campaign.execute import (
    StartExecutor,
    StartSpec,
    redactor_for,
    tasks_of,
)
from servegate.campaign.gpu import GpuMemory, GpuMonitor
from servegate.campaign.interrupt import Interrupted, Interrupts
from servegate.campaign.preflight import ProcessRef
from servegate.campaign.progress import CampaignProgress, TimeLeft
from servegate.errors import ServegateError, StoreError, UsageError
from servegate.remote import is_local
from servegate.startup.eta import estimate
from servegate.startup.history import History, config_key, gpu_model
from servegate.store import CampaignStatus, Store

__all__ = [
    "PrecisionOutcome",
    "Recorder",
    "RunOptions",
    "RunOutcome",
    "check_programs",
    "run_campaign",
    "start_order",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class RunOptions:
    """How to run a campaign (the ``servegate run`` flags)."""

    resume: bool = False
    ray: str | None = None  # a Ray cluster's address: run the starts there ([cluster] ray)
    max_failed_variants: int | None = None  # exit 1 when more variants than this fail
    max_error_rate: float | None = None  # exit 1 when a point's failed fraction is above
    log_dir: Path | None = None  # server logs; None: next to the database
    restarts: int | None = None  # starts per server configuration; None: the file's
    seed: int | None = None  # seed of the start order; None: the file's [bench] seed
    until_precision: float | None = None  # add rounds until every half-width is this
    max_starts: int | None = None  # ... or each configuration has had this many starts
    budget_s: float | None = None  # ... or another round would end past this (seconds)
    # on a cluster: told the variants of each start that ended, it gives the server
    # groups to start at once on the node that freed (a flag search's next trials)
    feed: Callable[[tuple[str, ...]], Sequence[ServerGroup]] | None = None


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
    status: CampaignStatus  # DONE, or INTERRUPTED (by a signal, a full disk)
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


class Recorder:
    """The events of executing a start, written down: the store, the run's bookkeeping
    and the progress. The only writer of the store, in the serial and the cluster path."""

    def __init__(
        self,
        store: Store,
        cid: int,
        *,
        campaign: Campaign,
        state: _State,
        progress: CampaignProgress,
        time_left: TimeLeft,
    ) -> None:
        self.store = store
        self.cid = cid
        self.campaign = campaign
        self.state = state
        self.progress = progress
        self.time_left = time_left

    def open_attempt(self, event: AttemptOpened) -> int:
        """Open an attempt of a variant on a start's server; its id in the store."""
        return self.store.start_attempt(
            self.cid,
            variant=event.variant,
            server_key=event.server_key,
            command=event.command,
            env=event.env,
            host=self.campaign.host,
            versions=event.versions,
            git_commit=event.commit,
            start=event.start,
            node=event.placement.node,
            gpu_model=event.placement.gpu_model,
        )

    def emit(self, event: Event) -> None:
        """One event of a start: to the store, the run's bookkeeping or the progress."""
        match event:
            case VerdictReached(attempt=aid, data=data, snapshots=snapshots):
                self.store.record_verdict(aid, data)
                if snapshots:
                    self.store.record_telemetry(aid, snapshots)
            case PointMeasured():
                self._point(event)
            case CapacityFound(attempt=aid, variant=variant, start=start, data=data):
                self.store.record_capacity(aid, variant=variant, start=start, data=data)
            case ServerStopped(attempt=aid, stop=stop):
                self.store.record_stop(aid, stop)
            case AttemptClosed(attempt=aid, status=status, reason=reason):
                self.store.finish_attempt(
                    aid, status, reason, failed_variants=event.failed_variants
                )
            case VariantsFailed(names=names, reason=reason):
                for name in names:  # the first reason is kept
                    self.state.failed.setdefault(name, reason)
            case GroupDead(group_key=key, why=why):
                self.state.dead[key] = why
            case VariantBroken(name=name):
                self.state.broken.add(name)
            case StartTimed(seconds=seconds):
                self.time_left.started(seconds)
            case BenchTimed(seconds=seconds, tasks=tasks):
                self.time_left.benched(seconds, tasks)
            case Said() | RoundBegan() | Standing():
                self.progress.emit(event)

    def _point(self, event: PointMeasured) -> None:
        """One measured point: stored, counted, and said with its warnings."""
        result, variant = event.result, event.variant
        self.store.record_point(
            event.attempt, variant=variant, load=event.load, repeat=event.repeat, result=result
        )
        self.state.measured += 1
        total = result.completed + result.failed
        rate = result.failed / total if total else 0.0
        self.state.error_rates.append((variant, event.load, event.repeat, rate))
        summary = result.summary
        text = (
            f"{event.label}: {summary.get('output_throughput', float('nan')):.1f} tok/s, "
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
            key = (variant, re.sub(r"[0-9][0-9.,]*", "#", warning))
            if key not in self.state.warned:
                self.state.warned.add(key)
                self.progress.warning(f"{event.label}: {warning}")


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
    cluster: StartPool | None = None,
) -> RunOutcome:
    """Run (or resume) ``campaign`` into ``store``; return what happened.

    With ``cluster`` (joined by the caller), or else a cluster address in ``options.ray``
    or the file's ``[cluster] ray`` (joined here, left at the end), each start runs on
    the Ray cluster. Raises only for internal errors and a cluster that cannot run the
    campaign; server crashes, timeouts, failed preflights and unreachable servers are
    recorded and the campaign goes on.
    """
    if options.until_precision is not None and any(v.bench.search for v in campaign.variants):
        raise UsageError(
            "--until-precision narrows the load points' intervals; a find_max campaign's "
            "answer is its capacity per start: set restarts (or --restarts) instead."
        )
    if is_local(campaign.host):  # a host's programs are checked there, at each start
        check_programs(campaign)
    return _Runner(campaign, store, options, progress, interrupts, cluster=cluster).run()


# told a start that ended, the starts to run next (each with its GPU model)
Refill = Callable[[StartSpec], Sequence[tuple[StartSpec, str | None]]]


class StartPool(Protocol):
    """Where a round's starts run at once, instead of one after another on this machine:
    a Ray cluster (``campaign.cluster.Cluster``) or an SSH host (``campaign.ssh.SshHost``)."""

    capacity: dict[str | None, int]  # servers it runs at once, by GPU model

    def describe(self) -> str:
        """One line: where the starts run."""
        ...

    def close(self) -> None:
        """Leave what was joined for the run."""
        ...

    def run_round(
        self,
        specs: Sequence[tuple[StartSpec, str | None]],
        recorder: Recorder,
        interrupts: Interrupts,
        *,
        log_dir: Path,
        done: Callable[[], set[tuple[str, str, int]]],
        refill: Refill | None = None,
    ) -> None:
        """Run the starts ``specs`` (each with its GPU model); every event of theirs goes to
        ``recorder``. ``refill``, told each start that ended (not one tried again), gives
        starts to run next, at once where the pool has room."""
        ...


class _Runner:
    def __init__(
        self,
        campaign: Campaign,
        store: Store,
        options: RunOptions,
        progress: CampaignProgress,
        interrupts: Interrupts,
        *,
        cluster: StartPool | None = None,
    ) -> None:
        self.campaign = campaign
        self.store = store
        self.options = options
        self.progress = progress
        self.interrupts = interrupts
        self.state = _State()
        self.redactor = redactor_for(campaign)
        self.log_dir = options.log_dir or Path(store.path).resolve().parent / (
            Path(store.path).stem + "-logs"
        )
        self.gpu: GpuMonitor | None = None
        self.gpu_idle: tuple[GpuMemory, ...] = ()
        self.time_left = TimeLeft()
        self.recorder: Recorder  # once the campaign is open
        self.cluster = cluster
        self._etas: dict[str, float | None] = {}  # group key -> start-up ETA from history

    # --- the campaign ------------------------------------------------------------------

    def run(self) -> RunOutcome:
        address = self.options.ray or self.campaign.ray
        joined = self.cluster is None and address is not None
        if joined:
            from servegate.campaign.cluster import connect

            assert address is not None
            self.cluster = connect(address, self.campaign)
        if self.cluster is not None:
            self.progress.info(self.cluster.describe())
        try:
            return self._claimed()
        finally:
            if joined and self.cluster is not None:
                self.cluster.close()

    def _claimed(self) -> RunOutcome:
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
        self.recorder = Recorder(
            store,
            cid,
            campaign=self.campaign,
            state=self.state,
            progress=self.progress,
            time_left=self.time_left,
        )
        done = store.done_points(cid) if self.options.resume else set()
        self.gpu = GpuMonitor.open() if self.cluster is None else None
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
            return self._outcome(cid, CampaignStatus.INTERRUPTED, exc.signum)
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
        return self._outcome(cid, CampaignStatus.DONE, None)

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

    def _outcome(self, cid: int, status: CampaignStatus, signum: int | None) -> RunOutcome:
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
            if self.cluster is not None:
                number = self._cluster_round(
                    cid, round_, order, number=number, restarts=restarts, done=done
                )
            else:
                number = self._serial_round(
                    cid, round_, order, number=number, restarts=restarts, planned=planned, done=done
                )
            if self.state.measured > measured:
                longest = max(longest, time.monotonic() - clock)
            round_ += 1

    def _names(self, group: ServerGroup, round_: int, restarts: int) -> str:
        """The variants of a start as the progress names them: ``a, b start 2/3``."""
        names = ", ".join(v.name for v in group.variants)
        if restarts > 1 or round_ > 1:
            names += f" start {round_}" + (f"/{restarts}" if round_ <= restarts else "")
        return names

    def _serial_round(
        self,
        cid: int,
        round_: int,
        order: list[int],
        *,
        number: int,
        restarts: int,
        planned: list[ServerGroup],
        done: set[tuple[str, str, int]],
    ) -> int:
        """One round of starts, one after the other on this machine; the last start's number."""
        groups = self.campaign.groups
        for index in order:
            number += 1
            group = groups[index]
            tag = f"[{number}/{len(groups) * restarts}]" if round_ <= restarts else f"[{number}]"
            self.interrupts.check()
            names = self._names(group, round_, restarts)
            why = self.state.dead.get(group.key)
            if why is not None:
                self.progress.info(f"{tag} {names}: not started ({why})")
                continue
            if round_ <= restarts:
                self._standing(planned, number - 1, done)
            self._group(cid, group, tag, done, start=round_, names=names)
        return number

    def _cluster_round(
        self,
        cid: int,
        round_: int,
        order: list[int],
        *,
        number: int,
        restarts: int,
        done: set[tuple[str, str, int]],
    ) -> int:
        """One round of starts, all at once on the Ray cluster; the last start's number.

        With several GPU models the variants' servers are spread over them and the
        baseline's server is started on every model used (as starts of its own)."""
        assert self.cluster is not None
        items = _placed(self.campaign, order, round_, self.cluster.capacity)
        total = len(_placed(self.campaign, order, 1, self.cluster.capacity)) * restarts
        specs: list[tuple[StartSpec, str | None]] = []
        for group, start, model in items:
            number += 1
            tag = f"[{number}/{total}]" if round_ <= restarts else f"[{number}]"
            names = self._names(group, round_, restarts)
            if start != round_:
                names = ", ".join(v.name for v in group.variants) + f" start {start}"
            why = self.state.dead.get(group.key)
            if why is not None:
                self.progress.info(f"{tag} {names}: not started ({why})")
                continue
            spec = self.spec(cid, group, tag, done, start=start, names=names)
            if spec is not None:
                specs.append((spec, model))
        self.interrupts.check()
        feed = self.options.feed
        fed = 0

        def refill(ended: StartSpec) -> list[tuple[StartSpec, str | None]]:
            """The feed's next groups, each started once, on the ended start's model."""
            nonlocal fed
            assert feed is not None
            model = next((m for s, m in specs if s.group.key == ended.group.key), None)
            out: list[tuple[StartSpec, str | None]] = []
            for group in feed(tuple(v.name for v in ended.group.variants)):
                fed += 1
                names = ", ".join(v.name for v in group.variants)
                spec = self.spec(cid, group, f"[{number + fed}]", done, start=1, names=names)
                if spec is not None:
                    out.append((spec, model))
            specs.extend(out)
            return out

        if specs:
            tasks = sum(len(spec.todo) for spec, _ in specs)
            self.recorder.emit(RoundBegan(round=round_, starts=len(specs), measurements=tasks))
            self.cluster.run_round(
                list(specs),
                self.recorder,
                self.interrupts,
                log_dir=self.log_dir,
                done=lambda: self.store.done_points(cid),
                refill=refill if feed is not None else None,
            )
        return number + fed

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
                for t in tasks_of(group, start)
                if t.variant.name not in self.state.broken
                and (t.variant.name, t.point.label, t.repeat) not in done
            )
            upcoming.append((self._etas.get(group.key), tasks))
        variants = [v for g in self.campaign.groups for v in g.variants]
        finished = [v for g in self.campaign.groups if g.key not in open_groups for v in g.variants]
        self.recorder.emit(
            Standing(
                starts_done=position,
                starts_total=len(planned),
                variants_done=len(finished),
                variants_total=len(variants),
                left_s=self.time_left.estimate(upcoming),
            )
        )

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
        spec = self.spec(cid, group, tag, done, start=start, names=names)
        if spec is None:
            return
        executor = StartExecutor(
            self.campaign,
            self.recorder,
            self.interrupts,
            log_dir=self.log_dir,
            gpu=self.gpu,
            gpu_idle=self.gpu_idle,
            previous=self.state.previous,
        )
        self.state.previous = executor.run(spec)

    def spec(
        self,
        cid: int,
        group: ServerGroup,
        tag: str,
        done: set[tuple[str, str, int]],
        *,
        start: int,
        names: str,
    ) -> StartSpec | None:
        """Start ``start`` of ``group`` with the measurements not stored yet (``--resume``),
        saying what is skipped; None when there is nothing left to measure."""
        tasks = [t for t in tasks_of(group, start) if t.variant.name not in self.state.broken]
        todo = [t for t in tasks if (t.variant.name, t.point.label, t.repeat) not in done]
        self.state.skipped += len(tasks) - len(todo)
        if not todo:
            self.progress.info(f"{tag} {names}: all {len(tasks)} measurements stored; skipped")
            return None
        if len(todo) < len(tasks):
            self.progress.info(
                f"{tag} {names}: {len(tasks) - len(todo)} of {len(tasks)} measurements "
                "already stored; measuring the rest"
            )
        return StartSpec(cid=cid, group=group, number=start, tag=tag, names=names, todo=tuple(todo))


# --- helpers -------------------------------------------------------------------------------------


def _duration(seconds: float) -> str:
    """``90s``, ``12m``, ``1h30m``: a budget as one would write it."""
    whole = round(seconds)
    if whole < 120:
        return f"{whole}s"
    minutes = whole // 60
    return f"{minutes // 60}h{minutes % 60:02d}m" if minutes >= 60 else f"{minutes}m"


def _placed(
    campaign: Campaign, order: list[int], round_: int, capacity: dict[str | None, int]
) -> list[tuple[ServerGroup, int, str | None]]:
    """The starts of round ``round_`` on a cluster: (group, start number, GPU model).

    One GPU model (or none): each group once, as start ``round_``. Several (``capacity``:
    the nodes of each model that can hold a server): the other groups are spread over
    the models in proportion to their nodes (in the file's order, the same every round),
    and the baseline's group is started once on each model they use, its starts
    numbered on from round to round."""
    groups = campaign.groups
    models = list(capacity)
    if len(models) <= 1:
        return [(groups[i], round_, models[0] if models else None) for i in order]
    base = next(
        (i for i, g in enumerate(groups) if any(v.name == campaign.baseline for v in g.variants)),
        None,
    )  # None: the baseline is not run (a search's trials, added to the campaign later)
    taken = dict.fromkeys(models, 1 if base is not None else 0)  # the baseline's start on each
    model_of: dict[int, str | None] = {}
    for index in (i for i in range(len(groups)) if i != base):
        model = min(models, key=lambda m: ((taken[m] + 1) / capacity[m], models.index(m)))
        model_of[index] = model
        taken[model] += 1
    used = [m for m in models if m in model_of.values()] or [models[0]]
    out: list[tuple[ServerGroup, int, str | None]] = []
    for index in order:
        if index != base:
            out.append((groups[index], round_, model_of[index]))
            continue
        for n, model in enumerate(used):
            out.append((groups[index], (round_ - 1) * len(used) + n + 1, model))
    return out
