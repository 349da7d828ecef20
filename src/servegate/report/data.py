"""A stored campaign read into memory: what every report renders from.

Reading once and handing plain values to the statistics and the renderers keeps the
renderers free of SQL and lets tests build a campaign without a server. What is read is
redacted here, once for every report format: a database written before redaction
existed, or by another tool, still shows no secret of this environment, no secret flag
value and no URL credentials. Names and log tails are made printable here too: a name
stored before control characters were refused (a newline, an ANSI escape) is shown
escaped in every format, never as a forged line.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from servegate._text import printable
from servegate.bench import metrics
from servegate.errors import UsageError
from servegate.redact import Redactor
from servegate.store import AttemptInfo, CampaignInfo, CapacityInfo, PointInfo, Samples, Store

_LOAD = re.compile(r"^\s*([a-z_]+)\s*=\s*([0-9.]+|inf)", re.I)


@dataclass(frozen=True, slots=True, kw_only=True)
class CampaignData:
    """Everything stored about one campaign, with per-request samples pooled over repeats."""

    campaign: CampaignInfo
    db_path: str
    variants: tuple[str, ...]  # the baseline first, then in declaration order
    loads: tuple[str, ...]  # "c=1", "c=16", ... in increasing load
    attempts: tuple[AttemptInfo, ...]
    points: tuple[PointInfo, ...]
    samples: dict[tuple[str, str], Samples]  # (variant, load) -> pooled samples
    point_samples: dict[int, Samples] = field(default_factory=dict)  # point id -> samples
    capacities: tuple[CapacityInfo, ...] = ()  # find_max: each start's capacity

    @property
    def baseline(self) -> str:
        """The baseline variant's name."""
        return self.campaign.baseline

    def points_of(self, variant: str, load: str) -> list[PointInfo]:
        """The repeats of one load point of one variant."""
        return [p for p in self.points if p.variant == variant and p.load == load]

    def attempts_of(self, variant: str) -> list[AttemptInfo]:
        """The variant's own server starts, in launch order."""
        return [a for a in self.attempts if a.variant == variant]


def load_sort_key(load: str) -> tuple[str, float, str]:
    """Order load keys by kind, then by number: c=2 before c=16, rate=4 after c=64."""
    match = _LOAD.match(load)
    if match is None:
        return ("~", math.inf, load)
    return (match.group(1).lower(), float(match.group(2)), load)


def load_value(load: str) -> float | None:
    """The number in a load key (16 for ``c=16``), or None."""
    match = _LOAD.match(load)
    return float(match.group(2)) if match else None


def resolve_campaign(store: Store, name: str | None) -> CampaignInfo:
    """The campaign called ``name``, or the newest one; UsageError listing the known ones."""
    known = store.campaigns()
    if not known:
        raise UsageError(
            f"{store.path} holds no campaign yet; run one with `servegate run FILE.toml` "
            "or pass another --db."
        )
    if name is None:
        return known[0]
    for info in known:
        if info.name == name:
            return info
    names = ", ".join(printable(c.name) for c in known)
    raise UsageError(f"no campaign {name!r} in {store.path}; known campaigns: {names}.")


def load_campaign(store: Store, cid: int) -> CampaignData:
    """Read one campaign, its attempts, points and samples (secrets masked)."""
    redactor = Redactor.collect()
    info = redactor.record(store.campaign_info(cid))
    info = replace(info, name=printable(info.name), baseline=printable(info.baseline))
    points = [
        replace(p, variant=printable(p.variant)) for p in map(redactor.record, store.points(cid))
    ]
    attempts = [
        _printable_attempt(replace(redactor.record(a), command=tuple(redactor.command(a.command))))
        for a in store.attempts(cid)
    ]
    names = [printable(name) for name in store.variants(cid)]
    for name in [a.variant for a in attempts] + [p.variant for p in points]:
        if name not in names:
            names.append(name)
    ordered = [info.baseline] + [n for n in names if n != info.baseline]
    loads = sorted({p.load for p in points}, key=load_sort_key)
    # each point's requests once; pooled per (variant, load) from those
    per_point = {p.id: store.samples([p.id]) for p in points}
    samples: dict[tuple[str, str], Samples] = {}
    for variant in ordered:
        for load in loads:
            ids = [p.id for p in points if p.variant == variant and p.load == load]
            if ids:
                samples[(variant, load)] = pool([per_point[i] for i in ids])
    return CampaignData(
        campaign=info,
        db_path=store.path,
        variants=tuple(ordered),
        loads=tuple(loads),
        attempts=tuple(attempts),
        points=tuple(points),
        samples=samples,
        point_samples=per_point,
        capacities=tuple(replace(c, variant=printable(c.variant)) for c in store.capacities(cid)),
    )


def _printable_attempt(attempt: AttemptInfo) -> AttemptInfo:
    """``attempt`` with its variant names, host, node, reason and log tail printable
    (escaped): a cluster's node name or a host's GPU name is text from another machine."""
    verdict = attempt.verdict
    if verdict is not None:
        verdict = {key: _printable_json(value) for key, value in verdict.items()}
    return replace(
        attempt,
        variant=printable(attempt.variant),
        failed_variants=tuple(printable(name) for name in attempt.failed_variants),
        reason=None if attempt.reason is None else _printable_lines(attempt.reason),
        host=printable(attempt.host),
        node=None if attempt.node is None else printable(attempt.node),
        gpu_model=None if attempt.gpu_model is None else printable(attempt.gpu_model),
        verdict=verdict,
    )


def _printable_lines(text: str) -> str:
    """``text`` printable line by line: its own newlines kept (a reason's detail line)."""
    return "\n".join(printable(line, keep_tab=True) for line in text.split("\n"))


def _printable_json(value: Any) -> Any:
    """Every string in a JSON-like value printable (a tab kept: log lines use it)."""
    if isinstance(value, str):
        return printable(value, keep_tab=True)
    if isinstance(value, list):
        return [_printable_json(item) for item in value]
    if isinstance(value, dict):
        return {key: _printable_json(item) for key, item in value.items()}
    return value


def pool(parts: Sequence[Samples]) -> Samples:
    """Several points' samples as one (arrays concatenated, error counts added)."""
    errors: dict[str, int] = {}
    for part in parts:
        for kind, count in part.errors.items():
            errors[kind] = errors.get(kind, 0) + count

    def joined(name: str) -> np.ndarray[tuple[int], np.dtype[np.float64]]:
        arrays = [getattr(part, name) for part in parts]
        if not arrays:
            return np.empty(0, dtype=np.float64)
        return np.asarray(np.concatenate(arrays), dtype=np.float64)

    return Samples(
        ttft_ms=joined("ttft_ms"),
        e2el_ms=joined("e2el_ms"),
        output_tokens=joined("output_tokens"),
        itl_ms=joined("itl_ms"),
        errors=errors,
    )


def tpot_ms(samples: Samples) -> np.ndarray[tuple[int], np.dtype[np.float64]]:
    """Per request TPOT in ms (`servegate.bench.metrics.tpot`), for requests of 2+ tokens."""
    return metrics.tpot(samples.ttft_ms, samples.e2el_ms, samples.output_tokens)
