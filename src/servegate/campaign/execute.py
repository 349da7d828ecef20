"""One server start, executed: preflight -> launch -> gate -> benchmark -> stop.

Executing a start is kept apart from recording it: ``StartExecutor`` does the work on
the machine the server runs on and emits to a ``Sink`` an event for everything that
happens (campaign/events.py: an attempt opened, the verdict, each measured point, the
stop, failures, progress lines). The runner's ``Recorder`` is the sink that writes it
all to the store and the progress; on a Ray node or an SSH host the sink forwards each
event to the driver, which hands it to the same ``Recorder``, so the serial and the
cluster path run the same code.

    previous = StartExecutor(campaign, sink, interrupts, log_dir=...).run(spec)
"""

from __future__ import annotations

import os
import re
import socket
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from servegate.bench import BenchSettings, Progress, run_point
from servegate.campaign.capacity import (
    SearchOutcome,
    SearchState,
    bracket_words,
    probe_label,
)
from servegate.campaign.config import Campaign, LoadPoint, ServerGroup, Variant
from servegate.campaign.crash import TAIL_LINES, classify, log_tail
from servegate.campaign.events import (
    AttemptClosed,
    AttemptOpened,
    BenchTimed,
    CapacityFound,
    GroupDead,
    Placement,
    PointMeasured,
    Said,
    ServerStopped,
    Sink,
    StartTimed,
    Tone,
    VariantBroken,
    VariantsFailed,
    VerdictReached,
)
from servegate.campaign.gpu import GpuMemory, GpuMonitor
from servegate.campaign.interrupt import Interrupted, Interrupts
from servegate.campaign.preflight import Level, PreflightReport, ProcessRef, process_tree
from servegate.campaign.preflight import run_preflight as _run_preflight
from servegate.campaign.progress import duration
from servegate.campaign.provenance import engine_versions, git_commit, tool_versions
from servegate.engines import get_profile
from servegate.errors import BenchError, GateError, UsageError
from servegate.gate.options import GateOptions
from servegate.gate.verdict import Verdict
from servegate.launch import Server, launch
from servegate.launch.events import Hooks
from servegate.redact import Redactor
from servegate.startup import StartupRecord
from servegate.startup.eta import Eta
from servegate.startup.session import startup_telemetry
from servegate.store import AttemptStatus
from servegate.telemetry.model import Snapshot

__all__ = [
    "Placement",
    "Sink",
    "StartExecutor",
    "StartSpec",
    "Task",
    "redactor_for",
    "slug",
    "tasks_of",
]

_DEATH_WAIT_S = 1.0  # after failed requests: how long to wait for a dying server to exit


@dataclass(frozen=True, slots=True, kw_only=True)
class Task:
    """One measurement still to make."""

    variant: Variant
    point: LoadPoint
    repeat: int  # stored repeat number: (start - 1) * repeats + the repeat on this start


@dataclass(frozen=True, slots=True, kw_only=True)
class StartSpec:
    """One start to execute: which group, which start of it, what it still has to measure."""

    cid: int
    group: ServerGroup
    number: int  # which start of the group: 1, 2, ...
    tag: str  # its place in the run: "[3/8]"
    names: str  # the variants it serves, as the progress names them
    todo: tuple[Task, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class _Start:
    """A start being executed: its spec and what was decided for it on this machine."""

    spec: StartSpec
    names: str  # the spec's names with the placement: "fusion on 10.0.0.7/3fa2c1d0 (H200)"
    port: int
    argv: list[str]
    env: dict[str, str]
    versions: dict[str, Any]  # recorded with each of its attempts, as is
    commit: str | None  # the git commit of the server's working folder

    @property
    def owner(self) -> str:
        """The variant its attempt is recorded under: the first one with work to do."""
        return self.spec.todo[0].variant.name

    @property
    def sharing(self) -> list[str]:
        """The other variants measured on this server (they fail with it)."""
        return list(
            dict.fromkeys(t.variant.name for t in self.spec.todo if t.variant.name != self.owner)
        )

    @property
    def tag(self) -> str:
        return self.spec.tag

    @property
    def lead(self) -> str:
        return f"{self.spec.tag} {self.names}"


class StartExecutor:
    """Executes starts on this machine, one at a time, telling ``sink`` what happens."""

    def __init__(
        self,
        campaign: Campaign,
        sink: Sink,
        interrupts: Interrupts,
        *,
        log_dir: Path,
        gpu: GpuMonitor | None = None,
        gpu_idle: tuple[GpuMemory, ...] = (),
        placement: Placement | None = None,
        previous: tuple[ProcessRef, ...] = (),
    ) -> None:
        self.campaign = campaign
        self.sink = sink
        self.interrupts = interrupts
        self.log_dir = log_dir
        self.gpu = gpu
        self.gpu_idle = gpu_idle
        self.placement = placement or Placement()
        self.previous = previous  # the last server's processes: preflight waits for them
        self.redactor = redactor_for(campaign)
        self.profile = get_profile(campaign.engine)
        self._ready_offset = 0  # size of the current server's log when it became READY
        self._died_on = ""  # the variant whose benchmark the current server died in
        # find_max: the searches of this executor's starts, by (variant, start), kept
        # across a relaunch below a crash (retry_below_crash)
        self._searches: dict[tuple[str, int], SearchState] = {}
        self._retry: Task | None = None  # a search to continue on a new server

    def run(self, spec: StartSpec) -> tuple[ProcessRef, ...]:
        """Preflight, launch, benchmark ``spec.todo`` and stop; the server's processes
        (for the next start's preflight) are returned."""
        campaign = self.campaign
        port = campaign.port if campaign.port is not None else _free_port()
        argv, env = spec.group.render(port=port)
        names = spec.names + self.placement.where()
        report = self._preflight(port, env, lead=f"{spec.tag} {names}", tag=spec.tag)
        one = _Start(
            spec=spec,
            names=names,
            port=port,
            argv=argv,
            env=env,
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
                dead=f"its start {spec.number} failed preflight",
            )
            return self.previous
        skipped = [c.name for c in report.checks if c.level is Level.SKIPPED]
        self._say(
            Tone.INFO,
            f"{one.lead}: preflight ok in {report.duration_s:.1f}s"
            + (f" (not checked: {', '.join(skipped)})" if skipped else ""),
        )
        record = self._startup_record(argv, env)
        server = self._launch(one, aid, record)
        if server is None:
            return self.previous
        self._finish_startup(record, server.verdict)
        self._serve(aid, server, one)
        while (retry := self._retry) is not None:
            # retry_below_crash: the search goes on below the crash, on a new server
            self._retry = None
            again = replace(one, spec=replace(spec, todo=(retry,)))
            self._say(
                Tone.INFO,
                f"{one.lead}: starting a new server to search below the crash (retry_below_crash)",
            )
            report = self._preflight(port, env, lead=one.lead, tag=spec.tag)
            if not report.ok:
                self._say(Tone.FAILURE, f"{one.lead}: preflight failed: {report.reason()}")
                break
            with self.interrupts.shielded():
                aid = self._start_attempt(again, retry.variant.name)
            record = self._startup_record(argv, env)
            server = self._launch(again, aid, record)
            if server is None:
                break
            self._finish_startup(record, server.verdict)
            self._serve(aid, server, again)
        if owners_died := self._died_on:
            self.sink.emit(
                GroupDead(
                    group_key=spec.group.key,
                    why=f"its server died during start {spec.number} ({owners_died})",
                )
            )
            self._died_on = ""
        return self.previous

    # --- before the start --------------------------------------------------------------

    def _versions(self, argv: list[str]) -> dict[str, Any]:
        """Tool, engine and GPU versions recorded with each attempt of a start."""
        versions = {**tool_versions(), "engine": self.campaign.engine, **engine_versions(argv)}
        if self.gpu_idle:
            versions["gpus"] = [f"{g.index}: {g.name}" for g in self.gpu_idle]
        return versions

    def _preflight(self, port: int, env: dict[str, str], *, lead: str, tag: str) -> PreflightReport:
        """Check the machine before a start; warnings said, the report returned."""
        self._say(Tone.ACTIVITY, f"{lead}: preflight (port {port})")
        report = _run_preflight(
            port=port,
            previous=self.previous,
            gpu=self.gpu,
            gpu_idle=self.gpu_idle,
            model=self.campaign.model,
            env=env,
            timeout_s=self.campaign.release_timeout_s,
            on_wait=lambda text: self._say(Tone.ACTIVITY, f"{lead}: preflight: {text}"),
        )
        for check in report.warnings:
            self._say(Tone.WARNING, f"{tag} {check.message}")
        return report

    def _start_attempt(self, one: _Start, variant: str) -> int:
        """Record an attempt of ``variant`` on this start's server; its id."""
        return self.sink.open_attempt(
            AttemptOpened(
                variant=variant,
                server_key=one.spec.group.key,
                command=self.redactor.command(one.argv),
                env=self.redactor.env(one.env),
                versions=one.versions,
                commit=one.commit,
                start=one.spec.number,
                placement=self.placement,
            )
        )

    def _startup_record(self, argv: list[str], env: dict[str, str]) -> StartupRecord | None:
        """The start's cold/warm evidence and ETA (servegate.startup); None if it fails."""
        try:
            record = StartupRecord.before(
                engine=self.campaign.engine, command=argv, env=env, via="campaign"
            )
        except Exception as exc:  # the start history must never cost a start
            self._say(Tone.WARNING, f"startup record failed: {self.redactor.text(str(exc))}")
            return None
        for text in record.warnings:
            self._say(Tone.WARNING, self.redactor.text(text))
        record.warnings.clear()
        return record

    def _finish_startup(self, record: StartupRecord | None, verdict: Verdict) -> None:
        """Count the start's time, and add it to the start history (once, at its verdict)."""
        self.sink.emit(StartTimed(seconds=verdict.elapsed_s))
        if record is None:
            return
        try:
            record.finish(self._redacted(verdict.to_json()), telemetry=startup_telemetry(verdict))
        except Exception as exc:  # the start history must never cost the campaign
            self._say(Tone.WARNING, f"startup record failed: {self.redactor.text(str(exc))}")
            return
        for text in record.warnings:
            self._say(Tone.WARNING, self.redactor.text(text))
        record.warnings.clear()

    # --- the start ---------------------------------------------------------------------

    def _launch(self, one: _Start, aid: int, record: StartupRecord | None) -> Server | None:
        """Launch and gate the start's server; None when it did not come up (recorded)."""
        campaign, lead = self.campaign, one.lead
        shown = " ".join(self.redactor.command(one.argv))
        self._say(Tone.ACTIVITY, f"{lead}: launching {shown}{_eta_note(record)}")

        def note(text: str) -> None:  # a silent server found busy: "slow, still working"
            self._say(Tone.INFO, f"{lead}: {self.redactor.text(text)}")

        stem = f"{slug(campaign.name)}-{aid}-{slug(one.owner)}"
        if self.placement.node is not None:  # a node's attempt ids are its own: name the start
            where = slug(self.placement.node)
            stem = f"{slug(campaign.name)}-{slug(one.owner)}-start{one.spec.number}-{where}"
        log_path = self.log_dir / f"{stem}.log"
        log_path.parent.mkdir(parents=True, exist_ok=True)
        try:
            return launch(
                one.argv,
                options=GateOptions(
                    engine=campaign.engine,
                    port=one.port,
                    timeout_s=campaign.timeout_s,
                    stall_s=campaign.stall_s,
                    ready=tuple(campaign.ready),
                    crash=tuple(campaign.crash),
                    health_url=campaign.probe_url(port=one.port),
                ),
                observer=Hooks(on_note=note),
                env=one.env,
                cwd=campaign.cwd,
                log_path=str(log_path),
                name=slug(f"{campaign.name}-{one.owner}"),
                keep=False,
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
                dead=f"start {one.spec.number}: {verdict.status.upper()}",
                verdict=data,
                snapshots=verdict.snapshots,
                tail=tuple(data["tail"][-10:]),
            )
            self.previous = ()
        except UsageError as exc:  # the port was taken between preflight and launch
            reason = f"could not launch: {self.redactor.text(str(exc))}"
            self._start_failed(
                one,
                aid,
                status=AttemptStatus.FAILED,
                said=reason,
                dead=f"start {one.spec.number} could not be launched",
            )
        except Interrupted:
            self.interrupts.acknowledge()
            with self.interrupts.shielded():
                self.sink.emit(
                    AttemptClosed(
                        attempt=aid,
                        status=AttemptStatus.INTERRUPTED,
                        reason="interrupted while starting",
                    )
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
                    shared = snapshots if attempt == aid else ()
                    self.sink.emit(VerdictReached(attempt=attempt, data=verdict, snapshots=shared))
                self.sink.emit(AttemptClosed(attempt=attempt, status=status, reason=reason))
        self.sink.emit(
            VariantsFailed(names=tuple(v.name for v in one.spec.group.variants), reason=said)
        )
        self.sink.emit(GroupDead(group_key=one.spec.group.key, why=dead))
        self._say(Tone.FAILURE, f"{one.lead}: {said}", tail)

    def _serve(self, aid: int, server: Server, one: _Start) -> None:
        """Benchmark a READY server, then stop it, whatever happens in between."""
        try:  # fatal lines from here on mean the server is dying
            self._ready_offset = os.path.getsize(server.log_path)
        except OSError:
            self._ready_offset = 0
        with self.interrupts.shielded():
            self.sink.emit(
                VerdictReached(
                    attempt=aid,
                    data=self._redacted(server.verdict.to_json()),
                    snapshots=server.verdict.snapshots,
                )
            )
        self._say(Tone.GOOD, f"{one.lead}: {server.verdict.line()} on {server.url}")
        status: AttemptStatus = AttemptStatus.DONE
        reason: str | None = None
        owners: tuple[str, ...] = ()
        began, measured = time.monotonic(), 0
        try:
            status, reason, owners, measured = self._bench(aid, server, one)
            self.sink.emit(BenchTimed(seconds=time.monotonic() - began, tasks=measured))
        except Interrupted:
            self.interrupts.acknowledge()
            status, reason = AttemptStatus.INTERRUPTED, "interrupted by the user"
            raise
        except BaseException as exc:
            status = AttemptStatus.FAILED
            reason = f"internal error while benchmarking: {exc!r}"
            raise
        finally:
            self.previous = process_tree(server.pid) if server.pid else ()
            self._say(Tone.ACTIVITY, f"{one.lead}: stopping the server")
            stop = server.stop(grace_s=self.campaign.stop_grace_s)
            with self.interrupts.shielded():
                self.sink.emit(ServerStopped(attempt=aid, stop=stop))
                self.sink.emit(
                    AttemptClosed(attempt=aid, status=status, reason=reason, failed_variants=owners)
                )
            port_note = "port free" if stop.port_free else "port STILL IN USE"
            self._say(
                Tone.INFO,
                f"{one.lead}: stopped in {stop.duration_s:.1f}s ({port_note}"
                + (f", killed {len(stop.killed)} process(es)" if stop.killed else "")
                + ")",
            )

    def _bench(
        self, aid: int, server: Server, one: _Start
    ) -> tuple[AttemptStatus, str | None, tuple[str, ...], int]:
        """Measure each task; returns the attempt's final status, its reason, the
        variants a failure belongs to, and how many points were measured."""
        broken: set[str] = set()  # variants whose measurement cannot work on this server
        warmed: set[tuple[str, str]] = set()  # warmup: each point's first repeat per start
        measured = 0
        tag = one.tag
        for task in one.spec.todo:
            name = task.variant.name
            if name in broken:
                continue
            self.interrupts.check()
            if not server.alive():
                return (*self._died(server, task, tag), measured)
            repeats = task.variant.bench.repeats
            label = f"{name} {task.point.label} #{task.repeat % repeats + 1}/{repeats}"
            self._say(Tone.ACTIVITY, f"{tag} {label}: benchmarking")

            def counts(p: Progress, label: str = label) -> None:
                self.interrupts.check()  # a stop whose exception Python dropped
                failed = f", {p.failed} failed" if p.failed else ""
                eta = "" if p.eta_s is None else f", ETA {duration(p.eta_s)}"
                self._say(
                    Tone.COUNTS, f"{tag} {label}: {p.done}/{p.total or '?'} requests{failed}{eta}"
                )

            if task.variant.bench.search is not None:
                outcome = self._search(aid, server, one, task)
                measured += outcome.probes
                if outcome.broken is not None:
                    broken.add(name)
                    continue
                if outcome.crashed is not None:
                    # a crash at a load is the capacity's bound, not the variant's failure:
                    # the attempt measured what it could, its reason says where it crashed
                    return AttemptStatus.DONE, outcome.crashed, (), measured
                continue
            try:
                warm = (name, task.point.label) not in warmed
                warmed.add((name, task.point.label))
                result = run_point(
                    _settings(server.url, task, self.campaign.engine, warmup=warm),
                    progress=counts,
                    server_pids=server.pids,  # energy: read here, on the server's host
                )
            except BenchError as exc:
                if self._server_failed(server):
                    return (*self._died(server, task, tag), measured)
                reason = f"could not benchmark: {self.redactor.text(str(exc))}"
                broken.add(name)
                self.sink.emit(VariantBroken(name=name))
                self.sink.emit(VariantsFailed(names=(name,), reason=reason))
                self._say(Tone.FAILURE, f"{tag} {name}: {reason}")
                continue
            with self.interrupts.shielded():
                self.sink.emit(
                    PointMeasured(
                        attempt=aid,
                        variant=name,
                        load=task.point.label,
                        repeat=task.repeat,
                        result=result,
                        label=f"{tag} {label}",
                    )
                )
            measured += 1
            if not server.alive() or (result.failed and self._server_failed(server)):
                return (*self._died(server, task, tag, measured=True), measured)
        if broken:
            failed = f"could not benchmark {', '.join(sorted(broken))}"
            return AttemptStatus.FAILED, failed, tuple(broken), measured
        return AttemptStatus.DONE, None, (), measured

    def _search(self, aid: int, server: Server, one: _Start, task: Task) -> SearchOutcome:
        """One start's capacity search on ``server`` (find_max): probe after probe, each
        stored as a point; the capacity found stored with the attempt. A crash or a
        timeout while probing makes the load infeasible, with its kind and cause; the
        search then goes on below it on a new server only with retry_below_crash."""
        from servegate.bench import drain, probe_settings, read_probe

        name, tag = task.variant.name, one.tag
        plan = task.variant.bench.search
        assert plan is not None
        key = (name, one.spec.number)
        state = self._searches.get(key)
        if state is None:
            state = self._searches[key] = SearchState.begin(
                plan, targets=task.variant.bench.slo, attainment=task.variant.bench.attainment
            )
        options, search = state.options, state.search
        template = _settings(server.url, task, self.campaign.engine)
        measured = 0
        while (load := search.next_load()) is not None:
            self.interrupts.check()
            number = len(search.done) + 1
            label = probe_label(options.over, load)
            bracket = bracket_words(options.over, search.passes, search.fails)
            self._say(Tone.ACTIVITY, f"{tag} {name} probe {number}: {label} ({bracket})")
            settings = probe_settings(template, options, load, number)
            if number > 1 and not state.fresh:
                drain(settings)
            state.fresh = False

            def counts(p: Progress, text: str = f"{name} probe {number} {label}") -> None:
                self.interrupts.check()
                failed = f", {p.failed} failed" if p.failed else ""
                self._say(Tone.COUNTS, f"{tag} {text}: {p.done}/{p.total or '?'} requests{failed}")

            try:
                result = run_point(settings, progress=counts, server_pids=server.pids)
            except BenchError as exc:
                if not self._server_failed(server):
                    reason = f"could not benchmark: {self.redactor.text(str(exc))}"
                    self.sink.emit(VariantBroken(name=name))
                    self.sink.emit(VariantsFailed(names=(name,), reason=reason))
                    self._say(Tone.FAILURE, f"{tag} {name}: {reason}")
                    return SearchOutcome(probes=measured, broken=reason)
                result = None
            if result is not None:
                probe = read_probe(number, load, result, options)
                result = probe.result
                with self.interrupts.shielded():
                    self.sink.emit(
                        PointMeasured(
                            attempt=aid,
                            variant=name,
                            load=label,
                            repeat=task.repeat,
                            result=result,
                            label=f"{tag} {name} probe {number} {label}",
                        )
                    )
                measured += 1
            dead = (
                result is None
                or not server.alive()
                or (bool(result.failed) and self._server_failed(server))
            )
            if dead:
                crash = self._crash_at(server, options.over, load)
                search.record(load, False)
                state.crashes.append(crash)
                if result is not None:
                    state.probes.append(replace(probe, met=False))
                words = f"crashed at {label} while probing: {crash['cause'] or crash['status']}"
                self._say(Tone.WARNING, f"{tag} {name}: {words}")
                if plan.retry_below_crash and search.next_load() is not None:
                    self._retry = task
                    return SearchOutcome(probes=measured, crashed=words)
                self._found(aid, name, one.spec.number, state)
                return SearchOutcome(probes=measured, crashed=words)
            state.probes.append(probe)
            search.record(load, probe.met)
        self._found(aid, name, one.spec.number, state)
        return SearchOutcome(probes=measured)

    def _crash_at(self, server: Server, over: str, load: float) -> dict[str, Any]:
        """What ended the server during a probe: the load, its status, kind and cause."""
        log = Path(server.log_path)
        cause = classify(log, self.profile, crash=self.campaign.crash, start=self._ready_offset)
        deadline = time.monotonic() + _DEATH_WAIT_S
        while server.alive() and time.monotonic() < deadline:
            time.sleep(0.05)
        return {
            "load": load,
            "label": probe_label(over, load),
            "status": "crash" if cause is not None or not server.alive() else "timeout",
            "kind": None if cause is None else cause.kind,
            "cause": None if cause is None else self.redactor.text(cause.summary()),
        }

    def _found(self, aid: int, name: str, start: int, state: SearchState) -> None:
        """Fit the capacity of a finished search and store it with the attempt."""
        data = state.capacity()
        with self.interrupts.shielded():
            self.sink.emit(CapacityFound(attempt=aid, variant=name, start=start, data=data))
        self._say(Tone.GOOD, f"{name} start {start}: capacity {data['words']}")

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
        self, server: Server, task: Task, tag: str, *, measured: bool = False
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
        self.sink.emit(VariantsFailed(names=(task.variant.name,), reason=reason.split("\n", 1)[0]))
        self._died_on = task.variant.name
        self._say(Tone.FAILURE, f"{tag} {reason.splitlines()[0]}", tail[-10:])
        return AttemptStatus.FAILED, reason, (task.variant.name,)

    def _say(self, tone: Tone, text: str, tail: tuple[str, ...] = ()) -> None:
        self.sink.emit(Said(tone=tone, text=text, tail=tail))

    def _redacted(self, verdict: dict[str, Any]) -> dict[str, Any]:
        data = dict(verdict)
        for key in ("reason", "matched_line", "hint"):
            if isinstance(data.get(key), str):
                data[key] = self.redactor.text(data[key])
        data["tail"] = self.redactor.lines(data.get("tail") or [])
        return data


# --- helpers -----------------------------------------------------------------------------


def tasks_of(group: ServerGroup, start: int) -> Iterator[Task]:
    """The measurements of one start of ``group`` (start 1, 2, ...)."""
    for variant in group.variants:
        repeats = variant.bench.repeats
        for point in variant.bench.points:
            for repeat in range(repeats):
                yield Task(variant=variant, point=point, repeat=(start - 1) * repeats + repeat)


def _eta_note(record: StartupRecord | None) -> str:
    """`` (ETA 41s, warm, from 3 past starts)``; empty without history."""
    eta: Eta | None = None if record is None else record.eta
    if eta is None:
        return ""
    temp = {True: "cold, ", False: "warm, ", None: ""}[eta.cold]
    return f" (ETA {duration(eta.total_s)}, {temp}from {eta.based_on} past start(s))"


def _settings(url: str, task: Task, engine: str, *, warmup: bool = True) -> BenchSettings:
    bench = task.variant.bench
    return BenchSettings(
        url=url,
        api=bench.api,  # type: ignore[arg-type]
        concurrency=task.point.concurrency,
        rate=task.point.rate,
        burstiness=bench.burstiness,
        percentiles=bench.percentiles,
        cache=bench.cache,  # type: ignore[arg-type]
        tokenizer=bench.tokenizer,
        requests=None if bench.duration_s is not None else bench.requests,
        duration_s=bench.duration_s,
        warmup=bench.warmup if warmup else 0,
        input_len=bench.input_len,
        output_len=bench.output_len,
        dataset=bench.dataset,
        seed=bench.seed + task.repeat,
        # this start's repeat and this point: paired variants send the same text, and no
        # point resends another's (the prefix cache of a real engine would serve it)
        salt=(task.repeat, bench.points.index(task.point)),
        engine=engine,
        slo=bench.slo,
        attainment=bench.attainment,
        price_per_gpu_hour=bench.price_per_gpu_hour,
    )


def redactor_for(campaign: Campaign) -> Redactor:
    """The redactor of a campaign: its variants' secret env values and flag values."""
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


def slug(name: str) -> str:
    """``name`` as a file name part and a valid server name: letters, digits, ``.``,
    ``_`` and ``-``, beginning with a letter or digit (``.hidden`` is ``hidden``, never a
    hidden file, ``..`` or a name ``launch --name`` refuses)."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", name).lstrip("._-").rstrip("-")[:60] or "x"
