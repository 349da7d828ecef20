"""``servegate tune``: a flag search with Optuna, each trial a normal attempt of the campaign.

A campaign file with a ``[search]`` table (parameters in the ``[matrix]`` grammar: args,
env, command and name templates whose placeholders are the parameters) is searched:
Optuna's sampler proposes a configuration, the campaign runs it as one variant (the same
preflight, launch, gate, benchmark and store as ``servegate run``), and the objective is
read back from the store. The store is the only record: ``--resume`` rebuilds the study
from the variants stored under the campaign, their names parsed with the name template.

- A trial whose server crashed or timed out is infeasible: told to Optuna through its
  constraints (``TPESampler(constraints_func=...)``), never as a score.
- A parameter declared ``memory = "increasing"`` lets a configuration be skipped without
  a start when it is at least an out-of-memory one (an OOM while starting) in every such
  parameter and equal in all others; it is told to Optuna as infeasible too.
- Budgets: ``max_trials`` and ``gpu_hours`` (a trial costs its attempts' wall time, start
  to stop, times ``max(gpus, 1)``).

    outcome = run_tune(Path("search.toml"), Path("servegate.db"), TuneOptions(max_trials=20))

The library prints nothing: each trial is told to ``on_trial`` and every attempt's
events go to the ``CampaignProgress`` given, as for a campaign.
"""

from __future__ import annotations

import copy
import importlib.util
import inspect
import math
import re
import shlex
import statistics
import tomllib
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from servegate.campaign.config import Campaign, ServerGroup
from servegate.campaign.interrupt import Interrupted, Interrupts
from servegate.campaign.progress import CampaignProgress
from servegate.campaign.rounds import RunOptions, StartPool, run_campaign
from servegate.errors import ConfigError, UsageError
from servegate.report.compare import TUNE_RUNG
from servegate.store import Store

__all__ = [
    "OBJECTIVES",
    "Finalist",
    "Param",
    "Search",
    "SearchSpace",
    "Trial",
    "TuneOptions",
    "TuneOutcome",
    "dominated",
    "load_search",
    "run_tune",
]

OBJECTIVES = ("capacity", "goodput", "throughput")
SAMPLERS = ("tpe", "random", "qmc", "gp", "nsga2")  # Optuna's samplers by name
NSGA2_POPULATION = 10  # NSGA-II's generation: the first is drawn at random (seeded)
_PARAM_KEYS = {"choices", "low", "high", "log", "step", "when", "memory", "type", "cache"}
_SEARCH_KEYS = {"name", "args", "env", "command", "objective", "sampler", "params", "fidelity"}
NONE = "none"  # a parameter whose condition is not met, in names
STARTUP_TRIALS = 5  # TPE's first trials are drawn at random (seeded), then it models
IDLE_PROPOSALS = 50  # proposals in a row needing no start (reused, skipped) end the search
RUNG = TUNE_RUNG  # a trial's short rung is stored as the variant NAME~rung1
# [search.fidelity]: the [bench] settings a short rung may change, and the pruning rule's keys
FIDELITY_BENCH = (
    "requests",
    "duration_s",
    "warmup",
    "repeats",
    "concurrency",
    "rate",
    "max_probes",
    "precision",
    "max_concurrency",
    "max_rate",
)
FIDELITY_KEYS = {*FIDELITY_BENCH, "keep", "min_trials"}


@dataclass(frozen=True, slots=True, kw_only=True)
class Param:
    """One searched parameter: choices, or an int or float range."""

    name: str
    choices: tuple[Any, ...] = ()
    low: float | None = None
    high: float | None = None
    integer: bool = False
    log: bool = False
    step: float | None = None
    when: tuple[tuple[str, Any], ...] = ()  # present only when these have these values
    memory: bool = False  # memory = "increasing": larger values use more memory
    cache: bool = False  # cache = true: a new value compiles new kernels (a cold start)

    def active(self, values: Mapping[str, Any]) -> bool:
        """Whether this parameter is set, given the values chosen before it."""
        return all(values.get(name) == value for name, value in self.when)

    def parse(self, text: str) -> Any:
        """The value that ``text`` (a stored name's part) stands for."""
        if self.choices:
            for choice in self.choices:
                if _text(choice) == text:
                    return choice
            raise ValueError(text)
        return int(text) if self.integer else float(text)


@dataclass(frozen=True, slots=True, kw_only=True)
class Fidelity:
    """``[search.fidelity]``: the short rung each trial runs first, and who goes on.

    A trial is promoted to the full measurement when its rung value is among the best
    ``keep`` share (rounded up) of the rung values so far, its own included; the first
    ``min_trials`` rung values are all promoted. Otherwise it is pruned at rung 1.
    """

    bench: dict[str, Any]  # the [bench] settings of the short rung
    keep: float = 1 / 3
    min_trials: int = 3

    def promotes(self, value: float, earlier: Sequence[float]) -> bool:
        """Whether a rung value goes on to the full measurement, given the earlier ones."""
        count = len(earlier) + 1
        if count <= self.min_trials:
            return True
        rank = 1 + sum(v > value for v in earlier)
        return rank <= max(1, math.ceil(self.keep * count))


@dataclass(frozen=True, slots=True, kw_only=True)
class SearchSpace:
    """The ``[search]`` table, checked."""

    params: tuple[Param, ...]
    name: str  # the variant name template: every parameter's placeholder
    args: str | list[str]
    env: dict[str, Any]
    command: str | None
    objective: str
    sampler: str
    fidelity: Fidelity | None = None  # [search.fidelity]: a short rung first, then the promoted

    def cache_key(self, values: Mapping[str, Any]) -> tuple[Any, ...]:
        """The values of the ``cache = true`` parameters: equal keys share a warm cache."""
        return tuple(values.get(p.name) for p in self.params if p.cache)

    def name_of(self, values: Mapping[str, Any]) -> str:
        """The variant name of a configuration (an inactive parameter reads ``none``)."""
        filled = {p.name: _text(values[p.name]) if p.name in values else NONE for p in self.params}
        return _fill(self.name, filled)

    def values_of(self, name: str) -> dict[str, Any] | None:
        """The configuration a stored variant name stands for; None for another name."""
        pattern = ""
        pos = 0
        for found in re.finditer(r"\{(\w+)\}", self.name):
            pattern += re.escape(self.name[pos : found.start()])
            pattern += f"(?P<{found.group(1)}>.+?)"
            pos = found.end()
        pattern += re.escape(self.name[pos:])
        match = re.fullmatch(pattern, name)
        if match is None:
            return None
        values: dict[str, Any] = {}
        try:
            for param in self.params:
                text = match.group(param.name)
                if text == NONE and not param.active(values):
                    continue
                values[param.name] = param.parse(text)
        except ValueError:
            return None
        return values


@dataclass(frozen=True, slots=True, kw_only=True)
class TuneOptions:
    """How long to search, and how."""

    max_trials: int | None = None
    gpu_hours: float | None = None
    resume: bool = False
    seed: int = 0
    log_dir: Path | None = None
    finalists: int = 0  # the best N trials restarted with the baseline at the end
    finalist_starts: int = 3  # fresh starts each, interleaved in seeded rounds
    sampler: str | None = None  # one of SAMPLERS, in place of [search] sampler
    ray: str | None = None  # a Ray cluster's address, in place of [cluster] ray


@dataclass(frozen=True, slots=True, kw_only=True)
class Finalist:
    """A finalist's objective over fresh starts (not the trial that chose it)."""

    name: str
    trial: int  # 0: the baseline
    values: tuple[float, ...]  # one per fresh start
    mean: float | None
    low: float | None  # the 95 % interval of the mean over starts (Student's t)
    high: float | None
    ratio: float | None  # mean / the baseline's mean
    ratio_low: float | None = None  # its 95 % Fieller interval over the fresh starts
    ratio_high: float | None = None

    def to_json(self) -> dict[str, Any]:
        """One finalist of ``--json``."""
        return {
            "variant": self.name,
            "trial": self.trial,
            "starts": list(self.values),
            "mean": self.mean,
            "interval": None if self.low is None else [self.low, self.high],
            "vs_baseline": {"ratio": self.ratio, "low": self.ratio_low, "high": self.ratio_high},
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class Trial:
    """One trial: a configuration measured, infeasible, or skipped without a start."""

    number: int  # 0: the baseline
    name: str
    values: dict[str, Any]
    state: str  # "feasible", "infeasible" (crash, timeout), "skipped" (memory), "reused",
    # "pruned" (stopped after its short rung, [search.fidelity])
    value: float | None  # the objective; None unless feasible
    kind: str | None = None  # the crash kind (oom, ...) or "timeout"
    cause: str | None = None
    cost_s: float = 0.0  # wall seconds of its attempts, start to stop
    skipped_by: str | None = None  # the OOM-ed trial that dominates it
    resumed: bool = False  # read back from the store, not measured by this run
    rung: int | None = None  # with [search.fidelity]: the rung it ended at (1: the short one)
    rung_value: float | None = None  # the objective at the short rung

    def to_json(self) -> dict[str, Any]:
        """One line of ``--events-file``: the trial as scripts read it."""
        return {
            "trial": self.number,
            "variant": self.name,
            "params": self.values,
            "state": self.state,
            "value": self.value,
            "kind": self.kind,
            "cause": self.cause,
            "cost_s": round(self.cost_s, 3),
            "skipped_by": self.skipped_by,
            "resumed": self.resumed,
            "rung": self.rung,
            "rung_value": self.rung_value,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class TuneOutcome:
    """What the search found, and the exit code that follows."""

    campaign: str
    objective: str
    trials: tuple[Trial, ...]
    gpu_hours: float
    signum: int | None = None
    stopped_by: str = ""  # one sentence: the budget that ended it
    finalists: tuple[Finalist, ...] = ()  # with TuneOptions.finalists, best first

    @property
    def best(self) -> Trial | None:
        """The feasible trial with the highest objective (ties: the earliest)."""
        feasible = [t for t in self.trials if t.state == "feasible" and t.value is not None]
        return max(feasible, key=lambda t: (t.value, -t.number), default=None)

    @property
    def exit_code(self) -> int:
        """0 with a best; 1 when every trial was infeasible; 128 + signal interrupted."""
        if self.signum is not None:
            return 128 + self.signum
        return 0 if self.best is not None else 1

    def to_json(self) -> dict[str, Any]:
        """The ``--json`` document."""
        best = self.best
        return {
            "schema": "servegate.tune/1",
            "campaign": self.campaign,
            "objective": self.objective,
            "best": None if best is None else best.to_json(),
            "trials": [t.to_json() for t in self.trials],
            "infeasible": sum(t.state == "infeasible" for t in self.trials),
            "skipped": sum(t.state == "skipped" for t in self.trials),
            "pruned": sum(t.state == "pruned" for t in self.trials),
            "gpu_hours": round(self.gpu_hours, 6),
            "stopped_by": self.stopped_by,
            "finalists": [f.to_json() for f in self.finalists],
            "interrupted": self.signum is not None,
            "exit_code": self.exit_code,
        }


# --- the file ------------------------------------------------------------------------------


def load_search(path: Path) -> tuple[dict[str, Any], SearchSpace, str]:
    """The campaign file's tables without ``[search]``, the search, and the text."""
    where = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such campaign file; check the path.", path=where) from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(
            f"{where}: TOML syntax error: {exc}; fix that line.", path=where
        ) from None
    raw = data.pop("search", None)
    if not isinstance(raw, dict):
        raise ConfigError(
            f"{where}: servegate tune needs a [search] table; add one with a parameter, e.g. "
            '[search.params.fraction] low = 0.8, high = 0.95 and args = "--x {fraction}".',
            path=where,
            key="search",
        )
    if data.get("matrix") is not None:
        raise ConfigError(
            f"{where}: [matrix] and [search] do not mix; run the grid with servegate run and "
            "remove [matrix] here.",
            path=where,
            key="matrix",
        )
    space = _space(raw, where)
    data.setdefault("variant", [])
    baseline = data.get("campaign", {}).get("baseline")
    if baseline is not None and not any(v.get("name") == baseline for v in data["variant"]):
        data["variant"].append({"name": baseline})  # the command as written: trial 0
    base = _campaign_of(data, text, path, None)  # every mistake of the rest, before a start
    if space.fidelity is not None:  # the short rung's [bench] too, named as the rung's
        try:
            _campaign_of(_rung_data(data, space.fidelity), text, path, None)
        except ConfigError as exc:
            detail = str(exc).split(": ", 1)[-1].removeprefix("bench.")
            raise ConfigError(
                f"{where}: [search] fidelity.{detail}", path=where, key="search.fidelity"
            ) from None
    plan = base.variant(base.baseline).bench
    if space.objective == "capacity" and plan.search is None:
        raise ConfigError(
            f'{where}: [search] objective = "capacity" is the largest load meeting [slo]; add '
            '[bench] find_max = "concurrency" and an [slo], or choose objective = "throughput".',
            path=where,
            key="search.objective",
        )
    if space.objective == "goodput" and not plan.slo:
        raise ConfigError(
            f'{where}: [search] objective = "goodput" counts the requests meeting [slo]; add '
            '[slo] with a target such as ttft_p99 = "500ms".',
            path=where,
            key="search.objective",
        )
    return data, space, text


def _space(raw: dict[str, Any], where: str) -> SearchSpace:
    def bad(key: str, fix: str) -> ConfigError:
        return ConfigError(f"{where}: [search] {key}: {fix}", path=where, key=f"search.{key}")

    for key in raw:
        if key not in _SEARCH_KEYS:
            raise bad(key, f"unknown key; use {', '.join(sorted(_SEARCH_KEYS))}.")
    params_raw = raw.get("params")
    if not isinstance(params_raw, dict) or not params_raw:
        raise bad("params", "add at least one parameter, e.g. [search.params.fraction].")
    params: list[Param] = []
    for name, spec in params_raw.items():
        if not re.fullmatch(r"[A-Za-z_]\w*", name):
            raise bad(f"params.{name}", "a parameter's name is a placeholder: letters, digits, _.")
        if not isinstance(spec, dict):
            raise bad(f"params.{name}", "write a table, e.g. { choices = [1, 2] }.")
        params.append(_param(name, spec, bad, [p.name for p in params]))
    objective = raw.get("objective", "capacity")
    if objective not in OBJECTIVES:
        raise bad("objective", f"{objective!r} is not one; choose {', '.join(OBJECTIVES)}.")
    sampler = raw.get("sampler", "tpe")
    if sampler not in SAMPLERS:
        raise bad("sampler", f"{sampler!r} is not one; choose {_or(SAMPLERS)}.")
    names = [p.name for p in params]
    template = raw.get("name") or ",".join(f"{n}={{{n}}}" for n in names)
    used = set(re.findall(r"\{(\w+)\}", template))
    missing = [n for n in names if n not in used]
    if missing:
        raise bad(
            "name",
            f"the name template must name every parameter (resume reads trials back from "
            f"it); add {', '.join('{' + n + '}' for n in missing)}.",
        )
    args = raw.get("args", "")
    command = raw.get("command")
    env = raw.get("env", {})
    texts = [args if isinstance(args, str) else " ".join(map(str, args)), command or ""]
    texts += [str(v) for v in env.values()]
    if not any(f"{{{n}}}" in t for n in names for t in texts):
        raise bad("args", "no parameter is used; put {NAME} in args, env or command.")
    return SearchSpace(
        params=tuple(params),
        name=template,
        args=args,
        env=dict(env),
        command=command,
        objective=objective,
        sampler=sampler,
        fidelity=_fidelity(raw.get("fidelity"), bad),
    )


def _fidelity(raw: Any, bad: Callable[[str, str], ConfigError]) -> Fidelity | None:
    """``[search.fidelity]``, checked (its [bench] values are checked with the campaign)."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise bad("fidelity", "write a table, e.g. [search.fidelity] requests = 32.")
    for key in raw:
        if key not in FIDELITY_KEYS:
            raise bad(f"fidelity.{key}", f"unknown key; use {', '.join(sorted(FIDELITY_KEYS))}.")
    bench = {k: raw[k] for k in FIDELITY_BENCH if k in raw}
    if not bench:
        raise bad(
            "fidelity",
            "say what makes the rung short, e.g. requests = 32 (a load point) or max_probes = 4 "
            "(a capacity search).",
        )
    keep = _number(raw.get("keep", 1 / 3))
    if keep is None or not 0 < keep < 1:
        raise bad("fidelity.keep", "the share of rung values promoted is a number in (0, 1).")
    least = raw.get("min_trials", 3)
    if isinstance(least, bool) or not isinstance(least, int) or least < 1:
        raise bad("fidelity.min_trials", "give a whole number >= 1.")
    return Fidelity(bench=bench, keep=keep, min_trials=least)


def _param(
    name: str, spec: dict[str, Any], bad: Callable[[str, str], ConfigError], before: Sequence[str]
) -> Param:
    key = f"params.{name}"
    for k in spec:
        if k not in _PARAM_KEYS:
            raise bad(f"{key}.{k}", f"unknown key; use {', '.join(sorted(_PARAM_KEYS))}.")
    memory = spec.get("memory")
    cache = spec.get("cache", False)
    if not isinstance(cache, bool):
        raise bad(f"{key}.cache", "write cache = true (a new value starts cold) or leave it out.")
    if memory not in (None, "increasing"):
        raise bad(f"{key}.memory", 'the one value is "increasing" (larger uses more memory).')
    when = spec.get("when", {})
    if not isinstance(when, dict) or any(n not in before for n in when):
        raise bad(
            f"{key}.when",
            'name parameters declared before this one, e.g. when = { backend = "fa3" }.',
        )
    if "choices" in spec:
        choices = spec["choices"]
        if not isinstance(choices, list) or not choices or "low" in spec or "high" in spec:
            raise bad(f"{key}.choices", "give a non-empty list, without low and high.")
        if memory and not all(
            isinstance(c, int | float) and not isinstance(c, bool) for c in choices
        ):
            raise bad(f"{key}.memory", "a memory parameter's choices must be numbers.")
        return Param(
            name=name,
            choices=tuple(choices),
            when=tuple(when.items()),
            memory=bool(memory),
            cache=cache,
        )
    low, high = _number(spec.get("low")), _number(spec.get("high"))
    if low is None or high is None or low >= high:
        raise bad(key, "give choices = [...], or low and high numbers with low < high.")
    whole = isinstance(spec.get("low"), int) and isinstance(spec.get("high"), int)
    integer = spec.get("type", "int" if whole else "float")
    if integer not in ("int", "float"):
        raise bad(f"{key}.type", 'choose "int" or "float".')
    log = bool(spec.get("log", False))
    if log and low <= 0:
        raise bad(f"{key}.log", "a log range needs low > 0.")
    step = spec.get("step")
    if step is not None and (_number(step) is None or step <= 0 or log):
        raise bad(f"{key}.step", "a step is a number > 0, and a log range takes none.")
    return Param(
        name=name,
        low=low,
        high=high,
        integer=integer == "int",
        log=log,
        step=step,
        when=tuple(when.items()),
        memory=bool(memory),
        cache=cache,
    )


def _number(value: Any) -> float | None:
    """A finite TOML number as a float; None for anything else (true is no number)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _campaign_of(
    data: dict[str, Any], text: str, path: Path, variant: dict[str, Any] | None
) -> Campaign:
    """The campaign of the file's tables, with the trial's variant added."""
    from pydantic import ValidationError

    from servegate.campaign.config import _resolve
    from servegate.campaign.schema import CampaignFile, config_error

    data = copy.deepcopy(data)
    if variant is not None:
        data["variant"] = [*data["variant"], variant]
    try:
        model = CampaignFile.model_validate(data)
    except ValidationError as exc:
        raise config_error(exc, data, text, str(path)) from None
    return _resolve(model, text=text, path=path, where=str(path))


def _trial_variant(space: SearchSpace, values: Mapping[str, Any]) -> dict[str, Any]:
    """The trial's ``[[variant]]`` table: the templates with the values as vars.

    A parameter that is not set (its ``when`` not met) takes its argument out of ``args``
    (and the flag before it when the argument is the placeholder alone: ``--tile {tile}``
    drops both) and its key out of ``env``.
    """
    unset = {p.name for p in space.params if p.name not in values}
    filled = {p.name: _text(values[p.name]) for p in space.params if p.name in values}
    filled.update(dict.fromkeys(unset, ""))
    args = shlex.split(space.args) if isinstance(space.args, str) else list(space.args)
    kept: list[str] = []
    for token in args:
        fields = set(re.findall(r"\{(\w+)\}", token))
        if fields & unset:
            if re.fullmatch(r"\{\w+\}", token) and kept and kept[-1].startswith("-"):
                kept.pop()
            continue
        kept.append(token)
    table: dict[str, Any] = {"name": space.name_of(values), "args": kept, "vars": filled}
    env = {
        key: value
        for key, value in space.env.items()
        if not set(re.findall(r"\{(\w+)\}", str(value))) & unset
    }
    if env:
        table["env"] = env
    if space.command is not None:
        table["command"] = space.command
    return table


def distributions(optuna: Any, space: SearchSpace, values: Mapping[str, Any]) -> dict[str, Any]:
    """Optuna's distribution of each parameter set in ``values`` (a trial's search space)."""
    dist = optuna.distributions
    out: dict[str, Any] = {}
    for p in space.params:
        if p.name not in values:
            continue
        if p.choices:
            out[p.name] = dist.CategoricalDistribution(list(p.choices))
        elif p.integer:
            step = int(p.step or 1)
            out[p.name] = dist.IntDistribution(
                int(p.low or 0), int(p.high or 0), log=p.log, step=step
            )
        else:
            out[p.name] = dist.FloatDistribution(
                p.low or 0.0, p.high or 0.0, log=p.log, step=p.step
            )
    return out


# --- the memory skip -----------------------------------------------------------------------


def dominated(space: SearchSpace, values: Mapping[str, Any], oom: Sequence[Trial]) -> Trial | None:
    """The OOM-at-start trial that ``values`` is at least as large as in every memory
    parameter and equal to in all others; None when there is none."""
    memory = [p for p in space.params if p.memory]
    if not memory:
        return None
    for trial in oom:
        if set(trial.values) != set(values):
            continue
        same = all(
            values[p.name] == trial.values[p.name]
            for p in space.params
            if not p.memory and p.name in values
        )
        larger = all(values[p.name] >= trial.values[p.name] for p in memory if p.name in values)
        if same and larger:
            return trial
    return None


# --- the search ----------------------------------------------------------------------------


def run_tune(
    path: Path,
    db: Path,
    options: TuneOptions,
    *,
    progress: CampaignProgress | None = None,
    on_trial: Callable[[Trial, TuneOutcome], None] | None = None,
) -> TuneOutcome:
    """Search the ``[search]`` space of the campaign file at ``path`` into ``db``.

    Trial 0 is the campaign's baseline (measured first, not part of the study). Raises
    UsageError / ConfigError before anything starts for bad input; crashes and timeouts
    of servers are trials, not errors.
    """
    try:
        import optuna
    except ImportError:
        raise UsageError("servegate tune needs Optuna; pip install 'servegate[tune]'.") from None

    if options.max_trials is None and options.gpu_hours is None:
        raise UsageError("servegate tune needs a budget; add --max-trials N or --gpu-hours H.")
    if db.is_dir():
        raise UsageError(f"--db {db} is a folder; pass a database file such as {db}/servegate.db.")
    data, space, text = load_search(path)
    base = _campaign_of(data, text, path, None)
    progress = progress or CampaignProgress()
    # the sampler is checked before the store is touched: a bad name creates nothing
    search = Search(optuna, space, options, campaign=base.name, gpus=max(base.gpus, 1))
    with Store.open(db) as store:
        info = store.find_campaign(base.name)
        stored = [] if info is None else _stored_trials(store, info.id, space, base)
    if stored and not options.resume:
        raise UsageError(
            f"campaign {base.name!r} already has trials in {db}; continue with --resume, or "
            "rename [campaign] name for a new search."
        )
    address = options.ray or base.ray
    cluster: StartPool | None = None
    if address is not None:  # joined once for every trial; its servers are the slots
        from servegate.campaign.cluster import connect

        cluster = connect(address, base)
        progress.info(cluster.describe())
        if len(cluster.models) > 1:
            models = ", ".join(m or "no GPU model" for m in cluster.models)
            cluster.close()
            raise UsageError(
                f"servegate tune compares trials measured on one GPU model, and the cluster "
                f"at {address} fits a server on {models}; pin one with [server] resources = "
                '{ "accelerator_type:MODEL" = 0.001 }.'
            )
    try:
        slots = 1 if cluster is None else max(1, sum(cluster.capacity.values()))
        if slots > 1:
            search = Search(
                optuna, space, options, campaign=base.name, gpus=max(base.gpus, 1), parallel=slots
            )
        for earlier in stored:
            search.restore(earlier)
        with Interrupts(notify=progress.notice) as interrupts:
            try:
                outcome = _trials(
                    search,
                    data=data,
                    text=text,
                    path=path,
                    db=db,
                    interrupts=interrupts,
                    progress=progress,
                    on_trial=on_trial,
                    cluster=cluster,
                    slots=slots,
                )
                if outcome.signum is not None or options.finalists <= 0:
                    return outcome
                return _finalists(
                    outcome,
                    space,
                    data=data,
                    text=text,
                    path=path,
                    db=db,
                    options=options,
                    progress=progress,
                    interrupts=interrupts,
                    cluster=cluster,
                )
            except Interrupted as exc:  # between two starts: nothing was in flight
                search.abandon()
                return search.outcome(signum=exc.signum)
    finally:
        if cluster is not None:
            cluster.close()


def _finalists(
    outcome: TuneOutcome,
    space: SearchSpace,
    *,
    data: dict[str, Any],
    text: str,
    path: Path,
    db: Path,
    options: TuneOptions,
    progress: CampaignProgress,
    interrupts: Interrupts,
    cluster: StartPool | None = None,
) -> TuneOutcome:
    """The best ``options.finalists`` trials and the baseline, each started
    ``finalist_starts`` more times in seeded interleaved rounds; their objective over
    those fresh starts only, with an interval over starts."""
    import dataclasses

    ranked = sorted(
        (t for t in outcome.trials if t.number > 0 and t.state == "feasible"),
        key=lambda t: (-(t.value or 0.0), t.number),
    )[: options.finalists]
    base_trial = next((t for t in outcome.trials if t.number == 0), None)
    chosen = ([base_trial] if base_trial is not None else []) + ranked
    if len(chosen) < 2:
        return outcome
    extra = [_trial_variant(space, t.values) for t in ranked]
    campaign = _campaign_of_many(data, text, path, extra).only([t.name for t in chosen])
    run_options = RunOptions(
        resume=True,
        restarts=1 + options.finalist_starts,
        seed=options.seed,
        log_dir=options.log_dir,
    )
    with Store.open(db) as store:
        ran = run_campaign(
            campaign,
            store,
            options=run_options,
            progress=progress,
            interrupts=interrupts,
            cluster=cluster,
        )
        if ran.signum is not None:
            return dataclasses.replace(outcome, signum=ran.signum)
        per_start = {
            t.name: _per_start(store, ran.campaign_id, space.objective, t.name) for t in chosen
        }
    base_mean = None
    base_starts: dict[int, float] = {}
    finalists = []
    for t in chosen:
        starts = {start: v for start, v in sorted(per_start[t.name].items()) if start > 1}
        fresh = list(starts.values())
        mean, low, high = _interval(fresh)
        if t.number == 0:
            base_mean, base_starts = mean, starts
        ratio = None if mean is None or not base_mean else mean / base_mean
        ratio_low, ratio_high = _ratio_interval(starts, base_starts)
        finalists.append(
            Finalist(
                name=t.name,
                trial=t.number,
                values=tuple(fresh),
                mean=mean,
                low=low,
                high=high,
                ratio=ratio,
                ratio_low=ratio_low,
                ratio_high=ratio_high,
            )
        )
    finalists.sort(key=lambda f: (f.trial == 0, -(f.mean or 0.0)))
    return dataclasses.replace(outcome, finalists=tuple(finalists))


def _rung_data(data: dict[str, Any], fidelity: Fidelity) -> dict[str, Any]:
    """The file's tables with ``[bench]`` changed as the short rung changes it."""
    tables = copy.deepcopy(data)
    tables["bench"] = {**tables.get("bench", {}), **fidelity.bench}
    return tables


def _campaign_of_many(
    data: dict[str, Any], text: str, path: Path, variants: list[dict[str, Any]]
) -> Campaign:
    """The campaign of the file's tables with several trials' variants added."""
    data = copy.deepcopy(data)
    data["variant"] = [*data["variant"], *variants]
    return _campaign_of(data, text, path, None)


def _per_start(store: Store, cid: int, objective: str, name: str) -> dict[int, float]:
    """The objective of each start of variant ``name`` (start number -> value)."""
    starts = {a.id: a.start or 1 for a in store.attempts(cid) if a.variant == name}
    if objective == "capacity":
        return {
            c.start: float(c.data.get("value") or 0.0)
            for c in store.capacities(cid)
            if c.variant == name
        }
    by_start: dict[int, list[float]] = {}
    for p in store.points(cid):
        if p.variant != name or p.attempt_id not in starts:
            continue
        if objective == "throughput":
            value = p.summary.get("output_throughput")
        else:
            value = ((p.detail.get("slo") or {}).get("goodput") or {}).get("output_tokens_per_s")
        if value is not None:
            by_start.setdefault(starts[p.attempt_id], []).append(float(value))
    return {start: sum(vs) / len(vs) for start, vs in by_start.items()}


def _interval(values: Sequence[float]) -> tuple[float | None, float | None, float | None]:
    """The mean and its 95 % Student-t interval over starts (no interval from one)."""
    if not values:
        return None, None, None
    mean = sum(values) / len(values)
    if len(values) < 2:
        return mean, None, None
    from servegate._stats import t_quantile

    sd = statistics.stdev(values)
    half = t_quantile(0.975, len(values) - 1) * sd / math.sqrt(len(values))
    return mean, mean - half, mean + half


def _ratio_interval(
    starts: Mapping[int, float], base: Mapping[int, float]
) -> tuple[float | None, float | None]:
    """The 95 % Fieller interval of mean(starts) / mean(base) over fresh starts.

    Paired by start number when both have the same starts (the interleaved rounds put a
    finalist's start k and the baseline's in one round: their covariance is used, n - 1
    degrees of freedom); otherwise independent, min(n) - 1 degrees of freedom. (None, None)
    with fewer than 2 starts a side, or when the baseline's mean is not clearly above 0
    (the interval is then unbounded).
    """
    x, y = list(starts.values()), list(base.values())
    if len(x) < 2 or len(y) < 2:
        return None, None
    from servegate._stats import t_quantile

    a, b = statistics.fmean(x), statistics.fmean(y)
    va, vb = statistics.variance(x) / len(x), statistics.variance(y) / len(y)
    paired = sorted(starts) == sorted(base)
    cov = 0.0
    if paired:
        pairs = [(starts[k], base[k]) for k in sorted(starts)]
        cov = sum((u - a) * (v - b) for u, v in pairs) / (len(pairs) - 1) / len(pairs)
    t = t_quantile(0.975, (len(x) if paired else min(len(x), len(y))) - 1)
    # the ratios r with (a - r b)^2 <= t^2 var(a - r b): A r^2 - 2 B r + C <= 0
    big_a = b * b - t * t * vb
    big_b = a * b - t * t * cov
    big_c = a * a - t * t * va
    if big_a <= 0:
        return None, None
    root = math.sqrt(max(0.0, big_b * big_b - big_a * big_c))
    return (big_b - root) / big_a, (big_b + root) / big_a


def _trials(
    search: Search,
    *,
    data: dict[str, Any],
    text: str,
    path: Path,
    db: Path,
    interrupts: Interrupts,
    progress: CampaignProgress,
    on_trial: Callable[[Trial, TuneOutcome], None] | None,
    cluster: StartPool | None = None,
    slots: int = 1,
) -> TuneOutcome:
    """Trials until the budget is spent or a signal stops the run.

    One at a time; on a Ray cluster (``cluster``) up to ``slots`` at once: that many
    proposals are asked together (TPE's constant liar keeps them apart), each started on
    its own node or GPU set; as each start ends its trial is told to the study and the
    next proposal takes the node it freed (no trial waits for the slowest of a batch).
    The baseline runs alone, first. With [search.fidelity] trials go in batches: the
    batch's short rungs run as one round, then the promoted trials' full measurements,
    each told when its round has ended."""
    space = search.space
    base = _campaign_of(data, text, path, None)

    def start(
        tables: dict[str, Any],
        variants: list[dict[str, Any]],
        names: list[str],
        feed: Callable[[tuple[str, ...]], list[ServerGroup]] | None = None,
    ) -> int | None:
        """The variants ``names`` (the file's, or trials' added as ``variants``) run as one
        campaign into the store, at once where the pool allows (``feed``: the next trials
        as each start ends); the signal, if any."""
        campaign = _campaign_of_many(tables, text, path, variants).only(names)
        run_options = RunOptions(resume=True, log_dir=search.options.log_dir, feed=feed)
        with Store.open(db) as store:
            ran = run_campaign(
                campaign,
                store,
                options=run_options,
                progress=progress,
                interrupts=interrupts,
                cluster=cluster,
            )
        return ran.signum

    def read(name: str) -> Trial | None:
        with Store.open(db) as store:
            info = store.find_campaign(base.name)
            return None if info is None else _read_trial(store, info.id, space, base, name)

    def told(trial: Trial, asked: Any) -> None:
        trial = search.record(trial, asked=asked)
        if on_trial is not None:
            on_trial(trial, search.outcome())

    def ended(name: str, values: dict[str, Any], found: Trial | None) -> Trial:
        if found is not None and found.state not in ("in-flight", "rung"):
            return found
        return Trial(
            number=0,
            name=name,
            values=values,
            state="infeasible",
            value=None,
            kind="unmeasured",
            cause="nothing was measured",
        )

    def stopped(signum: int, batch: list[Batched]) -> TuneOutcome:
        """Interrupted: the batch's trials that ended are told, the rest abandoned (the
        next --resume proposes them first and measures what they lack)."""
        for asked, name, _values in batch:
            found = read(name)
            if found is not None and found.state in ("feasible", "infeasible"):
                told(found, asked)
            else:
                search.abandon(asked)
        return search.outcome(signum=signum)

    def feeder(flight: dict[str, Batched]) -> Callable[[tuple[str, ...]], list[ServerGroup]]:
        """What a flowing round asks as each start ends: ``flight`` holds the trials in
        flight by name."""

        def feed(names: tuple[str, ...]) -> list[ServerGroup]:
            """The trial whose start ended told to the study; then the next proposals
            while the budget (a trial in flight counts as spent) and the slots allow, each
            a server group to start at once."""
            for name in names:
                item = flight.pop(name, None)
                if item is not None:
                    told(ended(name, item[2], read(name)), item[0])
            groups: list[ServerGroup] = []
            while len(flight) < slots and search.spent_why(planned=len(flight)) is None:
                values = search.next_values()
                asked = search.hold()
                if values is None:
                    break
                name = space.name_of(values)
                if name in flight:  # proposed while in flight: the next start's end asks again
                    search.abandon(asked)
                    break
                found = search.without_start(name, values, asked=asked)
                if found is not None:
                    told(found, asked)
                    continue
                flight[name] = (asked, name, values)
                one = _campaign_of_many(data, text, path, [_trial_variant(space, values)])
                groups.append(one.only([name]).groups[0])
            return groups

        return feed

    # on a cluster without rungs, a node that frees takes the next trial at once
    flowing = cluster is not None and slots > 1 and space.fidelity is None
    while (why := search.spent_why()) is None:
        batch: list[Batched] = []  # (proposal, name, values): each needs a start
        while len(batch) < slots and search.spent_why(planned=len(batch)) is None:
            values = search.next_values()
            asked = search.hold()
            if values is None:  # the baseline (trial 0), alone
                batch.append((None, base.baseline, {}))
                break
            name = space.name_of(values)
            if any(name == n for _, n, _ in batch):  # proposed twice in one batch
                search.abandon(asked)
                break
            found = search.without_start(name, values, asked=asked)
            if found is not None:
                told(found, asked)
                continue
            batch.append((asked, name, values))
        if not batch:
            continue
        if flowing and all(asked is not None for asked, _, _ in batch):
            flight = {name: item for item in batch for name in [item[1]]}
            variants = [_trial_variant(space, v) for _, _, v in batch]
            signum = start(data, variants, list(flight), feeder(flight))
            if signum is not None:
                return stopped(signum, list(flight.values()))
            for asked, name, values in list(flight.values()):  # nothing left to measure
                told(ended(name, values, read(name)), asked)
            continue
        rungs: dict[str, Trial | None] = {}  # a trial that ended at its short rung
        full = batch
        trials = [b for b in batch if b[0] is not None]
        if space.fidelity is not None and trials:
            # the short rungs first (NAME~rung1); the full measurement only if promoted
            short = [{**_trial_variant(space, v), "name": n + RUNG} for _, n, v in trials]
            signum = start(
                _rung_data(data, space.fidelity), short, [n + RUNG for _, n, _ in trials]
            )
            if signum is not None:
                return stopped(signum, batch)
            full = [b for b in batch if b[0] is None]
            before: list[float] = []  # the rung values earlier in this batch
            for item in trials:
                name = item[1]
                found = read(name)
                if found is None or found.state != "rung" or found.rung_value is None:
                    rungs[name] = found  # crashed, timed out or unmeasured at the rung
                    continue
                if search.promotes(found.rung_value, also=before):
                    progress.info(
                        f"{name}: {found.rung_value:g} at rung 1 of 2, promoted to the "
                        "full measurement"
                    )
                    full.append(item)
                else:
                    rungs[name] = search.pruned(found)
                before.append(found.rung_value)
        if full:
            variants = [_trial_variant(space, v) for a, _, v in full if a is not None]
            signum = start(data, variants, [n for _, n, _ in full])
            if signum is not None:
                return stopped(signum, batch)
        for asked, name, values in batch:
            found = rungs[name] if name in rungs else read(name)
            told(ended(name, values, found), asked)
    return search.outcome(stopped_by=why)


Batched = tuple[Any, str, dict[str, Any]]  # a proposal (None: the baseline), name, values


_CURRENT: Any = object()  # a Search method's ``asked`` left out: the proposal just asked


class Search:
    """The study and the trials, with the budget: what ``run_tune`` drives with real
    starts, and a study of the search itself (benchmarks/tune_study.py) with a model's.

        search = Search(optuna, space, TuneOptions(max_trials=20), campaign="c")
        while search.spent_why() is None:
            values = search.next_values()          # None first: the baseline, trial 0
            trial = search.without_start(name, values or {}) or measure(values)
            search.record(trial)
    """

    def __init__(
        self,
        optuna: Any,
        space: SearchSpace,
        options: TuneOptions,
        *,
        campaign: str,
        gpus: int = 1,
        parallel: int = 1,
    ) -> None:
        self.optuna = optuna
        self.space = space
        self.options = options
        self.campaign = campaign
        self.gpus = gpus
        self.parallel = parallel  # trials in flight at once (a Ray cluster's servers)
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        self.study = optuna.create_study(direction="maximize", sampler=self._sampler())
        self.trials: list[Trial] = []
        self.pending: list[dict[str, Any]] = []  # in flight when the last run stopped
        self.queue: list[tuple[Any, dict[str, Any]]] = []  # asked together, run warm-first
        self.asked: Any = None
        self.idle = 0  # proposals in a row that needed no start

    def _sampler(self) -> Any:
        """Optuna's sampler by name; crashes go to those that take constraints through
        ``constraints_func`` (TPE, GP, NSGA-II); random and QMC ignore every value."""
        name = self.options.sampler or self.space.sampler
        samplers, seed = self.optuna.samplers, self.options.seed
        if name not in SAMPLERS:
            raise UsageError(f"--sampler {name}: not one servegate offers; choose {_or(SAMPLERS)}.")
        missing = [m for m in _SAMPLER_NEEDS.get(name, ()) if importlib.util.find_spec(m) is None]
        if missing:
            raise UsageError(
                f"the {name} sampler needs {' and '.join(missing)}; "
                f"pip install {' '.join(missing)}, or choose another sampler."
            )
        with warnings.catch_warnings():  # experimental (group), deprecated in Optuna 5
            warnings.simplefilter("ignore")
            if name == "random":
                return samplers.RandomSampler(seed=seed)
            if name == "qmc":
                return samplers.QMCSampler(seed=seed, warn_independent_sampling=False)
            if name == "gp":
                if "constraints_func" not in inspect.signature(samplers.GPSampler).parameters:
                    raise UsageError(
                        "the gp sampler takes crashes as constraints from Optuna 4.2 on; "
                        "pip install 'optuna>=4.2', or choose another sampler."
                    )
                return samplers.GPSampler(
                    seed=seed, constraints_func=_constraints, n_startup_trials=STARTUP_TRIALS
                )
            if name == "nsga2":
                return samplers.NSGAIISampler(
                    seed=seed, constraints_func=_constraints, population_size=NSGA2_POPULATION
                )
            return samplers.TPESampler(
                seed=seed,
                constraints_func=_constraints,
                n_startup_trials=STARTUP_TRIALS,
                multivariate=True,
                group=True,
                # trials in flight count as the worst so far: no two proposed alike at once
                constant_liar=self.parallel > 1,
            )

    def _distributions(self, values: Mapping[str, Any]) -> dict[str, Any]:
        return distributions(self.optuna, self.space, values)

    # --- the store's trials ---

    def restore(self, trial: Trial) -> None:
        """A trial read back from the store: into the study, or redone when in flight."""
        if trial.state == "in-flight":
            if trial.number > 0:
                self.pending.append(trial.values)
                self.study.enqueue_trial(trial.values)
            return
        self.trials.append(trial)
        if trial.number == 0:
            return
        if trial.state == "pruned" and trial.rung_value is not None:
            self.study.add_trial(
                self.optuna.trial.create_trial(
                    params=trial.values,
                    distributions=self._distributions(trial.values),
                    state=self.optuna.trial.TrialState.PRUNED,
                    intermediate_values={1: trial.rung_value},
                    system_attrs={CONSTRAINTS_KEY: [0.0]},
                    user_attrs={"constraint": 0.0},
                )
            )
            return
        feasible = trial.state == "feasible"
        self.study.add_trial(
            self.optuna.trial.create_trial(
                params=trial.values,
                distributions=self._distributions(trial.values),
                value=trial.value if feasible else 0.0,
                system_attrs={CONSTRAINTS_KEY: [0.0 if feasible else 1.0]},
                user_attrs={"constraint": 0.0 if feasible else 1.0},
            )
        )

    # --- the loop ---

    def done(self) -> list[Trial]:
        return [t for t in self.trials if t.number > 0]

    def gpu_hours(self) -> float:
        return sum(t.cost_s for t in self.trials) / 3600.0 * self.gpus

    def spent_why(self, *, planned: int = 0) -> str | None:
        """Why the budget is spent, or None while trials are left; ``planned``: trials
        proposed and not yet recorded (a batch about to start), counted as spent."""
        most = self.options.max_trials
        if most is not None and len(self.done()) + planned >= most:
            return f"--max-trials {most} reached"
        hours = self.options.gpu_hours
        if hours is not None and self.gpu_hours() >= hours:
            return f"--gpu-hours {hours:g} spent ({self.gpu_hours():.4f} GPU-hours)"
        costs = [t.cost_s for t in self.trials if t.cost_s > 0]
        if hours is not None and costs:
            # no trial is begun that would end past the budget, judged by the median so far
            next_h = statistics.median(costs) / 3600.0 * self.gpus
            if self.gpu_hours() + (planned + 1) * next_h > hours:
                return (
                    f"--gpu-hours {hours:g}: {self.gpu_hours():.4f} spent, and a trial costs "
                    f"about {next_h:.4f} (the median so far)"
                )
        if self.idle >= IDLE_PROPOSALS:
            return (
                f"the last {IDLE_PROPOSALS} proposals were all measured before or skipped: "
                "the space is searched"
            )
        return None

    def next_values(self) -> dict[str, Any] | None:
        """The next configuration (None: the baseline, first)."""
        if not any(t.number == 0 for t in self.trials):
            self.asked = None
            return None
        if not self.queue:
            self.queue = [self._suggest(self.study.ask()) for _ in range(self._free_draws())]
        self.asked, values = self.queue.pop(self._warm_first())
        if self.pending and values == self.pending[0]:
            self.pending.pop(0)
        return values

    def _suggest(self, asked: Any) -> tuple[Any, dict[str, Any]]:
        values: dict[str, Any] = {}
        for p in self.space.params:
            if not p.active(values):
                continue
            if p.choices:
                values[p.name] = asked.suggest_categorical(p.name, list(p.choices))
            elif p.integer:
                values[p.name] = asked.suggest_int(
                    p.name, int(p.low or 0), int(p.high or 0), log=p.log, step=int(p.step or 1)
                )
            else:
                values[p.name] = asked.suggest_float(
                    p.name, p.low or 0.0, p.high or 0.0, log=p.log, step=p.step
                )
        return asked, values

    def _free_draws(self) -> int:
        """How many proposals to ask at once: the sampler's seeded random draws that are
        left (TPE's first STARTUP_TRIALS, or the random sampler's), when a parameter is
        declared ``cache = true``; else one. Their order is free: none depends on a result."""
        if not any(p.cache for p in self.space.params) or self.pending:
            return 1
        name = getattr(self.options, "sampler", None) or self.space.sampler
        finished = (self.optuna.trial.TrialState.COMPLETE, self.optuna.trial.TrialState.PRUNED)
        told = len(self.study.get_trials(deepcopy=False, states=finished))
        if name == "random":
            return STARTUP_TRIALS
        if name == "tpe":
            return max(1, STARTUP_TRIALS - told)
        return 1

    def _warm_first(self) -> int:
        """The queued proposal to run next: the first with the last start's cache key, else
        the first with a key started before in this search, else the first drawn."""
        started = [
            self.space.cache_key(t.values)
            for t in self.trials
            if t.number > 0 and t.state in ("feasible", "infeasible", "pruned")
        ]
        keys = [self.space.cache_key(values) for _, values in self.queue]
        if started and started[-1] in keys:
            return keys.index(started[-1])
        return next((i for i, key in enumerate(keys) if key in started), 0)

    def promotes(self, rung_value: float, *, also: Sequence[float] = ()) -> bool:
        """Whether a trial's short rung promotes it to the full measurement (the rule of
        ``Fidelity.promotes`` against the rung values of the trials before it, and
        ``also``: those of the trials before it in its batch)."""
        if self.space.fidelity is None:
            return True
        earlier = [
            t.rung_value
            for t in self.trials
            if t.rung_value is not None and t.state in ("feasible", "pruned")
        ]
        return self.space.fidelity.promotes(rung_value, [*earlier, *also])

    def pruned(self, trial: Trial) -> Trial:
        """The trial stopped after its short rung: no full measurement, its rung value kept."""
        fidelity = self.space.fidelity
        keep = "" if fidelity is None else f"; promoted: the best {fidelity.keep:.2g} of them"
        count = sum(
            t.rung_value is not None for t in self.trials if t.state in ("feasible", "pruned")
        )
        return Trial(
            **{
                **_fields(trial),
                "state": "pruned",
                "value": None,
                "rung": 1,
                "cause": f"pruned at rung 1 of 2: {trial.rung_value:g} against {count} earlier "
                f"rung value(s){keep}",
            }
        )

    def hold(self) -> Any:
        """The proposal just asked, taken out of the search's hands: a batch keeps each
        of its own and passes it to ``without_start``, ``record`` or ``abandon``."""
        asked, self.asked = self.asked, None
        return asked

    def without_start(
        self, name: str, values: dict[str, Any], *, asked: Any = _CURRENT
    ) -> Trial | None:
        """The trial when it needs no start: measured before, or memory-dominated."""
        if (self.asked if asked is _CURRENT else asked) is None:
            return None
        earlier = next((t for t in self.done() if t.name == name and t.state != "skipped"), None)
        if earlier is not None:
            return Trial(
                number=0,
                name=name,
                values=values,
                state="reused",
                value=earlier.value,
                kind=earlier.kind,
                cause=f"measured as trial {earlier.number}",
                rung=earlier.rung if earlier.state == "pruned" else None,
                rung_value=earlier.rung_value if earlier.state == "pruned" else None,
            )
        oom = [t for t in self.trials if t.kind == "oom" and t.state == "infeasible"]
        by = dominated(self.space, values, oom)
        if by is None:
            return None
        return Trial(
            number=0,
            name=name,
            values=values,
            state="skipped",
            value=None,
            kind="oom",
            skipped_by=by.name,
            cause=f"at least {by.name} in every memory parameter, which ran out of memory "
            "while starting",
        )

    def record(self, trial: Trial, *, asked: Any = _CURRENT) -> Trial:
        """Number the trial, tell the study, keep it (``asked``: the proposal it answers,
        when held; else the one just asked)."""
        if asked is _CURRENT:
            asked, self.asked = self.asked, None
        number = 0 if asked is None else len(self.done()) + 1
        trial = Trial(**{**_fields(trial), "number": number})
        pruned = trial.state in ("pruned", "reused") and trial.value is None
        if asked is not None and pruned and trial.rung_value is not None:
            # pruned (or a configuration pruned before): its rung value, as Optuna's pruners
            # leave a trial (TPE ranks a pruned trial by its last reported value)
            asked.set_user_attr("constraint", 0.0)
            asked.report(trial.rung_value, 1)
            self.study.tell(asked, state=self.optuna.trial.TrialState.PRUNED)
            asked = None
        if asked is not None:
            feasible = trial.value is not None and trial.state in ("feasible", "reused")
            if trial.state == "reused" and trial.value is None:
                feasible = False
            asked.set_user_attr("constraint", 0.0 if feasible else 1.0)
            self.study.tell(asked, trial.value if feasible else 0.0)
        self.trials.append(trial)
        self.idle = self.idle + 1 if trial.state in ("reused", "skipped") else 0
        return trial

    def abandon(self, asked: Any = _CURRENT) -> None:
        """A trial in flight when the run was interrupted (the one just asked, or a held
        one): failed for the study."""
        if asked is _CURRENT:
            asked, self.asked = self.asked, None
        if asked is not None:
            self.study.tell(asked, state=self.optuna.trial.TrialState.FAIL)

    def outcome(self, *, signum: int | None = None, stopped_by: str = "") -> TuneOutcome:
        return TuneOutcome(
            campaign=self.campaign,
            objective=self.space.objective,
            trials=tuple(self.trials),
            gpu_hours=self.gpu_hours(),
            signum=signum,
            stopped_by=stopped_by,
        )


# the packages a sampler imports that Optuna does not require
_SAMPLER_NEEDS = {"gp": ("torch", "scipy"), "qmc": ("scipy",)}


def _or(names: Sequence[str]) -> str:
    return ", ".join(names[:-1]) + " or " + names[-1]


CONSTRAINTS_KEY = "constraints"  # where Optuna's samplers read a trial's constraints


def _constraints(trial: Any) -> list[float]:
    """Optuna's constraints of a trial: > 0 infeasible (a crash, a timeout, a skip)."""
    return [float(trial.user_attrs.get("constraint", 0.0))]


def _fields(trial: Trial) -> dict[str, Any]:
    return {name: getattr(trial, name) for name in Trial.__dataclass_fields__}


# --- reading trials back -------------------------------------------------------------------


class _Baselined(Protocol):
    """A campaign as its trials are read back: the file's (Campaign) or the store's."""

    @property
    def baseline(self) -> str: ...


def _stored_trials(store: Store, cid: int, space: SearchSpace, base: _Baselined) -> list[Trial]:
    """Every trial of the campaign in the store, in the order they were first started."""
    attempts = store.attempts(cid)
    first: dict[str, int] = {}
    for attempt in attempts:  # a short rung (NAME~rung1) stands for its trial, NAME
        first.setdefault(attempt.variant.removesuffix(RUNG), attempt.id)
    out = []
    rungs: list[float] = []  # the rung values so far, in order: the pruning rule's input
    for name in sorted(first, key=lambda n: first[n]):
        trial = _read_trial(store, cid, space, base, name)
        if trial is None:
            continue
        if trial.state == "rung" and space.fidelity is not None and trial.rung_value is not None:
            # its rung ended and nothing more: pruned, or promoted and its full measurement
            # in flight, by the same rule as when it ran (the same earlier rung values)
            promoted = space.fidelity.promotes(trial.rung_value, rungs)
            trial = Trial(**{**_fields(trial), "state": "in-flight" if promoted else "pruned"})
        if trial.rung_value is not None and trial.state in ("feasible", "pruned"):
            rungs.append(trial.rung_value)
        out.append(Trial(**{**_fields(trial), "resumed": True}))
    number = 0
    numbered = []
    for trial in out:
        if trial.number > 0 and trial.state != "in-flight":
            number += 1
            numbered.append(Trial(**{**_fields(trial), "number": number}))
        else:
            numbered.append(trial)
    return numbered


def _read_trial(
    store: Store, cid: int, space: SearchSpace, base: _Baselined, name: str
) -> Trial | None:
    """The trial ``name`` from the store: with [search.fidelity], its short rung (variant
    NAME~rung1) and its full measurement (NAME) read together; state ``rung`` when the rung
    was measured and nothing after it. None for a variant that is no trial."""
    if space.fidelity is None or name == base.baseline:
        return _read_variant(store, cid, space, base, name)
    rung = _read_variant(store, cid, space, base, name + RUNG)
    full = _read_variant(store, cid, space, base, name)
    if rung is None or full is None:
        return None
    if rung.cost_s == 0 and full.cost_s > 0:  # measured before the file had a fidelity
        return full
    if rung.state != "feasible":  # crashed, timed out or in flight at the rung
        return Trial(**{**_fields(rung), "name": name, "rung": 1})
    cost = rung.cost_s + full.cost_s
    if full.state == "in-flight":
        fields = {"state": "rung", "rung": 1, "rung_value": rung.value, "cost_s": cost}
        return Trial(**{**_fields(full), **fields})
    return Trial(**{**_fields(full), "rung": 2, "rung_value": rung.value, "cost_s": cost})


def _read_variant(
    store: Store, cid: int, space: SearchSpace, base: _Baselined, name: str
) -> Trial | None:
    """The trial stored as variant ``name``; None for a variant that is none."""
    if name == base.baseline:
        values: dict[str, Any] | None = {}
        number = 0
    else:
        values = space.values_of(name.removesuffix(RUNG))
        number = 1  # renumbered by the caller
    if values is None:
        return None
    attempts = [a for a in store.attempts(cid) if a.variant == name]
    cost = sum(_wall_s(a.started_at, a.ended_at) for a in attempts)
    for attempt in attempts:
        verdict = attempt.verdict or {}
        if str(attempt.status) in ("crash", "timeout"):
            return Trial(
                number=number,
                name=name,
                values=values,
                state="infeasible",
                value=None,
                kind=verdict.get("kind") or str(attempt.status),
                cause=verdict.get("reason") or attempt.reason,
                cost_s=cost,
            )
    value = _objective(store, cid, space.objective, name)
    if value is not None:
        return Trial(
            number=number,
            name=name,
            values=values,
            state="feasible",
            value=value,
            cost_s=cost,
        )
    failed = [a for a in attempts if str(a.status) == "failed"]
    if failed:
        return Trial(
            number=number,
            name=name,
            values=values,
            state="infeasible",
            value=None,
            kind="failed",
            cause=failed[0].reason,
            cost_s=cost,
        )
    return Trial(
        number=number, name=name, values=values, state="in-flight", value=None, cost_s=cost
    )


def _objective(store: Store, cid: int, objective: str, name: str) -> float | None:
    """The trial's objective from the store: the mean over its starts or points."""
    if objective == "capacity":
        rows = [c.data for c in store.capacities(cid) if c.variant == name]
        if not rows:
            return None
        return sum(float(r.get("value") or 0.0) for r in rows) / len(rows)
    points = [p for p in store.points(cid) if p.variant == name]
    if not points:
        return None
    if objective == "throughput":
        found = [p.summary.get("output_throughput") for p in points]
    else:
        found = [
            ((p.detail.get("slo") or {}).get("goodput") or {}).get("output_tokens_per_s")
            for p in points
        ]
    numbers = [float(v) for v in found if v is not None]
    return sum(numbers) / len(numbers) if numbers else 0.0


def _wall_s(started: str, ended: str | None) -> float:
    """Seconds between two stored timestamps (0 when it has not ended)."""
    if ended is None:
        return 0.0
    try:
        return max(
            0.0, (datetime.fromisoformat(ended) - datetime.fromisoformat(started)).total_seconds()
        )
    except ValueError:
        return 0.0


def _text(value: Any) -> str:
    """A value as a placeholder holds it (TOML's spelling of numbers and booleans)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}" if float(f"{value:g}") == value else repr(value)
    return str(value)


def _fill(template: str, values: Mapping[str, str]) -> str:
    return re.sub(r"\{(\w+)\}", lambda m: values.get(m.group(1), m.group(0)), template)
