"""A load point's energy: NVML's energy counter of the server's GPUs, before and after.

    meter = EnergyMeter(server_pids=server.pids, price_per_gpu_hour=2.5)
    meter.begin()                   # just before the measured phase (warmup excluded)
    ...                             # the measured requests
    energy = meter.end(output_tokens=51_200)
    energy.joules_per_output_token  # None where nothing was measured, never 0

**Which GPUs.** ``--gpus`` when the user named them (``bench --url`` against a server
servegate did not launch); else the GPUs on which NVML lists a process of the server's
tree; else the ones the server's ``CUDA_VISIBLE_DEVICES`` names (a container whose PID
namespace differs from the driver's lists other PIDs); else none. A GPU in MIG mode, or
one on which NVML lists a process outside the server's tree, is not counted: its counter
covers the whole board, so the point's energy would hold another's work. Then the energy
is absent, with the reason.

**The counter** (``nvmlDeviceGetTotalEnergyConsumption``, millijoules since the driver
loaded) is read once per GPU at ``begin`` and at ``end``; the difference over the wall
time between the two readings gives the mean power. The cost is the GPU-hours of that
window at ``price_per_gpu_hour``, per million output tokens.

The NVML calls stay behind `EnergyReader` (the `Nvml` session has them), so the choice
of GPUs and the arithmetic are tested with a stand-in. Nothing here raises into the
caller: a refused reading makes the point's energy absent, with the reason.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

__all__ = [
    "Energy",
    "EnergyMeter",
    "EnergyReader",
    "GpuChoice",
    "choose_gpus",
    "energy_of",
    "server_visible_devices",
]


class EnergyReader(Protocol):
    """The NVML readings a point's energy needs (`servegate.telemetry.nvml.Nvml`)."""

    @property
    def count(self) -> int: ...  # GPUs on this machine
    def energy_mj(self, index: int) -> int: ...  # the counter, millijoules
    def processes(self, index: int) -> list[tuple[int, int | None]]: ...  # (PID, memory)
    def mig(self, index: int) -> bool: ...  # in MIG mode
    def uuid(self, index: int) -> str: ...  # GPU-..., as CUDA_VISIBLE_DEVICES may name it
    def close(self) -> None: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class GpuChoice:
    """The GPUs a point's energy counts, how they were found, or why none are."""

    gpus: tuple[int, ...] = ()
    by: str | None = None  # "--gpus", "processes" or "CUDA_VISIBLE_DEVICES"
    reason: str | None = None  # set when gpus is empty


@dataclass(frozen=True, slots=True, kw_only=True)
class Energy:
    """One point's energy and cost; every figure None (never 0) where nothing was measured.

    ``gpu_seen`` is False where this machine has no NVML or no GPU: then nothing is shown
    to the user. With GPUs but none countable, ``reason`` says why.
    """

    gpus: tuple[int, ...] = ()
    by: str | None = None
    reason: str | None = None
    gpu_seen: bool = False
    energy_j: float | None = None
    window_s: float | None = None  # wall time between the two counter readings
    started_unix: float | None = None  # the first reading, seconds since the epoch
    ended_unix: float | None = None
    output_tokens: int | None = None
    mean_power_w: float | None = None  # all counted GPUs together
    joules_per_output_token: float | None = None
    price_per_gpu_hour: float | None = None
    usd_per_million_output_tokens: float | None = None
    per_gpu_j: tuple[float, ...] = field(default=())

    @property
    def measured(self) -> bool:
        """Whether the counters were read at both ends."""
        return self.energy_j is not None

    def to_json(self) -> dict[str, Any]:
        """All fields as a JSON object (absent figures as null)."""
        out = {name: getattr(self, name) for name in self.__slots__}
        out["gpus"] = list(self.gpus)
        out["per_gpu_j"] = list(self.per_gpu_j)
        return out


def choose_gpus(
    reader: EnergyReader,
    *,
    given: Sequence[int] | None = None,
    tree: Iterable[int] | None = None,
    visible: str | None = None,
) -> GpuChoice:
    """The GPUs to count: ``given`` (``--gpus``), else those with a process of ``tree``,
    else the ones ``visible`` (the server's CUDA_VISIBLE_DEVICES) names; or why none."""
    count = reader.count
    if given is not None:
        wrong = [i for i in given if not 0 <= i < count]
        if wrong:
            return GpuChoice(
                reason=f"--gpus names GPU {wrong[0]}, but this machine has GPUs 0-{count - 1}"
            )
        return _checked(reader, tuple(dict.fromkeys(given)), "--gpus", None)
    if tree is None:
        return GpuChoice(
            reason="servegate did not launch this server: --gpus 0,1 names the GPUs it uses"
        )
    pids = set(tree)
    holders = {i: {pid for pid, _memory in _processes(reader, i)} for i in range(count)}
    used = tuple(i for i in range(count) if holders[i] & pids)
    if used:
        return _checked(reader, used, "processes", {i: holders[i] - pids for i in used})
    if visible is None:
        return GpuChoice(
            reason="NVML lists no process of the server on a GPU, and the server has no "
            "CUDA_VISIBLE_DEVICES"
        )
    return _visible(reader, visible)


def _visible(reader: EnergyReader, visible: str) -> GpuChoice:
    """The GPUs a CUDA_VISIBLE_DEVICES value names (indexes or GPU UUIDs)."""
    items = [x.strip() for x in visible.split(",") if x.strip()]
    if not items:
        return GpuChoice(reason="the server's CUDA_VISIBLE_DEVICES is empty (no GPU)")
    if any(x.startswith("MIG-") for x in items):
        return GpuChoice(
            reason="the server runs on a MIG instance: the energy counter covers the whole GPU"
        )
    uuids = {reader.uuid(i): i for i in range(reader.count)}
    chosen: list[int] = []
    for item in items:
        if item.isdigit() and int(item) < reader.count:
            chosen.append(int(item))
            continue
        # a UUID may be given by a unique prefix (GPU-8c1b)
        found = [i for uuid, i in uuids.items() if uuid.startswith(item)]
        if len(found) != 1:
            return GpuChoice(
                reason=f"the server's CUDA_VISIBLE_DEVICES={visible} names {item!r}, "
                "which is no GPU of this machine"
            )
        chosen.append(found[0])
    return _checked(reader, tuple(dict.fromkeys(chosen)), "CUDA_VISIBLE_DEVICES", None)


def _checked(
    reader: EnergyReader,
    gpus: tuple[int, ...],
    by: str,
    others: dict[int, set[int]] | None,
) -> GpuChoice:
    """``gpus`` unless one is in MIG mode or (``others``) runs another's process."""
    for index in gpus:
        if reader.mig(index):
            return GpuChoice(
                reason=f"GPU {index} is in MIG mode: its energy counter covers every instance"
            )
        foreign = sorted(others.get(index, ())) if others is not None else []
        if foreign:
            return GpuChoice(
                reason=f"GPU {index} is shared with PID {', '.join(map(str, foreign[:4]))} "
                "outside the server's process tree: its counter would hold their work too"
            )
    return GpuChoice(gpus=gpus, by=by)


def _processes(reader: EnergyReader, index: int) -> list[tuple[int, int | None]]:
    try:
        return reader.processes(index)
    except Exception:  # a refused list: no process known there
        return []


def energy_of(
    *,
    choice: GpuChoice,
    before_mj: Sequence[int],
    after_mj: Sequence[int],
    window_s: float,
    output_tokens: int,
    price_per_gpu_hour: float | None,
    started_unix: float | None = None,
) -> Energy:
    """The point's figures from the counters read at both ends (one per chosen GPU)."""
    base = Energy(
        gpus=choice.gpus,
        by=choice.by,
        gpu_seen=True,
        window_s=window_s,
        started_unix=started_unix,
        ended_unix=None if started_unix is None else started_unix + window_s,
        output_tokens=output_tokens,
        price_per_gpu_hour=price_per_gpu_hour,
    )
    deltas = [(a - b) / 1000.0 for a, b in zip(after_mj, before_mj, strict=True)]
    if any(d < 0 for d in deltas):
        return _absent(base, "a GPU's energy counter went back (the driver was reloaded)")
    if not window_s > 0:
        return _absent(base, "the point's window had no length")
    joules = sum(deltas)
    per_token = joules / output_tokens if output_tokens > 0 else None
    usd = None
    if price_per_gpu_hour is not None and output_tokens > 0:
        gpu_hours = window_s / 3600.0 * len(choice.gpus)
        usd = gpu_hours * price_per_gpu_hour / output_tokens * 1e6
    return _replace(
        base,
        energy_j=joules,
        per_gpu_j=tuple(deltas),
        mean_power_w=joules / window_s,
        joules_per_output_token=per_token,
        usd_per_million_output_tokens=usd,
    )


def _absent(base: Energy, reason: str) -> Energy:
    return Energy(
        gpus=base.gpus, by=base.by, reason=reason, gpu_seen=True,
        price_per_gpu_hour=base.price_per_gpu_hour,
    )  # fmt: skip


def _replace(base: Energy, **changes: Any) -> Energy:
    values = {name: getattr(base, name) for name in base.__slots__}
    return Energy(**(values | changes))


def server_visible_devices(pids: Iterable[int], proc: str = "/proc") -> str | None:
    """CUDA_VISIBLE_DEVICES of the first of ``pids`` whose environment can be read."""
    for pid in pids:
        try:
            with open(f"{proc}/{pid}/environ", "rb") as file:
                raw = file.read()
        except OSError:
            continue
        for entry in raw.split(b"\0"):
            if entry.startswith(b"CUDA_VISIBLE_DEVICES="):
                return entry.split(b"=", 1)[1].decode(errors="replace")
        return None
    return None


def _open_nvml() -> EnergyReader | None:
    from servegate.telemetry.nvml import Nvml

    return Nvml.open()


class EnergyMeter:
    """Reads the chosen GPUs' energy counters at `begin` and `end` of a point.

    ``server_pids`` gives the server's process tree now (None: servegate did not launch
    the server, and only ``gpus`` can name its GPUs); ``open_reader`` opens NVML (a
    stand-in in tests), None when there is no NVML or no GPU.
    """

    def __init__(
        self,
        *,
        gpus: Sequence[int] | None = None,
        server_pids: Callable[[], Iterable[int]] | None = None,
        price_per_gpu_hour: float | None = None,
        open_reader: Callable[[], EnergyReader | None] = _open_nvml,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self._gpus = gpus
        self._server_pids = server_pids
        self._price = price_per_gpu_hour
        self._open_reader = open_reader
        self._clock = clock
        self._wall = wall
        self._reader: EnergyReader | None = None
        self._choice = GpuChoice(reason="the counters were not read")
        self._before: list[int] = []
        self._t0 = 0.0
        self._unix0 = 0.0
        self._begun = False

    def begin(self) -> None:
        """Choose the GPUs and read their counters (just before the measured phase)."""
        try:
            self._reader = self._open_reader()
        except Exception:  # NVML failing to load is "no GPU", never an error of the point
            self._reader = None
        self._begun = True
        if self._reader is None:
            return
        try:
            tree = None
            if self._gpus is None and self._server_pids is not None:
                tree = list(self._server_pids())
            visible = server_visible_devices(tree) if tree else None
            self._choice = choose_gpus(self._reader, given=self._gpus, tree=tree, visible=visible)
            if self._choice.gpus:
                self._before = [self._reader.energy_mj(i) for i in self._choice.gpus]
        except Exception as exc:
            self._choice = GpuChoice(reason=f"NVML refused the energy counter ({exc})")
        self._t0 = self._clock()
        self._unix0 = self._wall()

    def end(self, *, output_tokens: int) -> Energy:
        """Read the counters again and give the point's figures (or why there are none)."""
        if self._reader is None:
            reason = "no NVIDIA GPU or NVML on this machine"
            return Energy(
                reason=reason if self._begun else "the measured phase never began",
                price_per_gpu_hour=self._price,
            )
        reader, self._reader = self._reader, None
        try:
            choice = self._choice
            if not choice.gpus or len(self._before) != len(choice.gpus):
                return Energy(gpu_seen=True, reason=choice.reason, price_per_gpu_hour=self._price)
            try:
                after = [reader.energy_mj(i) for i in choice.gpus]
            except Exception as exc:
                return Energy(
                    gpus=choice.gpus, by=choice.by, gpu_seen=True,
                    reason=f"NVML refused the energy counter ({exc})",
                    price_per_gpu_hour=self._price,
                )  # fmt: skip
            window = self._clock() - self._t0
            return energy_of(
                choice=choice,
                before_mj=self._before,
                after_mj=after,
                window_s=window,
                output_tokens=output_tokens,
                price_per_gpu_hour=self._price,
                started_unix=self._unix0,
            )
        finally:
            with contextlib.suppress(Exception):
                reader.close()

    def close(self) -> None:
        """Close NVML when `end` was never reached (the point failed)."""
        reader, self._reader = self._reader, None
        if reader is not None:
            with contextlib.suppress(Exception):
                reader.close()
