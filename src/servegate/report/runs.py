"""Compare ``bench --json-file`` results, side A against side B, with the report's statistics.

Each file is one run of ``servegate bench``; several files on a side are its repeats, and
each file counts as one server start of the report's hierarchical bootstrap
(`servegate.report.bootstrap`): throughputs rest on one value per file (an interval from
two files a side), latency percentiles on every request (order statistics within a file,
Student t across files; `servegate.report.quantiles`). Points are matched by their label
(``c=16``, ``rate=8/s``).

Before any number is compared, the settings that change what is measured are compared:
the request shape, arrivals, dataset, cache mode, tokenizer, and the tokens the requests
actually carried. Unlike runs are refused (a UsageError naming each difference) unless
forced.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from servegate.bench import metrics
from servegate.errors import UsageError
from servegate.report.bootstrap import (
    MIN_EFFECT,
    Call,
    Direction,
    Estimate,
    Statistic,
    call,
    estimate_nested,
    quantile,
    seeded_rng,
)
from servegate.report.hierarchy import Nested, nested

SCHEMA = "servegate.compare/1"
BENCH_SCHEMA = "servegate.bench/1"
TOKEN_TOLERANCE = 0.01  # mean tokens per request differing by more than this: unlike runs

# settings that change what is measured: key -> how a difference is named
SETTING_KEYS: tuple[tuple[str, str, Any], ...] = (
    ("api", "API (and so the chat template)", "completions"),
    ("input_len", "input_len", None),
    ("output_len", "output_len", None),
    ("ignore_eos", "ignore_eos", None),
    ("dataset", "dataset", "random"),
    ("rate", "arrivals (rate)", None),
    ("burstiness", "arrivals (burstiness)", 1.0),  # older files: Poisson
    ("concurrency", "concurrency", None),
    ("cache", "cache mode", None),
    ("tokenizer", "tokenizer", None),
)

# (metric, statistic label, direction): what a row compares
THROUGHPUTS: tuple[tuple[str, Direction], ...] = (
    ("output_throughput", "higher"),
    ("request_throughput", "higher"),
)
LATENCIES = ("ttft", "tpot", "itl", "e2el")


@dataclass(frozen=True, slots=True, kw_only=True)
class Run:
    """One ``bench --json-file`` document: its path and its points by label."""

    path: str
    points: dict[str, dict[str, Any]]


@dataclass(frozen=True, slots=True, kw_only=True)
class Row:
    """One metric at one load point: B against A."""

    label: str
    metric: str  # output_throughput, ttft_ms_p99, ...
    direction: Direction
    estimate: Estimate | None
    call: Call

    def to_json(self) -> dict[str, Any]:
        """The row as JSON (NaN as null)."""
        e = self.estimate
        return {
            "label": self.label,
            "metric": self.metric,
            "better": self.direction,
            "call": self.call,
            "a": None if e is None else _finite(e.baseline),
            "b": None if e is None else _finite(e.variant),
            "ratio": None if e is None else _finite(e.ratio),
            "ratio_low": None if e is None else e.ratio_low,
            "ratio_high": None if e is None else e.ratio_high,
            "n_a": None if e is None else e.n_baseline,
            "n_b": None if e is None else e.n_variant,
            "files_a": None if e is None else e.starts_baseline,
            "files_b": None if e is None else e.starts_variant,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class Comparison:
    """What was compared and how: the files, the settings that differ, one row per metric."""

    a: list[str]
    b: list[str]
    differences: list[str]  # empty when the runs are alike; non-empty only when forced
    only_a: list[str]  # load points of A that B lacks (not compared)
    only_b: list[str]
    rows: list[Row]
    confidence: float
    min_effect: float

    def to_json(self) -> dict[str, Any]:
        """The comparison as one JSON document."""
        return {
            "schema": SCHEMA,
            "a": self.a,
            "b": self.b,
            "differences": self.differences,
            "only_a": self.only_a,
            "only_b": self.only_b,
            "confidence": self.confidence,
            "min_effect": self.min_effect,
            "rows": [r.to_json() for r in self.rows],
        }


def load_run(path: Path) -> Run:
    """One bench JSON file, or a UsageError of one sentence naming the file."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(
            f"{path}: no such file; give a file written by bench --json-file."
        ) from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else "not JSON"
        raise UsageError(
            f"{path}: cannot be read ({reason}); give a file written by bench --json-file."
        ) from None
    if not isinstance(doc, dict) or doc.get("schema") != BENCH_SCHEMA:
        raise UsageError(
            f"{path}: not a bench result (schema {BENCH_SCHEMA} expected); give a file "
            "written by bench --json-file."
        )
    points = doc.get("points")
    if not isinstance(points, list) or not points:
        raise UsageError(f"{path}: holds no measured point; run bench again to compare it.")
    by_label: dict[str, dict[str, Any]] = {}
    for point in points:
        if not (isinstance(point, dict) and isinstance(point.get("label"), str)):
            raise UsageError(f"{path}: a point without a label; give a file written by bench.")
        by_label[point["label"]] = point
    return Run(path=str(path), points=by_label)


def compare_runs(
    a: Sequence[Run],
    b: Sequence[Run],
    *,
    force: bool = False,
    confidence: float = 0.95,
    min_effect: float = MIN_EFFECT,
    seed: int = 0,
    percentiles: Sequence[float] = (50.0, 99.0),
) -> Comparison:
    """B against A at every load point both have; a UsageError when their settings differ
    (unless ``force``) or when they share no load point."""
    labels_a = _labels(a)
    labels_b = _labels(b)
    common = [label for label in labels_a if label in labels_b]
    if not common:
        raise UsageError(
            f"the runs share no load point (A: {', '.join(labels_a)}; B: "
            f"{', '.join(labels_b)}); run bench at the same --concurrency or --rate."
        )
    found = differences(a, b, common)
    if found and not force:
        raise UsageError(
            "the runs differ in " + "; ".join(found)
            + ": compare like with like, or give --force to compare anyway."
        )  # fmt: skip
    rows: list[Row] = []
    for label in common:
        for name, direction in THROUGHPUTS:
            side_a, side_b = _per_file(a, label, name), _per_file(b, label, name)
            rows.append(
                _row(label, name, direction, side_a, side_b, q=None,
                     confidence=confidence, min_effect=min_effect, seed=seed)
            )  # fmt: skip
        for latency in LATENCIES:
            side_a, side_b = _requests(a, label, latency), _requests(b, label, latency)
            for p in percentiles:
                metric = f"{latency}_ms_p{p:g}"
                rows.append(
                    _row(label, metric, "lower", side_a, side_b, q=p / 100.0,
                         confidence=confidence, min_effect=min_effect, seed=seed)
                )  # fmt: skip
    return Comparison(
        a=[r.path for r in a],
        b=[r.path for r in b],
        differences=found,
        only_a=[label for label in labels_a if label not in labels_b],
        only_b=[label for label in labels_b if label not in labels_a],
        rows=rows,
        confidence=confidence,
        min_effect=min_effect,
    )


def differences(a: Sequence[Run], b: Sequence[Run], labels: Sequence[str]) -> list[str]:
    """The settings (and token counts) in which side B's points differ from side A's."""
    found: list[str] = []
    for key, name, before in SETTING_KEYS:
        values_a = _setting_values(a, labels, key, before)
        values_b = _setting_values(b, labels, key, before)
        if values_a != values_b:
            found.append(f"{name}: A {_values(values_a)}, B {_values(values_b)}")
    for key, name in (("total_input_tokens", "input"), ("total_output_tokens", "output")):
        mean_a, mean_b = _tokens_per_request(a, labels, key), _tokens_per_request(b, labels, key)
        if mean_a and mean_b and abs(mean_b / mean_a - 1) > TOKEN_TOLERANCE:
            found.append(
                f"{name} tokens per request: A {mean_a:.1f}, B {mean_b:.1f} (usage totals)"
            )
    return found


def _labels(runs: Sequence[Run]) -> list[str]:
    seen: dict[str, None] = {}
    for run in runs:
        seen.update(dict.fromkeys(run.points))
    return list(seen)


def _setting_values(runs: Sequence[Run], labels: Sequence[str], key: str, before: Any) -> set[str]:
    values = set()
    for run in runs:
        for label in labels:
            point = run.points.get(label)
            if point is None:
                continue
            settings = point.get("settings")
            if not isinstance(settings, dict):
                settings = {}
            values.add(json.dumps(settings.get(key, before), sort_keys=True))
    return values


def _values(values: set[str]) -> str:
    return " or ".join(sorted(values))


def _tokens_per_request(runs: Sequence[Run], labels: Sequence[str], key: str) -> float | None:
    total = completed = 0.0
    for run in runs:
        for label in labels:
            point = run.points.get(label) or {}
            value = (point.get("summary") or {}).get(key)
            if isinstance(value, int | float) and isinstance(point.get("completed"), int):
                total += value
                completed += point["completed"]
    return total / completed if completed else None


def _per_file(runs: Sequence[Run], label: str, name: str) -> Nested:
    """One value per file (each file a start of one repeat), for a throughput."""
    starts = []
    for run in runs:
        point = run.points.get(label)
        value = None if point is None else (point.get("summary") or {}).get(name)
        if isinstance(value, int | float):
            starts.append([np.asarray([float(value)])])
    return nested(starts)


def _requests(runs: Sequence[Run], label: str, latency: str) -> Nested:
    """Every completed request's value of ``latency`` in ms, a start per file, computed from
    the raw samples with `servegate.bench.metrics` (the definitions the summary uses)."""
    starts = []
    for run in runs:
        point = run.points.get(label)
        if point is None:
            continue
        done = [s for s in point.get("samples") or [] if not s.get("error") and s.get("chunks_s")]
        chunks = [np.asarray(s["chunks_s"], dtype=np.float64) for s in done]
        if latency == "itl":
            values = metrics.itl(chunks)
        else:
            first = np.asarray([c[0] for c in chunks], dtype=np.float64)
            last = np.asarray([c[-1] for c in chunks], dtype=np.float64)
            if latency == "ttft":
                values = first
            elif latency == "e2el":
                values = last
            else:
                tokens = [
                    s["usage_output_tokens"] if s.get("usage_output_tokens") is not None
                    else len(s["chunks_s"])
                    for s in done
                ]  # fmt: skip
                values = metrics.tpot(first, last, tokens)
        starts.append([values * 1000.0])
    return nested(starts)


def _row(
    label: str,
    metric: str,
    direction: Direction,
    side_a: Nested,
    side_b: Nested,
    *,
    q: float | None,
    confidence: float,
    min_effect: float,
    seed: int,
) -> Row:
    est = estimate_nested(
        side_a,
        side_b,
        stat=Statistic(q=q) if q is None else quantile(q),
        confidence=confidence,
        rng=seeded_rng(seed, label, metric),
        independent=q is not None,
    )
    return Row(
        label=label,
        metric=metric,
        direction=direction,
        estimate=est,
        call=call(est, direction, min_effect),
    )


# --- rendering ------------------------------------------------------------------------


def render_text(comparison: Comparison) -> str:
    """An aligned table: a row per metric and load point, B against A, and the call."""
    lines = _preamble(comparison)
    head = f"{'point':16}{'metric':22}{'A':>12}{'B':>12}{'B/A':>8}  {'interval':17}call"
    lines.append(head)
    for row in comparison.rows:
        a, b, ratio, span = _cells(row)
        lines.append(f"{row.label:16}{row.metric:22}{a:>12}{b:>12}{ratio:>8}  {span:17}{row.call}")
    return "\n".join(lines)


def render_markdown(comparison: Comparison) -> str:
    """The same table in Markdown."""
    lines = [f"- {line}" for line in _preamble(comparison)]
    lines += [
        "",
        "| point | metric | A | B | B/A | interval | call |",
        "|---|---|---:|---:|---:|---|---|",
    ]
    for row in comparison.rows:
        a, b, ratio, span = _cells(row)
        lines.append(f"| {row.label} | {row.metric} | {a} | {b} | {ratio} | {span} | {row.call} |")
    return "\n".join(lines) + "\n"


def _preamble(comparison: Comparison) -> list[str]:
    lines = [
        f"A: {', '.join(comparison.a)}",
        f"B: {', '.join(comparison.b)}",
    ]
    lines += [f"differs (--force): {d}" for d in comparison.differences]
    if comparison.only_a:
        lines.append(f"only in A, not compared: {', '.join(comparison.only_a)}")
    if comparison.only_b:
        lines.append(f"only in B, not compared: {', '.join(comparison.only_b)}")
    lines.append(
        f"{comparison.confidence:.0%} intervals of B/A; a change is called when the interval "
        f"excludes 1 and is at least {comparison.min_effect:.0%}"
    )
    return lines


def _cells(row: Row) -> tuple[str, str, str, str]:
    e = row.estimate
    if e is None:
        return "-", "-", "-", "-"
    span = "-"
    if e.ratio_low is not None and e.ratio_high is not None:
        span = f"[{e.ratio_low:.3f}, {e.ratio_high:.3f}]"
    ratio = f"{e.ratio:.3f}" if math.isfinite(e.ratio) else "-"
    return _number(e.baseline), _number(e.variant), ratio, span


def _number(value: float) -> str:
    return f"{value:,.2f}" if math.isfinite(value) else "-"


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None
