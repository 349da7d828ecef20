"""The largest load that meets an SLO: probes, the search, and the fitted capacity.

    capacity = find_max(template, SearchOptions(over="concurrency", low=1, high=256))
    capacity.value, capacity.low, capacity.high

The search probes exponentially from the lowest load (doubling) until a probe fails or
the top passes, then bisects between the highest pass and the lowest fail until the
bracket is within ``precision`` of its lower end (for concurrency, one user) or
``max_probes`` ran. Every probe is a full load point: warmed up, with prompts salted by
the probe's number (seed), after the server drained to idle; concurrency probes are
bound by a request count, rate probes by time; each stops early at a certain failure
(`servegate.bench.slo.StopRule`).

From the probes, per target a monotone (isotonic: pool-adjacent-violators, weighted by
requests) curve of the margin value / bound against load; the capacity is the load where
the first of these curves crosses 1 (linear between the probes around the crossing).
Its interval comes from a 95 % band around each probe's margin: a percentile's band by
order statistics (distribution-free: the ranks a binomial count of the requests puts
around it), a mean's by Student's t, attainment's by Wilson's interval, each with the
probe's *effective* number of requests (fewer than its count when requests sent close
together resemble each other, as a queue makes them: the autocorrelation time of their
ranks in send order). The interval's low end is where the band's upper edge crosses 1 (the load the
probes say is met even at the band's worst), its high end where the lower edge does.
The lowest load failing gives no value (``< lowest``); the top passing gives the top,
censored (``>= top``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np

from servegate._stats import t_quantile
from servegate.bench.result import PointResult
from servegate.bench.settings import BenchSettings
from servegate.bench.slo import Target, request_value_ms

LEVEL = 0.95  # the band around each probe's margin, and so the capacity's interval
MARGIN_CAP = 10.0  # a margin beyond this (a failed request, an early stop) fits as this
CLIFF_DROP = 0.10  # output throughput this far below a lower load's: a cliff
SATURATED = 0.90  # achieved below this share of the offered rate: saturated
MIN_JUDGED = 30  # fewer requests than this in a probe: too few to call saturation
DRAIN_S = 30.0  # the longest wait for the server's queue to empty between probes
LEAD_S = 1.5  # a rate probe's lead-in: the server fills to its steady state, uncounted
LOCAL_WINDOW = 0.15  # rate: probes this close to the crossing refine it by a line

Over = Literal["concurrency", "rate"]


@dataclass(frozen=True, slots=True, kw_only=True)
class SearchOptions:
    """What to search: the load kind, its range, the probe budget and the precision."""

    over: Over
    low: float
    high: float
    max_probes: int = 15
    precision: float = 0.05  # stop bisecting when the bracket is this share of its low end
    requests: int | None = None  # requests per concurrency probe [default: max(200, 4 x c)]
    duration_s: float = 30.0  # seconds of measured arrivals per rate probe
    lead_s: float = LEAD_S  # rate probes: arrivals sent first and not counted
    warmup: int | None = None  # warmup requests per probe [default: the concurrency, <= 64]


@dataclass(frozen=True, slots=True, kw_only=True)
class Probe:
    """One probe: its load, the outcome, and what the fit and the report need of it."""

    number: int  # 1-based, in the order run
    load: float
    result: PointResult
    met: bool
    stopped_early: bool
    offered_rate: float | None  # rate probes: the planned arrivals per second
    achieved_rate: float  # completed requests per second
    queue_growing: bool  # requests in flight grew through the probe (client side), or the
    # server still had requests waiting at the end

    @property
    def saturated(self) -> bool:
        """Achieved rate below the offered one, or the queue growing."""
        if self.queue_growing:
            return True
        if self.offered_rate is None or len(self.result.samples) < MIN_JUDGED:
            return False
        return self.achieved_rate < SATURATED * self.offered_rate

    def to_json(self) -> dict[str, Any]:
        """The probe as an entry of ``capacity.probes``."""
        slo = self.result.slo
        return {
            "probe": self.number,
            "load": self.load,
            "label": self.result.label,
            "met": self.met,
            "stopped_early": self.stopped_early,
            "requests": self.result.completed + self.result.failed,
            "failed": self.result.failed,
            "output_throughput": self.result.summary.get("output_throughput"),
            "offered_rate": self.offered_rate,
            "achieved_rate": self.achieved_rate,
            "queue_growing": self.queue_growing,
            "saturated": self.saturated,
            "slo": None if slo is None else slo.to_json(),
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class Capacity:
    """The answer: the largest load meeting the SLO, its interval, and every probe."""

    over: Over
    value: float | None  # None: even the lowest load failed
    low: float | None  # the interval's ends (95 %, from the probes' bands)
    high: float | None
    below_lowest: bool  # the lowest load probed failed: capacity < lowest
    censored: bool  # the top load passed: capacity >= top
    bracket: tuple[float | None, float | None]  # (highest pass, lowest fail) of the search
    probes: tuple[Probe, ...]
    cliff: dict[str, float] | None
    saturated: float | None  # the lowest load that saturated, if any
    limiting: str | None  # the target whose curve crosses first
    slo: str
    criterion: float | None
    note: str | None = None  # why the interval's low end reaches 0, when it does

    @property
    def words(self) -> str:
        """The capacity as a person reads it: ``c=48 [46, 50]``, ``< c=1``, ``>= c=256``."""
        unit = "c=" if self.over == "concurrency" else "rate="
        suffix = "" if self.over == "concurrency" else "/s"
        lowest = min(p.load for p in self.probes) if self.probes else 0.0
        if self.below_lowest or self.value is None:
            return f"< {unit}{lowest:g}{suffix} (the lowest load probed failed)"
        text = f"{unit}{self.value:g}{suffix}"
        if self.censored:
            return f">= {text} (the top load passed; raise --max-{self.over})"
        if self.low is not None and self.high is not None:
            text += f" [{self.low:g}, {self.high:g}]"
        return text

    def to_json(self) -> dict[str, Any]:
        """The ``capacity`` object of the bench JSON."""
        return {
            "over": self.over,
            "slo": self.slo,
            "criterion": "percentiles"
            if self.criterion is None
            else f"attainment>={self.criterion:g}",
            "value": self.value,
            "low": self.low,
            "high": self.high,
            "below_lowest": self.below_lowest,
            "censored": self.censored,
            "words": self.words,
            "bracket": {"passes": self.bracket[0], "fails": self.bracket[1]},
            "limiting_target": self.limiting,
            "interval_note": self.note,
            "cliff": self.cliff,
            "saturated": None if self.saturated is None else {"load": self.saturated},
            "probes": [p.to_json() for p in self.probes],
        }


class Search:
    """The probe sequence: doubling from ``low``, then bisection of the bracket."""

    def __init__(self, options: SearchOptions) -> None:
        self.options = options
        self.passes: float | None = None  # highest load that passed
        self.fails: float | None = None  # lowest load that failed
        self.done: list[float] = []

    def _step(self, load: float) -> float:
        return math.floor(load) if self.options.over == "concurrency" else load

    def next_load(self) -> float | None:
        """The next load to probe; None when the search is over."""
        o = self.options
        if len(self.done) >= o.max_probes:
            return None
        if not self.done:
            return o.low
        if self.fails is None:  # still doubling
            if self.passes is None or self.passes >= o.high:
                return None
            return min(self._step(self.passes * 2), o.high)
        if self.passes is None:
            return None  # the lowest load failed
        lo, hi = self.passes, self.fails
        if o.over == "concurrency":
            if hi - lo <= max(1, math.floor(o.precision * lo)):
                return None
            return float(math.floor((lo + hi) / 2))
        if hi - lo <= o.precision * lo:
            return None
        return (lo + hi) / 2

    def record(self, load: float, met: bool) -> None:
        """Narrow the bracket with a probe's outcome."""
        self.done.append(load)
        if met:
            self.passes = load if self.passes is None else max(self.passes, load)
        else:
            self.fails = load if self.fails is None else min(self.fails, load)


def probe_settings(
    template: BenchSettings, options: SearchOptions, load: float, number: int
) -> BenchSettings:
    """A probe's settings: its load, salted prompts, its warmup, bound by requests or time."""
    seed = template.seed * 1000 + number  # prompts and arrivals differ from probe to probe
    if options.over == "concurrency":
        c = int(load)
        warmup = options.warmup if options.warmup is not None else min(c, 64)
        return replace(
            template,
            concurrency=c,
            rate=None,
            requests=options.requests or max(200, 4 * c),
            duration_s=None,
            warmup=warmup,
            seed=seed,
            stop_early=True,
        )
    warmup = options.warmup if options.warmup is not None else min(64, max(1, math.ceil(load)))
    return replace(
        template,
        concurrency=None,
        rate=load,
        requests=None,
        duration_s=options.lead_s + options.duration_s,
        warmup=warmup,
        seed=seed,
        stop_early=True,
    )


def without_lead_in(result: PointResult, lead_s: float) -> PointResult:
    """A rate probe's point without the requests of its lead-in (planned before
    ``lead_s``): an open loop starting from an idle server reaches its steady state only
    after about one request's latency, and those first requests would look fast."""
    if lead_s <= 0:
        return result
    from servegate.bench import metrics
    from servegate.bench.slo import evaluate

    kept = [s for s in result.samples if s.scheduled_s is None or s.scheduled_s >= lead_s]
    summary = metrics.summarize(kept)
    completed = sum(1 for s in kept if s.ok)
    slo = result.slo
    if slo is not None:
        slo = evaluate(
            result.settings.slo,
            kept,
            duration_s=summary["duration_s"],
            criterion=result.settings.attainment,
            stopped_early=result.stopped_early,
        )
    return replace(
        result,
        samples=kept,
        summary=summary,
        completed=completed,
        failed=len(kept) - completed,
        failures=metrics.failures_by_kind(kept),
        slo=slo,
    )


def measure_probe(
    number: int,
    load: float,
    result: PointResult,
    offered: float | None,
    window_s: float | None = None,
) -> Probe:
    """A probe from its point: met, saturation and the queue's trend.

    ``window_s`` is a rate probe's planned measuring window (after its lead-in): a probe
    that ran to its end held its planned arrivals in exactly that long."""
    slo = result.slo
    duration = result.summary.get("duration_s") or 0.0
    achieved = result.completed / duration if duration > 0 else 0.0
    planned = [s.scheduled_s for s in result.samples if s.scheduled_s is not None]
    if offered is not None and len(planned) > 1 and max(planned) > min(planned):
        # the arrivals the schedule really held (Poisson: a 6 s window of 64/s holds 384
        # +- 20 of them, not 384), from their planned times, so a late client does not
        # lower it: their count over the window, which is unbiased; a probe stopped
        # early has no planned end, and (n - 1) / span reads about 1/n high (+0.3 to
        # +0.5 % at 250 arrivals: the first and last arrival lie inside the window)
        if window_s and not result.stopped_early:
            offered = len(planned) / window_s
        else:
            offered = (len(planned) - 1) / (max(planned) - min(planned))
    waiting = (
        result.server_metrics.get("gauges", {}).get("waiting") if result.server_metrics else None
    )
    return Probe(
        number=number,
        load=load,
        result=result,
        met=bool(slo is not None and slo.met),
        stopped_early=result.stopped_early,
        offered_rate=offered,
        achieved_rate=achieved,
        queue_growing=_in_flight_grows(result) or bool(waiting and offered is None and waiting > 0),
    )


def read_probe(number: int, load: float, result: PointResult, options: SearchOptions) -> Probe:
    """A probe's point as the search reads it: a rate probe without its lead-in, held at
    its planned rate over its window; a concurrency probe as measured."""
    if options.over != "rate":
        return measure_probe(number, load, result, None)
    kept = without_lead_in(result, options.lead_s)
    return measure_probe(number, load, kept, load, options.duration_s)


def _in_flight_grows(result: PointResult) -> bool:
    """Requests in flight, seen at each send, clearly higher in the last third than the first."""
    samples = result.samples
    if len(samples) < MIN_JUDGED or not result.settings.open_loop:
        return False
    sends = np.array([s.send_s for s in samples])
    ends = sends + np.array([s.end_s for s in samples])
    order = np.sort(ends)
    in_flight = np.arange(1, len(sends) + 1) - np.searchsorted(order, sends, side="right")
    third = len(in_flight) // 3
    first, last = float(in_flight[:third].mean()), float(in_flight[-third:].mean())
    return last > 1.5 * first + 2


def find_max(
    template: BenchSettings,
    options: SearchOptions,
    *,
    run: Callable[[BenchSettings], PointResult],
    between: Callable[[BenchSettings], None] | None = None,
    on_probe: Callable[[int, float, Search], None] | None = None,
    on_measured: Callable[[Probe], None] | None = None,
) -> Capacity:
    """Search for the largest load that meets ``template.slo``.

    ``run`` measures one probe (`run_point`, with the caller's progress); ``between``
    runs before each probe after the first (drain the server to idle); ``on_probe`` is
    told each probe's number and load, and the search (its bracket), before it runs;
    ``on_measured`` gets each probe once measured (a rate probe without its lead-in).
    """
    search = Search(options)
    probes: list[Probe] = []
    while (load := search.next_load()) is not None:
        number = len(probes) + 1
        if on_probe is not None:
            on_probe(number, load, search)
        settings = probe_settings(template, options, load, number)
        if probes and between is not None:
            between(settings)
        probe = read_probe(number, load, run(settings), options)
        result = probe.result
        probes.append(probe)
        search.record(load, probe.met)
        if on_measured is not None:
            on_measured(probe)
        if result.server_gone_s is not None:
            break  # the server stopped answering: no later probe can be measured
    return fit_capacity(probes, options, template.slo, template.attainment, search)


def fit_capacity(
    probes: Sequence[Probe],
    options: SearchOptions,
    targets: Sequence[Target],
    criterion: float | None,
    search: Search,
) -> Capacity:
    """The capacity from the probes: the isotonic fit's crossing and its interval from the
    probes' 95 % bands."""
    from servegate.bench.slo import slo_text

    # rate probes sit at the rate their schedule really held, not the nominal one
    def x(p: Probe) -> float:
        return p.offered_rate if options.over == "rate" and p.offered_rate else p.load

    ordered = sorted(probes, key=x)
    loads = np.array([x(p) for p in ordered])
    weights = np.array([max(1, p.result.completed + p.result.failed) for p in ordered], float)
    curves = _curves(ordered, targets, criterion)
    common: dict[str, Any] = {
        "over": options.over,
        "bracket": (search.passes, search.fails),
        "probes": tuple(probes),
        "cliff": _cliff(ordered),
        "saturated": next((p.load for p in ordered if p.saturated), None),
        "slo": slo_text(targets),
        "criterion": criterion,
    }
    if not ordered:
        return Capacity(value=None, low=None, high=None, below_lowest=False, censored=False,
                        limiting=None, **common)  # fmt: skip
    value, limiting = _crossing(loads, [(c.name, c.margins) for c in curves], weights)
    if options.over == "rate" and value is not None and value < loads[-1]:
        limit = next(c for c in curves if c.name == limiting)
        value = _local_crossing(loads, limit.margins, weights, value)
    # the band's upper edge crosses first (the low end), its lower edge last (the high end)
    worst, _ = _crossing(loads, [(c.name, c.upper) for c in curves], weights)
    best, _ = _crossing(loads, [(c.name, c.lower) for c in curves], weights)
    top = float(loads[-1])
    below = value is None
    censored = value is not None and value >= top
    low = high = None
    note = None
    if value is not None:
        low = min(value, 0.0 if worst is None else worst)
        high = max(value, top if best is None else best)
        if worst is None:
            note = next((c.unbounded for c in curves if c.unbounded), None)
        if options.over == "concurrency":
            value, low, high = (
                float(math.floor(value)),
                float(math.floor(low)),
                float(math.floor(high)),
            )
        else:
            value, low, high = (round(x, 3) for x in (value, low, high))
        if censored:  # the top probe passed: the answer is its load, as asked
            value = float(max(p.load for p in probes))
    return Capacity(value=value, low=low, high=high, below_lowest=below, censored=censored,
                    limiting=limiting, note=note, **common)  # fmt: skip


@dataclass(frozen=True, slots=True)
class Curve:
    """One target's margins (value / bound) at each probe, with their 95 % band."""

    name: str
    margins: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    unbounded: str | None = None  # a passing probe's band had no upper edge: why


def _curves(
    probes: Sequence[Probe], targets: Sequence[Target], criterion: float | None
) -> list[Curve]:
    """Per target (or for the attainment criterion): the margins at each probe and their
    bands. An early-stopped probe stays a failure (its margin and the band's upper edge
    above 1); its lower edge comes from the requests it measured before it stopped."""
    stopped = [p.stopped_early for p in probes]
    if criterion is not None:
        need = max(1e-9, 1.0 - criterion)
        rows = []
        for p, stop in zip(probes, stopped, strict=True):
            attained = _attained_all(p, targets)
            if not attained.size:
                rows.append((MARGIN_CAP, MARGIN_CAP, MARGIN_CAP))
                continue
            n = _effective(attained, p)
            got, low, high = _wilson(float(attained.mean()), n)
            # fewer attained: a larger margin; the band's edges swap
            margin, lower, upper = (min(MARGIN_CAP, (1.0 - a) / need) for a in (got, high, low))
            if stop:
                margin, upper = max(margin, 1.0 + 1e-6), max(upper, 1.0 + 1e-6)
            rows.append((margin, lower, upper))
        return [_curve(f"attainment>={criterion:g}", rows)]
    curves: list[Curve] = []
    for target in targets:
        rows = []
        unbounded: str | None = None
        for p, stop in zip(probes, stopped, strict=True):
            values = _values(p, target)
            band = _band(values, target, p)
            margin, lower, upper = (
                MARGIN_CAP if math.isnan(v) else min(MARGIN_CAP, v / target.bound_ms) for v in band
            )
            if stop:
                margin, upper = max(margin, 1.0 + 1e-6), max(upper, 1.0 + 1e-6)
            elif margin <= 1.0 and math.isinf(band[2]) and target.percentile is not None:
                unbounded = unbounded or _unbounded_why(target, len(values))
            rows.append((margin, lower, upper))
        curves.append(_curve(target.text, rows, unbounded))
    return curves


def _curve(name: str, rows: Sequence[tuple[float, ...]], unbounded: str | None = None) -> Curve:
    table = np.array(rows, dtype=float).reshape(-1, 3)
    return Curve(
        name=name, margins=table[:, 0], lower=table[:, 1], upper=table[:, 2], unbounded=unbounded
    )


def _unbounded_why(target: Target, requests: int) -> str:
    """Why a passing probe's percentile has no upper bound, and what gives it one."""
    q = (target.percentile or 0.0) / 100.0
    need = math.ceil(math.log((1.0 - LEVEL) / 2) / math.log(q)) if 0.0 < q < 1.0 else 0
    return (
        f"{target.text}: a passing probe of {requests} requests (fewer still counted as "
        f"independent when alike in send order) does not bound the p{target.percentile:g} "
        f"from above at 95 % (that needs {need} or more), so the interval's low end reaches "
        "0; raise --requests (rate probes: --duration) to narrow it"
    )


def _band(values: list[np.ndarray], target: Target, probe: Probe) -> tuple[float, float, float]:
    """The target's statistic over the probe's requests and its 95 % band (ms)."""
    pooled = np.concatenate(values) if values else np.empty(0)
    if pooled.size == 0:
        return math.nan, math.nan, math.nan
    per_request = np.array([v.max() if v.size else np.nan for v in values])
    n = _effective(per_request, probe)
    if target.percentile is None:  # the mean: Student's t with the effective count
        mean = float(pooled.mean())
        if pooled.size < 2 or not np.isfinite(pooled).all():
            return mean, mean, mean
        half = t_quantile(0.5 + LEVEL / 2, max(1, round(n) - 1)) * float(pooled.std(ddof=1))
        half /= math.sqrt(max(n, 1.0))
        return mean, mean - half, mean + half
    low_q, high_q = _quantile_band(target.percentile / 100.0, n)
    point = float(np.percentile(pooled, target.percentile))
    # beyond the data: no bound that way (0 ms below; above, a margin past every bound)
    low = 0.0 if low_q is None else float(np.percentile(pooled, 100.0 * low_q))
    high = math.inf if high_q is None else float(np.percentile(pooled, 100.0 * high_q))
    return point, min(point, low), max(point, high)


def _quantile_band(q: float, n: float) -> tuple[float | None, float | None]:
    """The levels (0..1, as numpy's linear percentile reads them) of the order statistics
    X(l) <= the q-quantile <= X(u) of n requests with 95 %: l the binomial count's 2.5 %
    point, u its 97.5 % point + 1. None where that order statistic lies beyond the data:
    no bound that way (a p99 of fewer than 368 requests has no upper one)."""
    size = max(2, round(n))
    tail = (1.0 - LEVEL) / 2
    lower = _binomial_ppf(tail, size, q)
    upper = _binomial_ppf(1.0 - tail, size, q) + 1
    return (
        None if lower < 1 else (lower - 1) / (size - 1),
        None if upper > size else (upper - 1) / (size - 1),
    )


def _binomial_ppf(level: float, n: int, p: float) -> int:
    """The smallest k with P(Binomial(n, p) <= k) >= level."""
    if p <= 0.0:
        return 0
    if p >= 1.0:
        return n
    log_p, log_q = math.log(p), math.log1p(-p)
    total = 0.0
    for k in range(n + 1):
        total += math.exp(
            math.lgamma(n + 1)
            - math.lgamma(k + 1)
            - math.lgamma(n - k + 1)
            + k * log_p
            + (n - k) * log_q
        )
        if total >= level:
            return k
    return n


def _wilson(share: float, n: float) -> tuple[float, float, float]:
    """A share and its 95 % Wilson interval with n (effective) trials."""
    z = 1.959963984540054
    n = max(n, 1.0)
    centre = (share + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(share * (1 - share) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return share, max(0.0, centre - half), min(1.0, centre + half)


def _effective(per_request: np.ndarray, probe: Probe) -> float:
    """The probe's effective number of requests: its count over the autocorrelation time
    of their ranks in send order (1 + 2 x the autocorrelations summed over Geyer's
    initial positive sequence), so that requests sent close together and alike, as a
    queue makes them, count for less; never more than the count."""
    samples = probe.result.samples
    n = per_request.size
    if n != len(samples) or n < 16:
        return float(n)
    order = np.argsort([s.send_s for s in samples], kind="stable")
    values = per_request[order]
    values = np.where(np.isnan(values), -np.inf, values)  # no value: lowest, kept in place
    ranks = np.argsort(np.argsort(values, kind="stable"), kind="stable").astype(float)
    ranks -= ranks.mean()
    size = 1 << (2 * n - 1).bit_length()
    spectrum = np.fft.rfft(ranks, size)
    acov = np.fft.irfft(spectrum * np.conj(spectrum), size)[:n]
    if acov[0] <= 0.0:
        return float(n)
    rho = acov / acov[0]
    tau, last = 1.0, math.inf
    for m in range((n - 1) // 2):
        pair = float(rho[2 * m + 1] + rho[2 * m + 2]) if 2 * m + 2 < n else float(rho[2 * m + 1])
        if pair <= 0.0:
            break
        pair = min(pair, last)  # the sequence of pairs kept non-increasing
        tau += 2.0 * pair
        last = pair
    return max(2.0, n / max(1.0, tau))


BIG = 1e12  # a failed request's value: beyond every bound, finite for numpy


def _values(probe: Probe, target: Target) -> list[np.ndarray]:
    """Per request, the values of ``target``'s metric (ITL: every gap; failed: BIG)."""
    out: list[np.ndarray] = []
    for s in probe.result.samples:
        if target.metric == "itl":
            if not s.ok or not s.chunks_s:
                out.append(np.array([BIG]))
            else:
                out.append(np.diff(np.asarray(s.chunks_s)) * 1000.0)
        else:
            v = request_value_ms(s, target.metric)
            out.append(np.empty(0) if v is None else np.array([min(v, BIG)]))
    return out


def _attained_all(probe: Probe, targets: Sequence[Target]) -> np.ndarray:
    def ok(s: Any) -> bool:
        if not s.ok:
            return False
        for t in targets:
            v = request_value_ms(s, t.metric)
            if v is not None and v > t.bound_ms:
                return False
        return True

    return np.array([ok(s) for s in probe.result.samples], dtype=float)


def isotonic(y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Pool-adjacent-violators: the non-decreasing fit of ``y`` with weights ``w``."""
    blocks: list[list[float]] = []  # [mean, weight, count]
    for value, weight in zip(y, w, strict=True):
        blocks.append([float(value), float(weight), 1])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            m2, w2, n2 = blocks.pop()
            m1, w1, n1 = blocks.pop()
            blocks.append([(m1 * w1 + m2 * w2) / (w1 + w2), w1 + w2, n1 + n2])
    return np.array([b[0] for b in blocks for _ in range(int(b[2]))])


def _crossing(
    loads: np.ndarray, curves: Sequence[tuple[str, np.ndarray]], weights: np.ndarray
) -> tuple[float | None, str | None]:
    """The lowest load where a fitted curve crosses 1 (the top when none does; None when
    the lowest already fails), and the curve that crossed."""
    best: float | None = float(loads[-1])
    limiting: str | None = None
    for name, margins in curves:
        fit = isotonic(margins, weights)
        above = np.nonzero(fit > 1.0)[0]
        if above.size == 0:
            continue
        k = int(above[0])
        if k == 0:
            return None, name
        x0, x1, f0, f1 = loads[k - 1], loads[k], fit[k - 1], fit[k]
        cross = float(x0 + (1.0 - f0) / (f1 - f0) * (x1 - x0))
        if best is None or cross < best:
            best, limiting = cross, name
    return best, limiting


def _local_crossing(
    loads: np.ndarray, margins: np.ndarray, weights: np.ndarray, cross: float
) -> float:
    """A rate search's crossing from every probe near it, not only the two around it.

    The bisection leaves several probes within a few per cent of the capacity, each a
    noisy mean of a few seconds of arrivals (and each at the rate its schedule really
    held, so they need not lie in order). A straight line through those within
    ``LOCAL_WINDOW`` of the isotonic crossing, weighted by their requests, crosses 1
    where their noise averages out; on a simulated convex latency curve with 2 % noise a
    probe it cut the spread of the answer by a quarter (bias -0.3 %). Kept only with
    three or more such probes, on both sides of 1, a rising line, and a crossing inside
    the window; else the isotonic crossing stands."""
    near = np.abs(loads / cross - 1.0) <= LOCAL_WINDOW
    x, y, w = loads[near], margins[near], weights[near]
    if x.size < 3 or not (y <= 1.0).any() or not (y > 1.0).any():
        return cross
    sw = np.sqrt(w)
    design = np.column_stack([np.ones_like(x), x]) * sw[:, None]
    (b0, b1), *_ = np.linalg.lstsq(design, y * sw, rcond=None)
    if not b1 > 0:
        return cross
    local = float((1.0 - b0) / b1)
    return local if abs(local / cross - 1.0) <= LOCAL_WINDOW else cross


def _cliff(probes: Sequence[Probe]) -> dict[str, float] | None:
    """The first load whose output throughput fell clearly below a lower load's peak
    (probes stopped early, or of fewer than `MIN_JUDGED` requests, are left out)."""
    peak_load, peak = 0.0, 0.0
    for p in probes:
        if p.stopped_early or len(p.result.samples) < MIN_JUDGED:
            continue
        tput = float(p.result.summary.get("output_throughput") or 0.0)
        if peak > 0 and tput < (1.0 - CLIFF_DROP) * peak:
            return {
                "load": p.load,
                "output_throughput": tput,
                "peak_load": peak_load,
                "peak_output_throughput": peak,
            }
        if tput > peak:
            peak_load, peak = p.load, tput
    return None


def drain(settings: BenchSettings, *, limit_s: float = DRAIN_S) -> None:
    """Wait until the server reports nothing running or waiting (its /metrics gauges), at
    most ``limit_s``; a server without those gauges is taken as idle once the client's own
    requests have ended (they have, when a probe returns)."""
    import time

    from servegate.bench.server_metrics import metric_names, scrape

    url = (
        settings.metrics_url if settings.metrics_url is not None else settings.base_url + "/metrics"
    )
    if not url:
        return
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        found = scrape(url)
        names = metric_names(settings.engine, found)
        if found is None or not names:
            return
        levels = [found.values.get(names[k]) for k in ("running", "waiting") if k in names]
        if not any(levels):
            return
        time.sleep(0.05)
