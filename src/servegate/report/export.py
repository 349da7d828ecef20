"""Machine-readable reports: one JSON document, and a tidy CSV of every metric.

The JSON carries ``schema``, the tool's version, the Python version and the platform
(as hyperfine's exports do), the campaign, each variant with its attempts, every
comparison with its interval, the startup comparisons and the A/A noise floor. Units are
named in the keys (``_s``, ``_ms``). The CSV has one row per variant, load point and
metric (the baseline's rows included), the startup rows, one row per failed variant
with its reason, and the A/A rows; both carry what every other format shows.
"""

from __future__ import annotations

import csv
import io
import json
import math
import platform
import sys
from typing import TYPE_CHECKING, Any

import numpy as np

from servegate._version import __version__
from servegate.report.arrivals import arrivals_cell
from servegate.report.bootstrap import Estimate
from servegate.report.compare import Report, VariantSummary
from servegate.report.slo import slo_cell

if TYPE_CHECKING:
    from servegate.report.check import CheckResult

SCHEMA = "servegate.report/1"


def _num(value: float | None) -> float | None:
    if value is None or not math.isfinite(value):
        return None
    return round(float(value), 6)


def _estimate(est: Estimate | None) -> dict[str, Any] | None:
    if est is None:
        return None
    return {
        "baseline": _num(est.baseline),
        "variant": _num(est.variant),
        "ratio": _num(est.ratio),
        "ratio_low": _num(est.ratio_low),
        "ratio_high": _num(est.ratio_high),
        "difference": _num(est.difference),
        "difference_low": _num(est.difference_low),
        "difference_high": _num(est.difference_high),
        "n_baseline": est.n_baseline,
        "n_variant": est.n_variant,
        "starts_baseline": est.starts_baseline,
        "starts_variant": est.starts_variant,
        "df": _num(est.df),
        "half_width": _num(est.half_width),
        "not_estimable": est.refused,  # why a percentile has no interval; None otherwise
    }


def _variant(report: Report, row: VariantSummary) -> dict[str, Any]:
    attempts = [
        {
            "id": a.id,
            "status": a.status,
            "reason": a.reason,
            "cold": a.cold,
            "startup_s": _num(a.startup_s),
            "started_at": a.started_at,
            "ended_at": a.ended_at,
            "command": list(a.command),
            "env": a.env,
            "host": a.host,
            "node": a.node,
            "gpu_model": a.gpu_model,
            "versions": a.versions,
            "git_commit": a.git_commit,
            "server_key": a.server_key,
            "phases": [{"name": p.name, "start_s": p.start_s, "end_s": p.end_s} for p in a.phases],
            "stop": {
                "killed": None if a.stop_killed is None else list(a.stop_killed),
                "duration_s": _num(a.stop_duration_s),
                "port_free": a.stop_port_free,
            },
            "verdict": a.verdict,
        }
        for a in report.data.attempts_of(row.name)
    ]
    return {
        "name": row.name,
        "baseline": row.is_baseline,
        "status": row.status,
        "kind": row.kind,
        "hint": row.hint,
        "reason": row.reason,
        "tail": list(row.tail),
        "earlier_failures": list(row.earlier_failures),
        "shared_server_of": row.shared_server_of,
        "on_baseline_server": row.on_baseline_server,
        "starts": row.starts,
        "workload": row.workload,
        "reference": row.reference,
        "not_compared": row.not_compared,
        "startup": {
            "cold_s": _num(row.cold_startup_s),
            "warm_s": [_num(v) for v in row.warm_startups_s],
        },
        "loads": {
            load: {
                "repeats": s.repeats,
                "starts": s.starts,
                "output_throughput_mean": _num(s.throughput_mean),
                "output_throughput": [_num(v) for v in s.throughput_values],
                "completed": s.completed,
                "failed": s.failed,
                "failures": s.failures,
                "slo": _slo_json(report, row.name, load),
                "arrivals": _arrivals_json(report, row.name, load),
            }
            for load, s in row.loads.items()
        },
        "attempts": attempts,
    }


def report_json(report: Report) -> dict[str, Any]:
    """The report as a JSON-ready dict (``servegate.report/1``)."""
    info = report.campaign
    return {
        "schema": SCHEMA,
        "tool": "servegate",
        "version": __version__,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "generated_at": report.generated_at,
        "database": report.data.db_path,
        "campaign": {
            "name": info.name,
            "baseline": info.baseline,
            "status": info.status,
            "created_at": info.created_at,
            "updated_at": info.updated_at,
            "config_text": info.config_text,
        },
        "method": {
            "interval": "hierarchical percentile bootstrap (starts, repeats, requests), "
            "widened with Student t and Welch-Satterthwaite degrees of freedom",
            "confidence": report.confidence,
            "resamples": report.resamples,
            "seed": report.seed,
            "min_effect": report.min_effect,
        },
        "loads": list(report.loads),
        "variants": [_variant(report, row) for row in report.variants],
        "comparisons": [
            {
                "variant": c.variant,
                "load": c.load,
                "metric": c.metric.key,
                "unit": c.metric.unit,
                "better": c.metric.direction,
                "over": c.metric.over,
                "reference": c.reference or report.baseline,
                "call": c.call,
                "estimate": _estimate(c.estimate),
            }
            for c in report.comparisons
        ],
        "noise_floor": [
            {
                "load": f.load,
                "metric": f.metric.key,
                "unit": f.metric.unit,
                "better": f.metric.direction,
                "split": f.split,
                "call": f.call,
                "estimate": _estimate(f.estimate),
            }
            for f in report.noise_floor
        ],
        "startup": [
            {
                "variant": c.variant,
                "start": c.temperature,
                "unit": "s",
                "call": c.call,
                "estimate": _estimate(c.estimate),
            }
            for c in report.startup
        ],
        "capacity": _capacity(report),
        "search": None if report.search is None else report.search.to_json(),
    }


def _capacity(report: Report) -> dict[str, Any]:
    """find_max: each variant's capacity per start, and each against the baseline's."""
    from servegate.report.capacity import mean_interval, sentence

    def band(row: Any) -> list[float | None] | None:
        found = mean_interval(
            row, confidence=report.confidence, resamples=report.resamples, seed=report.seed
        )
        return None if found is None else [_num(found[0]), _num(found[1])]

    return {
        "variants": [
            {
                "variant": row.variant,
                "over": row.over,
                "slo": row.slo,
                "criterion": row.criterion,
                "mean": _num(row.mean),
                "interval": band(row),  # of the mean over starts; None below two starts
                "censored": row.censored_high or row.censored_low,
                "starts": [
                    {
                        "start": s.start,
                        "value": _num(s.value),
                        "low": _num(s.low),
                        "high": _num(s.high),
                        "censored": s.censored,
                        "below_lowest": s.below_lowest,
                        "bounded_by_crash": s.bounded_by_crash,
                        "crashed": list(s.crashed),
                        "words": s.words,
                        "probes": len(s.probes),
                    }
                    for s in row.starts
                ],
            }
            for row in report.capacity_rows
        ],
        "comparisons": [
            {
                "variant": c.variant,
                "reference": c.reference,
                "over": c.over,
                "slo": c.slo,
                "bound": c.bound,
                "call": c.call,
                "words": sentence(c),
                "estimate": _estimate(c.estimate),
            }
            for c in report.capacity
        ],
    }


def render_json(report: Report) -> str:
    """The JSON report as text (indented, no NaN)."""
    return json.dumps(report_json(report), indent=2, allow_nan=False) + "\n"


CSV_COLUMNS = (
    "campaign",
    "variant",
    "status",
    "load",
    "metric",
    "unit",
    "better",
    "n",
    "value",
    "baseline_value",
    "ratio",
    "ratio_low",
    "ratio_high",
    "difference",
    "difference_low",
    "difference_high",
    "reference",
    "starts",
    "reason",
    "call",
)
AA = "A/A"  # the variant column of the noise-floor rows


def _comparison_cells(est: Estimate | None) -> list[Any]:
    if est is None:
        return ["", "", "", "", "", "", ""]
    return [
        _num(est.baseline),
        _num(est.ratio),
        _num(est.ratio_low),
        _num(est.ratio_high),
        _num(est.difference),
        _num(est.difference_low),
        _num(est.difference_high),
    ]


def render_csv(report: Report) -> str:
    """Rows per variant, load and metric; startup rows; failures; the A/A noise floor.

    Comparison columns are empty for the baseline (call ``baseline``); a variant that is
    not compared has its reason and the call ``not compared``; a failed variant has one
    row of its own (no load, no metric) with its status as the call and its reason.
    """
    rows: list[list[Any]] = []
    for row in report.variants:
        if row.failed:
            rows.append(_failure_row(report, row))
        rows.extend(_metric_rows(report, row))
        rows.extend(_startup_rows(report, row))
    rows.extend(_noise_rows(report))
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    writer.writerows(["" if c is None else c for c in cells] for cells in rows)
    return buffer.getvalue()


def _failure_row(report: Report, row: VariantSummary) -> list[Any]:
    """A failed variant's own row: no load, no metric; its status and reason."""
    reason = row.reason or ""
    if row.hint:
        reason += f" (hint: {row.hint})"
    return [
        report.campaign.name,
        row.name,
        row.status,
        "",
        "",
        "",
        "",
        "",
        "",
        *_comparison_cells(None),
        "",
        row.starts,
        reason,
        row.status,
    ]


def _metric_rows(report: Report, row: VariantSummary) -> list[list[Any]]:
    """The variant at every load and metric it measured, compared with its reference."""
    out = []
    for load in report.loads:
        for metric in report.metrics:
            values = metric.values(report.data, row.name, load)
            values = values[np.isfinite(values)]
            if values.size == 0:
                continue
            comp = report.get(row.name, load, metric.key)
            if row.is_baseline:
                verdict, reason, reference = "baseline", "", ""
            elif comp is None:
                verdict, reason, reference = "not compared", row.not_compared or "", ""
            else:
                verdict, reason, reference = comp.call, "", comp.reference
            starts = len({p.attempt_id for p in report.data.points_of(row.name, load)})
            out.append(
                [
                    report.campaign.name,
                    row.name,
                    row.status,
                    load,
                    metric.key,
                    metric.unit,
                    metric.direction,
                    values.size,
                    _num(metric.stat.of(values)),
                    *_comparison_cells(comp.estimate if comp else None),
                    reference,
                    starts,
                    reason,
                    verdict,
                ]
            )
    return out


def _startup_rows(report: Report, row: VariantSummary) -> list[list[Any]]:
    """The variant's cold and warm startup, compared with the baseline's when it is."""
    out = []
    for temperature, values in (
        ("cold", () if row.cold_startup_s is None else (row.cold_startup_s,)),
        ("warm", row.warm_startups_s),
    ):
        if not values:
            continue
        comp = next(
            (c for c in report.startup if c.variant == row.name and c.temperature == temperature),
            None,
        )
        if row.is_baseline:
            verdict, reason = "baseline", ""
        elif comp is not None:
            verdict, reason = comp.call, ""
        elif row.on_baseline_server:
            verdict, reason = "not compared", "measured on the baseline's own server starts"
        else:
            verdict, reason = "not compared", row.not_compared or ""
        out.append(
            [
                report.campaign.name,
                row.name,
                row.status,
                "startup",
                f"startup_{temperature}_s",
                "s",
                "lower",
                len(values),
                _num(sum(values) / len(values)),
                *_comparison_cells(comp.estimate if comp else None),
                report.baseline if comp else "",
                "",
                reason,
                verdict,
            ]
        )
    return out


def _noise_rows(report: Report) -> list[list[Any]]:
    """The A/A rows: the baseline against itself at each load and metric."""
    out = []
    for floor in report.noise_floor:
        est = floor.estimate
        out.append(
            [
                report.campaign.name,
                AA,
                "noise floor",
                floor.load,
                floor.metric.key,
                floor.metric.unit,
                floor.metric.direction,
                "" if est is None else est.n_variant,
                None if est is None else _num(est.variant),
                *_comparison_cells(est),
                report.baseline,
                "" if est is None else est.starts_variant,
                floor.split,
                floor.call,
            ]
        )
    return out


def render_check_json(result: CheckResult) -> str:
    """``servegate check``'s ``servegate.check/1`` JSON document."""
    return json.dumps(result.to_json(), indent=2) + "\n"


def _arrivals_json(report: Report, variant: str, load: str) -> dict[str, Any] | None:
    """A load's offered and achieved rates, or None in a closed loop."""
    cell = arrivals_cell(report.data, variant, load)
    return None if cell is None else cell.to_json()


def _slo_json(report: Report, variant: str, load: str) -> dict[str, Any] | None:
    """A load's SLO cell (met in how many repeats, mean goodput), or None without [slo]."""
    cell = slo_cell(report.data, variant, load)
    return None if cell is None else cell.to_json()
