"""Machine-readable reports: one JSON document, and a tidy CSV of every metric.

The JSON carries ``schema``, the tool's version, the Python version and the platform
(as hyperfine's exports do), the campaign, each variant with its attempts, and every
comparison with its interval. Units are named in the keys (``_s``, ``_ms``).
The CSV has one row per variant, load point and metric, the baseline's rows included.
"""

from __future__ import annotations

import csv
import io
import json
import math
import platform
import sys
from typing import Any

import numpy as np

from servegate._version import __version__
from servegate.report.bootstrap import Estimate
from servegate.report.compare import METRICS, Report, VariantSummary

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
        "shared_server_of": row.shared_server_of,
        "startup": {
            "cold_s": _num(row.cold_startup_s),
            "warm_s": [_num(v) for v in row.warm_startups_s],
        },
        "loads": {
            load: {
                "repeats": s.repeats,
                "output_throughput_mean": _num(s.throughput_mean),
                "output_throughput": [_num(v) for v in s.throughput_values],
                "completed": s.completed,
                "failed": s.failed,
                "failures": s.failures,
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
            "interval": "percentile bootstrap",
            "confidence": report.confidence,
            "resamples": report.resamples,
            "seed": report.seed,
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
                "call": c.call,
                "estimate": _estimate(c.estimate),
            }
            for c in report.comparisons
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
    "call",
)


def render_csv(report: Report) -> str:
    """One row per variant, load point and metric; comparison columns empty for the baseline."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    status = {row.name: row.status for row in report.variants}
    for variant in report.data.variants:
        for load in report.loads:
            for metric in METRICS:
                values = metric.values(report.data, variant, load)
                values = values[np.isfinite(values)]
                if values.size == 0:
                    continue
                value = metric.stat.of(values)
                comp = report.get(variant, load, metric.key)
                est = comp.estimate if comp else None
                cells: list[Any] = [
                    report.campaign.name,
                    variant,
                    status.get(variant, ""),
                    load,
                    metric.key,
                    metric.unit,
                    metric.direction,
                    values.size,
                    _num(value),
                ]
                if est is None:
                    cells += ["", "", "", "", "", "", "", "baseline" if comp is None else ""]
                else:
                    cells += [
                        _num(est.baseline),
                        _num(est.ratio),
                        _num(est.ratio_low),
                        _num(est.ratio_high),
                        _num(est.difference),
                        _num(est.difference_low),
                        _num(est.difference_high),
                        comp.call if comp else "",
                    ]
                writer.writerow(["" if c is None else c for c in cells])
    return buffer.getvalue()
