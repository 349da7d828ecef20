"""The words and numbers every renderer shares, so the terminal, markdown and HTML agree.

One place decides how a ratio, a delta with its interval, a status and a startup read,
e.g. ``+3.6 % [+2.8, +4.4]`` and ``fusion: 1.036 +/- 0.008 x baseline output throughput``.
"""

from __future__ import annotations

import math

from servegate.report.bootstrap import Estimate
from servegate.report.compare import (
    HEADLINE,
    TAIL_METRICS,
    MetricComparison,
    NoiseFloor,
    Report,
    VariantSummary,
    metric,
)

RUN_STATUS = {
    "done": "ok",
    "ready": "ok",  # ready and measured, not yet stopped
    "crash": "CRASH",
    "timeout": "TIMEOUT",
    "failed": "FAILED",
    "interrupted": "interrupted",
    "running": "running",
    "not run": "not run",
}


def number(value: float | None, digits: int = 1) -> str:
    """A value with a fixed number of decimals, or an en dash when there is none."""
    if value is None or not math.isfinite(value):
        return "–"
    return f"{value:,.{digits}f}"


def seconds(value: float | None) -> str:
    """Seconds as people read startup times: ``12.4 s``."""
    return "–" if value is None else f"{value:.1f} s"


def percent(ratio: float) -> str:
    """A ratio as a signed percentage change: 1.036 -> ``+3.6 %``."""
    return f"{(ratio - 1.0) * 100:+.1f} %"


def delta(est: Estimate | None, *, short: bool = False) -> str:
    """The change vs baseline with its interval: ``+3.6 % [+2.8, +4.4]``.

    Without an interval: ``+3.6 % (1 run, no interval)``, or ``+3.6 % (1 run)`` when short;
    ``+3.6 % (not estimable)`` for a percentile from too few requests per start;
    ``+3.6 % (1 start)`` when a side has one server start.
    """
    if est is None or not math.isfinite(est.ratio):
        return "–"
    text = percent(est.ratio)
    if est.refused is not None:
        return f"{text} (not estimable)"
    if est.ratio_low is None or est.ratio_high is None:
        runs = min(est.n_baseline, est.n_variant)
        if runs < 2:
            return f"{text} ({runs} run)" if short else f"{text} ({runs} run, no interval)"
        return f"{text} (1 start)" if short else f"{text} (1 start, no interval)"
    low = (est.ratio_low - 1.0) * 100
    high = (est.ratio_high - 1.0) * 100
    return f"{text} [{low:+.1f}, {high:+.1f}]"


def ratio_pm(est: Estimate) -> str:
    """hyperfine's form: ``1.036 +/- 0.008`` (half the interval's width)."""
    if est.ratio_low is None or est.ratio_high is None:
        return f"{est.ratio:.3f}"
    return f"{est.ratio:.3f} +/- {(est.ratio_high - est.ratio_low) / 2:.3f}"


def status(row: VariantSummary) -> str:
    """``ok``, ``CRASH (oom)``, ``TIMEOUT (stall)``, ... for the status column."""
    text = RUN_STATUS.get(row.status, row.status)
    if row.kind:
        text += f" ({row.kind})"
    if row.shared_server_of:
        text += f", on {row.shared_server_of}'s server"
    if row.starts > 1:
        text += f", {row.starts} starts"
    if row.earlier_failures:
        text += f" (earlier: {', '.join(row.earlier_failures)})"
    return text


def percent_short(est: Estimate | None) -> str:
    """The change alone, ``+3.6 %``, or an en dash."""
    if est is None or not math.isfinite(est.ratio):
        return "–"
    return percent(est.ratio)


def tail_cells(report: Report, row: VariantSummary, load: str) -> list[tuple[str, str]]:
    """``(TTFT p99 +3.1 %, call)`` for each tail latency the table shows beside throughput."""
    out: list[tuple[str, str]] = []
    for key in TAIL_METRICS:
        comp = report.get(row.name, load, key)
        if comp is not None and comp.estimate is not None:
            out.append((f"{comp.metric.label} {percent_short(comp.estimate)}", comp.call))
    return out


def not_compared_words(row: VariantSummary) -> str:
    """What stands in a table cell of a variant that is not compared."""
    if row.failed:
        return "not compared: failed"
    if row.on_baseline_server:
        return "workload reference"
    return "other workload, not compared"


def startup(row: VariantSummary) -> str:
    """Cold start, and the mean warm start when there were later starts."""
    if row.cold_startup_s is None and not row.warm_startups_s:
        return "–"
    text = seconds(row.cold_startup_s)
    if row.warm_startups_s:
        warm = sum(row.warm_startups_s) / len(row.warm_startups_s)
        text += f" (warm {warm:.1f} s, {len(row.warm_startups_s)}x)"
    return text


def confidence_label(report: Report) -> str:
    """``95 %`` for the report's interval coverage."""
    return f"{report.confidence * 100:g} %"


def start_failure(row: VariantSummary) -> str:
    """``did not start: crashed: <reason> (<kind>) - <hint>`` for a crash or timeout."""
    text = f"did not start: {RUN_STATUS.get(row.status, row.status)}"
    if row.reason:
        text += f": {row.reason}"
    if row.kind:
        text += f" ({row.kind})"
    if row.hint:
        text += f" - {row.hint}"
    return text


def closing_line(report: Report, row: VariantSummary) -> str:
    """One comparison line per variant, in hyperfine's style."""
    if row.is_baseline:
        return f"{row.name}: baseline"
    if row.status in {"crash", "timeout"}:
        return f"{row.name}: {start_failure(row)}"
    if row.failed:
        return f"{row.name}: FAILED, not compared: {row.reason or 'no reason recorded'}"
    if row.reference is None and row.not_compared:
        return f"{row.name}: {row.not_compared}"
    comp = report.headline(row.name)
    if comp is None or comp.estimate is None:
        return f"{row.name}: no throughput measured to compare ({RUN_STATUS.get(row.status)})"
    return (
        f"{row.name}: {ratio_pm(comp.estimate)} x {comp.reference or report.baseline} "
        f"{comp.metric.label} at {comp.load} ({verdict_words(comp)})"
    )


def tail_line(report: Report, row: VariantSummary) -> str | None:
    """The tail latencies at the headline's load: ``fusion: TTFT p99 +3.1 % [...] (...)``."""
    comp = report.headline(row.name)
    if comp is None:
        return None
    parts = []
    for key in TAIL_METRICS:
        tail = report.get(row.name, comp.load, key)
        if tail is not None and tail.estimate is not None:
            said = delta(tail.estimate)
            if tail.estimate.has_interval:  # else delta already says why there is no call
                said += f" ({verdict_words(tail)})"
            parts.append(f"{tail.metric.label} {said}")
    if not parts:
        return None
    return f"{row.name}: {', '.join(parts)} at {comp.load}"


def capacity_lines(report: Report) -> list[str]:
    """The capacities under the SLO (find_max): each variant's per start, then each
    variant's against the baseline's with the interval over starts."""
    from servegate.report.capacity import sentence, start_words

    lines = [
        f"{row.variant}: capacity ({row.over}) at {row.slo} per start: {start_words(row)}"
        for row in report.capacity_rows
    ]
    return lines + [sentence(comp) for comp in report.capacity]


def noise_lines(report: Report) -> list[str]:
    """The A/A noise floor: the baseline against itself, per load, in a few lines."""
    if not report.noise_floor:
        return []
    splits = sorted({floor.split for floor in report.noise_floor})
    lines = [
        f"A/A noise floor: {report.baseline} against itself ({'; '.join(splits)}); "
        "a change smaller than this is noise"
    ]
    keys = (HEADLINE.key, *TAIL_METRICS)
    for load in report.loads:
        floors = [report.noise(load, key) for key in keys]
        parts = [
            f"{floor.metric.label} {delta(floor.estimate)}"
            for floor in floors
            if floor is not None and floor.estimate is not None
        ]
        if parts:
            lines.append(f"  {load}: {', '.join(parts)}")
    return lines


def noise_words(floor: NoiseFloor) -> str:
    """One A/A comparison: ``+0.4 % [-1.9, +2.6]``."""
    return delta(floor.estimate)


def placement_lines(report: Report) -> list[str]:
    """Which node measured what, when the campaign ran on a cluster: one line per variant,
    each start's node, GPU model and start number (none for a campaign run on one host)."""
    data = report.data
    if not any(a.node for a in data.attempts):
        return []
    by_id = {a.id: a for a in data.attempts}
    lines = ["Measured on:"]
    for row in report.variants:
        hosts = {p.attempt_id for p in data.points if p.variant == row.name}
        starts = sorted({a.id for a in data.attempts_of(row.name)} | (hosts & set(by_id)))
        parts = []
        for aid in starts:
            a = by_id[aid]
            where = f"{a.node or 'this host'} ({a.gpu_model or 'GPU model not known'})"
            start = f", start {a.start}" if a.start is not None else ""
            status = "" if a.status == "done" else f", {a.status}"
            parts.append(f"{where}{start}{status}")
        if parts:
            lines.append(f"  {row.name}: {'; '.join(parts)}")
    return lines


def single_start_note(report: Report) -> str | None:
    """Why some changes are not called: one server start per side, or too few requests."""
    notes = []
    if report.single_start:
        notes.append(
            "Note: changes measured on one server start per variant are not called "
            "(needs more starts): two starts of the same server can differ more than "
            "their repeats (a server can run in a slower regime for its whole life), and "
            "one start a side cannot tell that from the change; restart each variant "
            "(restarts = 2 or more in [bench]) to call them."
        )
    refused = report.not_estimable
    if refused and refused[0].estimate is not None and refused[0].estimate.refused:
        labels = sorted({c.metric.label for c in refused})
        notes.append(
            f"Not estimable: {', '.join(labels)}: {refused[0].estimate.refused} "
            "(measure more requests per point: requests or duration_s in [bench])."
        )
    return "\n".join(notes) or None


def verdict_words(comp: MetricComparison) -> str:
    """The call, with the run counts when there is no interval."""
    if comp.call == "1 run, no interval" and comp.estimate is not None:
        runs = min(comp.estimate.n_baseline, comp.estimate.n_variant)
        return f"{runs} run, no interval" if runs == 1 else comp.call
    return comp.call


def method_note(report: Report) -> str:
    """How the intervals were computed and a change called, in two sentences."""
    return (
        f"Intervals: {confidence_label(report)}; throughput: hierarchical percentile "
        f"bootstrap ({report.resamples} resamples, seed {report.seed}) over server starts, "
        "then the repeats of each start; latency percentiles: each start's percentile "
        "(its order statistics give the error within it), Student t across starts; both "
        "widened for few starts (Welch-Satterthwaite degrees of freedom), none with one "
        "start a side. A change is called better "
        "or worse only when its whole interval lies on one side of no change and it is at "
        f"least {report.min_effect * 100:g} %; otherwise no meaningful difference."
    )


def metric_label(key: str) -> str:
    """The label of the metric called ``key``."""
    return metric(key).label
