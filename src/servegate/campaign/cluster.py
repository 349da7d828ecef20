"""Campaigns on a Ray cluster: each server start runs as a Ray task on a node.

``servegate run FILE --ray ADDRESS`` (or ``[cluster] ray = "ADDRESS"``) runs each round
of starts in parallel: every start (preflight, launch, gate, benchmark, stop) is a Ray
task asking for ``[server] gpus`` GPUs and the ``[server] resources``, executed on the
node by the same ``StartExecutor`` as a local start. The node's sink forwards every
event (attempt opened, verdict, point with its raw samples, telemetry, stop, progress)
as a frame of the node protocol (``campaign.node``) to a mailbox actor on the driver's
node; the driver hands each event to the runner's ``Recorder``, so the driver stays the
only writer of the store.

servegate must be installed on every node (the same version as the driver's: checked
before anything starts, one small task per node). A node's GPU model is its Ray
``accelerator_type:MODEL`` resource (set by Ray on GPU nodes). When the cluster has
several GPU models, the variants' starts are spread over them and the baseline is
started on every model used, so that each variant has a baseline measured on its own
GPU model. A node lost during a start marks that start's attempts ``lost`` and the start
is tried once more on another node, for the measurements it had not sent yet. Ctrl-C
or SIGTERM cancels every task: each node stops its server (the keeper kills the server
if the task's worker dies), and the attempts are recorded as interrupted.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import logging
import os
import select
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from contextlib import suppress
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from servegate._version import __version__
from servegate.campaign.config import Campaign, ServerGroup
from servegate.campaign.events import (
    AttemptClosed,
    GroupDead,
    Placement,
    Said,
    Tone,
    VariantsFailed,
)
from servegate.campaign.execute import StartSpec
from servegate.campaign.interrupt import Interrupted, Interrupts
from servegate.campaign.node import (
    FRAMES,
    End,
    FrameError,
    NodeJob,
    Opened,
    decode,
    encode,
)
from servegate.errors import ServegateError, UsageError
from servegate.store import AttemptStatus

if TYPE_CHECKING:
    from servegate.campaign.rounds import Recorder, Refill

__all__ = ["Cluster", "Flight", "Item", "NodeInfo", "connect", "replay"]

_MODEL_PREFIX = "accelerator_type:"
_PIN = 0.001  # the share of a node's accelerator_type resource that pins a start to it
_POLL_S = 0.1  # how often the driver collects what the nodes sent
_STANDING_S = 30.0  # how often the driver says which starts run where, in which phase
_STOP_POLL_S = 0.5  # how often a node's task asks whether the driver wants it to stop
_CONNECT_S = 5.0  # how long the address may take to accept a TCP connection and answer
# HTTP/2's client preface and an empty SETTINGS frame: a gRPC server (a GCS) answers
# with a SETTINGS frame (type 4) of its own
_H2_HELLO = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"
_H2_SETTINGS = 4
_CANCEL_WAIT_S = 30.0  # after Ctrl-C: how long the nodes get to stop their servers


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeInfo:
    """One alive node of the cluster."""

    node_id: str
    name: str  # "10.0.0.7/3fa2c1d0": its address and the start of its Ray node id
    gpu_model: str | None  # its accelerator_type resource; None: no GPU model declared
    resources: dict[str, float]

    def fits(self, demand: dict[str, float]) -> bool:
        """Whether the node has (in total) what one start asks for."""
        return all(self.resources.get(k, 0.0) >= v for k, v in demand.items())


@dataclass(frozen=True, slots=True, kw_only=True)
class Item:
    """One start of a round: its group, number, tag and progress name."""

    group: ServerGroup
    start: int
    tag: str
    names: str
    model: str | None = None  # the GPU model it is pinned to; None: any node that fits


@dataclass(kw_only=True)
class Flight:
    """A start submitted to the cluster, as the driver follows it."""

    spec: StartSpec
    model: str | None
    token: int  # names the submission in what its node sends
    tries: int = 1
    aids: dict[int, int] = field(default_factory=dict)  # the node's attempt id -> the store's
    open: set[int] = field(default_factory=set)  # store attempt ids not finished yet
    node: str | None = None
    phase: str = "queued"
    code: int | None = None  # the exit status of the start's process on the node, at its end


def _ray() -> Any:
    """The ``ray`` module; UsageError naming the extra when it is not installed."""
    try:
        import ray
    except ImportError:
        raise UsageError(
            "running on a Ray cluster needs Ray: install it with pip install 'servegate[ray]'."
        ) from None
    return ray


def demand_of(campaign: Campaign) -> dict[str, float]:
    """What one start asks a node for: its GPUs and custom resources (a CPU without either)."""
    demand = dict(campaign.resources)
    if campaign.gpus:
        demand["GPU"] = float(campaign.gpus)
    if not demand:
        demand["CPU"] = 1.0
    return demand


def connect(address: str, campaign: Campaign) -> Cluster:
    """Join the Ray cluster at ``address`` and check it can run ``campaign``.

    Raises UsageError when Ray is missing, the cluster cannot be reached, no node has
    what a start asks for, or a node has another servegate (or none) installed.
    """
    where = _check_address(address)
    if importlib.util.find_spec("ray") is None:  # before the address: nothing to reach it with
        _ray()
    if where is not None:
        _reachable(address, where)
    ray = _ray()
    owned = not ray.is_initialized()
    if owned:
        # Ray installs handlers of its own; the runner's (Ctrl-C stops cleanly) stay
        handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            ray.init(
                address=address,
                logging_level=logging.WARNING,
                log_to_driver=False,
                configure_logging=True,
            )
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise UsageError(
                f"cannot join the Ray cluster at {address}: {str(exc).splitlines()[0]}; "
                "start it (ray start --head) or fix --ray / [cluster] ray."
            ) from None
        finally:
            for sig, handler in handlers.items():
                if handler is not None:
                    signal.signal(sig, handler)
    try:
        cluster = Cluster(ray, address, campaign, owned=owned)
        cluster.check()
    except BaseException:
        if owned:
            ray.shutdown()
        raise
    return cluster


def _check_address(address: str) -> tuple[str, int] | None:
    """The (host, port) of a GCS address, None for ``auto``; UsageError for a Ray Client
    address (``ray://``: the driver must run on a node) or one that is neither."""
    if address == "auto" or address.startswith("local"):
        return None
    if address.startswith("ray://"):
        raise UsageError(
            f"--ray {address}: Ray Client addresses are not supported; run servegate on a "
            "node of the cluster (the head, say) with --ray auto or --ray HOST:6379."
        )
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise UsageError(
            f"--ray {address}: give the cluster's address as HOST:PORT (its GCS, port 6379 by "
            "default) or auto."
        )
    return host.strip("[]"), int(port)


def _reachable(address: str, where: tuple[str, int]) -> None:
    """Refuse at once an address nothing listens on, or where what answers is not a gRPC
    server (Ray's GCS speaks gRPC, over HTTP/2): Ray itself would retry for minutes,
    printing a warning every few seconds, before it gives up."""
    deadline = time.monotonic() + _CONNECT_S
    try:
        with socket.create_connection(where, timeout=_CONNECT_S) as sock:
            sock.sendall(_H2_HELLO)
            head = b""
            while len(head) < 9:  # the server's first frame header, within the deadline
                sock.settimeout(max(0.001, deadline - time.monotonic()))
                more = sock.recv(9 - len(head))
                if not more:
                    break
                head += more
    except TimeoutError:
        said = f"accepts connections but sent nothing in {_CONNECT_S:g} s"
    except OSError as exc:
        raise UsageError(
            f"cannot reach the Ray cluster at {address} ({exc.strerror or exc}); start it "
            "(ray start --head) or fix --ray / [cluster] ray."
        ) from None
    else:
        if len(head) == 9 and head[3] == _H2_SETTINGS:
            return
        said = "answers, but not as a gRPC server"
    raise UsageError(
        f"--ray {address} is not a Ray cluster's GCS: something there {said}; give the "
        "head's address (ray start --head prints it; port 6379 by default) to --ray or "
        "[cluster] ray."
    )


class Cluster:
    """The driver's side of a campaign on a Ray cluster."""

    def __init__(self, ray: Any, address: str, campaign: Campaign, *, owned: bool) -> None:
        self.ray = ray
        self.address = address
        self.campaign = campaign
        self.owned = owned
        self.demand = demand_of(campaign)
        self.nodes = _nodes(ray)
        fitting = [n for n in self.nodes if n.fits(self.demand)]
        self.models: tuple[str | None, ...] = tuple(
            sorted({n.gpu_model for n in fitting}, key=lambda m: (m is None, m or ""))
        )
        # nodes that can hold a server, by GPU model: the starts are spread in proportion
        self.capacity = {m: sum(n.gpu_model == m for n in fitting) for m in self.models}
        me = ray.get_runtime_context().get_node_id()
        self.driver_node = next((n.name for n in self.nodes if n.node_id == me), me[:8])
        self._mailbox = (
            ray.remote(num_cpus=0)(Mailbox).options(scheduling_strategy=self._on(me)).remote()
        )
        self._tokens = 0
        self._interrupts: Interrupts | None = None

    def close(self) -> None:
        """End the mailbox; leave the cluster (when this process joined it)."""
        with suppress(Exception):  # a cluster already gone took the actor with it
            self.ray.kill(self._mailbox)
        if self.owned:
            self.ray.shutdown()

    def _on(self, node_id: str) -> Any:
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        return NodeAffinitySchedulingStrategy(node_id=node_id, soft=False)

    def check(self) -> None:
        """Refuse a cluster that cannot run the campaign, before anything starts."""
        asked = ", ".join(f"{k}={v:g}" for k, v in sorted(self.demand.items()))
        if not any(n.fits(self.demand) for n in self.nodes):
            raise UsageError(
                f"no node of the Ray cluster at {self.address} has what one server asks for "
                f"({asked}); lower [server] gpus / resources or add such a node."
            )
        # the nodes a start may run on (the driver's runs servegate already)
        fitting = [n for n in self.nodes if n.fits(self.demand)]
        probe = self.ray.remote(num_cpus=0, max_retries=0)(_node_version)
        refs = [probe.options(scheduling_strategy=self._on(n.node_id)).remote() for n in fitting]
        for node, ref in zip(fitting, refs, strict=True):
            try:
                version = self.ray.get(ref, timeout=120)
            except Exception as exc:
                raise UsageError(
                    f"node {node.name} of the Ray cluster cannot run servegate "
                    f"({type(exc).__name__}); install servegate {__version__} on every node."
                ) from None
            if version != __version__:
                raise UsageError(
                    f"node {node.name} has servegate {version}, this driver {__version__}; "
                    "install the same version on every node."
                )

    def describe(self) -> str:
        """One line: the nodes that fit, by GPU model."""
        fitting = [n for n in self.nodes if n.fits(self.demand)]
        by_model = ", ".join(
            f"{sum(n.gpu_model == m for n in fitting)} x {m or 'no GPU model'}" for m in self.models
        )
        asked = ", ".join(f"{k}={v:g}" for k, v in sorted(self.demand.items()))
        return (
            f"Ray cluster at {self.address}: {len(self.nodes)} node(s), {len(fitting)} fit a "
            f"server ({asked}): {by_model}; the driver is on {self.driver_node}"
        )

    # --- a round of starts ---------------------------------------------------------------

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
        """Run the starts ``specs`` (each with the GPU model it is pinned to) in parallel;
        every call of the nodes goes to ``recorder``. A start whose node is lost is tried
        once more; ``done`` gives the measurements stored by then. ``refill``, told each
        start that ended, gives starts to submit at once (the node it freed takes one)."""
        self._interrupts = interrupts
        flights: dict[Any, Flight] = {}

        def submit(more: Iterable[tuple[StartSpec, str | None]]) -> None:
            for spec, model in more:
                ref, token = self._submit(spec, model, log_dir)
                flights[ref] = Flight(spec=spec, model=model, token=token)
                recorder.emit(
                    _said(
                        Tone.INFO,
                        f"{spec.tag} {spec.names}: queued for a node with {self._asked(model)}",
                    )
                )

        submit(specs)
        said = time.monotonic()
        try:
            while flights:
                interrupts.check()
                self._collect(flights, recorder)
                ready, _ = self.ray.wait(list(flights), num_returns=1, timeout=_POLL_S)
                for ref in ready:
                    spec = flights[ref].spec
                    self._landed(ref, flights, recorder, log_dir=log_dir, done=done)
                    again = any(f.spec.group.key == spec.group.key for f in flights.values())
                    if refill is not None and not again:
                        submit(refill(spec))
                if flights and (ready or time.monotonic() - said >= _STANDING_S):
                    said = time.monotonic()
                    recorder.emit(_said(Tone.INFO, _standing(flights.values())))
        except KeyboardInterrupt as exc:  # Ray's waits turn the runner's Interrupted into this
            if interrupts.signum is None:  # not ours: still, no server is left behind
                with suppress(Exception):
                    self._cancel(flights, recorder, interrupts)
                raise
            interrupts.acknowledge()
            self._cancel(flights, recorder, interrupts)
            if isinstance(exc, Interrupted):
                raise
            raise Interrupted(interrupts.signum) from None
        except BaseException:  # an internal error: the other starts stop their servers too
            with suppress(Exception):
                self._cancel(flights, recorder, interrupts)
            raise

    def _asked(self, model: str | None) -> str:
        parts = [f"{v:g} {k}" for k, v in sorted(self.demand.items())]
        return ", ".join(parts) + (f" ({model})" if model else "")

    def _submit(self, spec: StartSpec, model: str | None, log_dir: Path) -> tuple[Any, int]:
        """Submit one start; its object ref and token."""
        resources = {k: v for k, v in self.demand.items() if k not in ("CPU", "GPU")}
        if model is not None and len(self.models) > 1:
            resources[_MODEL_PREFIX + model] = _PIN
        task = self.ray.remote(_execute).options(
            num_gpus=self.demand.get("GPU", 0.0),
            num_cpus=self.demand.get("CPU", 0.0),
            resources=resources,
            max_retries=0,
            retry_exceptions=False,
        )
        names = {n.node_id: (n.name, n.gpu_model) for n in self.nodes}
        self._tokens += 1
        ref = task.remote(
            self.campaign,
            spec,
            mailbox=self._mailbox,
            token=self._tokens,
            log_dir=str(log_dir),
            names=names,
        )
        return ref, self._tokens

    def _collect(self, flights: dict[Any, Flight], recorder: Recorder) -> None:
        """Hand every call the nodes sent to the recorder, in the order each node sent them."""
        by_token = {f.token: f for f in flights.values()}
        assert self._interrupts is not None
        with self._interrupts.shielded():  # a call replayed whole, or not at all
            for token, frame in self.ray.get(self._mailbox.take.remote()):
                flight = by_token.get(token)
                if flight is None:  # a start already given up (lost, then its late words)
                    continue
                replay(flight, decode(frame, FRAMES), recorder)

    def _landed(
        self,
        ref: Any,
        flights: dict[Any, Flight],
        recorder: Recorder,
        *,
        log_dir: Path,
        done: Callable[[], set[tuple[str, str, int]]],
    ) -> None:
        """A task ended: its last calls recorded; a lost node's start tried once more."""
        flight = flights[ref]
        try:
            self.ray.get(ref)
        except self.ray.exceptions.RayTaskError as exc:  # servegate itself failed on the node
            self._collect(flights, recorder)
            del flights[ref]
            for aid in sorted(flight.open):
                recorder.emit(
                    _closed(aid, AttemptStatus.FAILED, f"internal error on the node: {exc}")
                )
            raise ServegateError(
                f"{flight.spec.tag} {flight.spec.names}: servegate failed on node "
                f"{flight.node or '?'}: {str(exc).splitlines()[0]}"
            ) from None
        except self.ray.exceptions.RayError as exc:  # the node (or its worker) was lost
            self._collect(flights, recorder)
            del flights[ref]
            self._lost(flight, exc, recorder, flights, log_dir=log_dir, done=done)
            return
        self._collect(flights, recorder)
        del flights[ref]
        if flight.code:  # servegate itself failed on the node (its traceback: the Ray log)
            for aid in sorted(flight.open):
                recorder.emit(_closed(aid, AttemptStatus.FAILED, "internal error on the node"))
            raise ServegateError(
                f"{flight.spec.tag} {flight.spec.names}: servegate failed on node "
                f"{flight.node or '?'} (exit status {flight.code}); its traceback is in the "
                "node's Ray worker log."
            )

    def _lost(
        self,
        flight: Flight,
        exc: BaseException,
        recorder: Recorder,
        flights: dict[Any, Flight],
        *,
        log_dir: Path,
        done: Callable[[], set[tuple[str, str, int]]],
    ) -> None:
        spec = flight.spec
        where = flight.node or "its node"
        why = type(exc).__name__
        again = flight.tries < 2
        reason = f"node {where} was lost during this start ({why})" + (
            "; tried again on another node" if again else ""
        )
        for aid in sorted(flight.open):
            recorder.emit(_closed(aid, AttemptStatus.LOST, reason))
        stored = done()
        todo = tuple(
            t for t in spec.todo if (t.variant.name, t.point.label, t.repeat) not in stored
        )
        if not todo:
            recorder.emit(
                _said(
                    Tone.WARNING, f"{spec.tag} {spec.names}: {reason}; every measurement was stored"
                )
            )
            return
        if not again:
            said = f"lost twice: node {where} was lost ({why})"
            recorder.emit(_failed(tuple(v.name for v in spec.group.variants), said))
            recorder.emit(_dead(spec.group.key, f"its start {spec.number} was lost twice"))
            recorder.emit(_said(Tone.FAILURE, f"{spec.tag} {spec.names}: {said}"))
            return
        recorder.emit(
            _said(
                Tone.WARNING,
                f"{spec.tag} {spec.names}: {reason}; {len(todo)} measurement(s) left, retrying",
            )
        )
        retry = replace(spec, todo=todo)
        ref, token = self._submit(retry, flight.model, log_dir)
        flights[ref] = Flight(spec=retry, model=flight.model, token=token, tries=flight.tries + 1)

    def _cancel(
        self, flights: dict[Any, Flight], recorder: Recorder, interrupts: Interrupts
    ) -> None:
        """Ctrl-C: every node stops its server; what they send meanwhile is recorded."""
        with interrupts.shielded():
            recorder.emit(_said(Tone.INFO, f"stopping {len(flights)} start(s) on the cluster"))
            self.ray.get(self._mailbox.stop.remote())
            deadline = time.monotonic() + self.campaign.stop_grace_s + _CANCEL_WAIT_S
            while flights and time.monotonic() < deadline:
                self._collect(flights, recorder)
                ready, _ = self.ray.wait(list(flights), num_returns=len(flights), timeout=0.2)
                for ref in ready:
                    self._collect(flights, recorder)
                    del flights[ref]
            for ref in flights:  # the keeper kills a server whose worker dies
                self.ray.cancel(ref, force=True)
            for flight in flights.values():
                for aid in sorted(flight.open):
                    recorder.emit(
                        _closed(aid, AttemptStatus.INTERRUPTED, "interrupted by the user")
                    )
            # closed by the nodes themselves, or just now
            self._collect(flights, recorder)


def replay(flight: Flight, frame: object, recorder: Recorder) -> None:
    """One frame of a node (``campaign.node.FRAMES``), handed to the recorder with its
    attempt id translated into the store's; FrameError for an attempt never opened."""
    match frame:
        case Opened(local=local, details=event):
            aid = recorder.open_attempt(event)
            flight.aids[local] = aid
            flight.open.add(aid)
            flight.node = event.placement.node
            return
        case End(code=code):
            flight.code = code
            return
    node_aid = getattr(frame, "attempt", None)
    if node_aid is not None:
        if node_aid not in flight.aids:
            raise FrameError(f"an event of attempt {node_aid}, which it never opened")
        aid = flight.aids[node_aid]
        frame = dataclasses.replace(frame, attempt=aid)  # type: ignore[type-var]
        if isinstance(frame, AttemptClosed):
            flight.open.discard(aid)
    if isinstance(frame, Said) and frame.tone is Tone.ACTIVITY:
        flight.phase = _phase(frame.text)
    recorder.emit(frame)  # type: ignore[arg-type]  # FRAMES: Opened, End and the events


def _said(tone: Tone, text: str) -> Said:
    return Said(tone=tone, text=text)


def _closed(aid: int, status: AttemptStatus, reason: str) -> AttemptClosed:
    return AttemptClosed(attempt=aid, status=status, reason=reason)


def _failed(names: tuple[str, ...], reason: str) -> VariantsFailed:
    return VariantsFailed(names=names, reason=reason)


def _dead(group_key: str, why: str) -> GroupDead:
    return GroupDead(group_key=group_key, why=why)


def _nodes(ray: Any) -> list[NodeInfo]:
    """The cluster's alive nodes, each with its name and GPU model."""
    nodes = []
    for node in ray.nodes():
        if not node.get("Alive"):
            continue
        resources = {str(k): float(v) for k, v in node.get("Resources", {}).items()}
        models = sorted(
            k.removeprefix(_MODEL_PREFIX) for k in resources if k.startswith(_MODEL_PREFIX)
        )
        node_id = str(node["NodeID"])
        nodes.append(
            NodeInfo(
                node_id=node_id,
                name=f"{node.get('NodeManagerAddress', '?')}/{node_id[:8]}",
                gpu_model=models[0] if models else None,
                resources=resources,
            )
        )
    return nodes


def _standing(flights: Iterable[Flight]) -> str:
    """``cluster: baseline on 10.0.0.2/3fa2c1d0: benchmarking; fusion: queued``."""
    parts = []
    for flight in sorted(flights, key=lambda f: f.token):
        where = f" on {flight.node}" if flight.node else ""
        parts.append(f"{flight.spec.names}{where}: {flight.phase}")
    return "cluster: " + "; ".join(parts)


def _phase(message: str) -> str:
    for word in ("preflight", "launching", "benchmarking", "stopping"):
        if word in message:
            return word
    return "running"


# --- on the node ------------------------------------------------------------------------


class Mailbox:
    """The calls the nodes' sinks sent, until the driver takes them (a Ray actor on the
    driver's node; calls from one task arrive in the order it made them)."""

    def __init__(self) -> None:
        self._items: list[tuple[Any, ...]] = []
        self._stop = False

    def put(self, item: tuple[Any, ...]) -> None:
        self._items.append(item)

    def take(self) -> list[tuple[Any, ...]]:
        items, self._items = self._items, []
        return items

    def stop(self) -> None:
        """Ask every start to stop its server (Ctrl-C on the driver)."""
        self._stop = True

    def stopping(self) -> bool:
        return self._stop


def _node_version() -> str:
    """servegate's version on the node a probe task ran on."""
    return __version__


def _execute(
    campaign: Campaign,
    spec: StartSpec,
    *,
    mailbox: Any,
    token: int,
    log_dir: str,
    names: dict[str, tuple[str, str | None]],
) -> None:
    """The Ray task: execute one start on this node, every call forwarded to ``mailbox``.

    The start runs in a child process (``python -m servegate.campaign.node``), so that
    the server's keeper is not a child of the Ray worker: Ray kills a dead worker's
    children with SIGKILL, which the keeper would not survive to stop its server. A stop
    asked for by the driver becomes SIGINT to the child, which stops its server and says
    so; should this worker be killed, the child is killed with it and its keeper, seeing
    the end of its pipe, stops the server; should the worker die otherwise (its node
    lost), the child gets SIGTERM (its parent-death signal).
    """
    import ray

    node_id = ray.get_runtime_context().get_node_id()
    if node_id not in names:  # a node that joined the cluster after the driver looked
        names = {n.node_id: (n.name, n.gpu_model) for n in _nodes(ray)}
    name, model = names.get(node_id, (node_id[:8], None))
    job = encode(
        NodeJob(
            campaign=campaign,
            spec=spec,
            log_dir=log_dir,
            placement=Placement(node=name, gpu_model=model),
        )
    )
    calls_r, calls_w = os.pipe()
    child = subprocess.Popen(
        [sys.executable, "-m", "servegate.campaign.node", str(calls_w), str(os.getpid())],
        stdin=subprocess.PIPE,
        pass_fds=(calls_w,),
        close_fds=True,
    )
    os.close(calls_w)

    try:
        with os.fdopen(calls_r, "rb", buffering=0) as calls:
            assert child.stdin is not None
            child.stdin.write(job)
            child.stdin.close()
            _forward(calls, child, mailbox, token)
    except BaseException:  # the mailbox or this task failed: the child stops its server
        _end_child(child, campaign.stop_grace_s + _CANCEL_WAIT_S)
        raise
    child.wait()
    ray.get(mailbox.put.remote((token, encode(End(code=child.returncode)))))


def _end_child(child: subprocess.Popen[bytes], grace_s: float) -> None:
    """SIGINT to the start's child (it stops its server and exits), SIGKILL after
    ``grace_s`` (its keeper then stops the server, seeing the end of its pipe)."""
    with suppress(ProcessLookupError):
        child.send_signal(signal.SIGINT)
    try:
        child.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()


def _forward(calls: Any, child: subprocess.Popen[bytes], mailbox: Any, token: int) -> None:
    """Every frame (line) of the child's pipe to the mailbox, until its end; a stop asked
    for by the driver (checked every ``_STOP_POLL_S``) becomes SIGINT to the child."""
    import ray

    buffer = b""
    stopping = False
    checked = time.monotonic()
    while True:
        readable, _, _ = select.select([calls], [], [], _STOP_POLL_S)
        if readable:
            chunk = calls.read(1 << 16)
            if not chunk:
                return
            *lines, buffer = (buffer + chunk).split(b"\n")
            for line in lines:
                mailbox.put.remote((token, line + b"\n"))
        if not stopping and time.monotonic() - checked >= _STOP_POLL_S:
            checked = time.monotonic()
            if ray.get(mailbox.stopping.remote()):
                stopping = True
                with suppress(ProcessLookupError):
                    child.send_signal(signal.SIGINT)
