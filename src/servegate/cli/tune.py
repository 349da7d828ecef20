"""``servegate tune``: search a campaign's ``[search]`` space with Optuna."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from shlex import quote
from typing import Any, TextIO

import click

from servegate.cli.options import (
    examples,
    json_file,
    json_flag,
    not_stdout,
    quiet,
    write_json_file,
)
from servegate.errors import UsageError

__all__ = ["tune"]


@click.command(
    epilog=examples(
        "servegate tune search.toml --max-trials 30",
        "servegate tune search.toml --gpu-hours 4 --events-file trials.jsonl",
        "servegate tune search.toml --max-trials 30 --resume    # after Ctrl-C",
        "servegate tune search.toml --max-trials 20 --json > best.json",
    )
)
@click.argument("campaign_file", metavar="CAMPAIGN.toml", type=click.Path(path_type=Path))
@click.option(
    "--db",
    type=click.Path(dir_okay=False, path_type=Path),
    default=Path("servegate.db"),
    show_default=True,
    help="SQLite file every trial is stored in, as an attempt of the campaign.",
)
@click.option(
    "--max-trials",
    type=click.IntRange(min=1),
    default=None,
    metavar="N",
    help="Stop after N trials (the baseline, trial 0, not counted).",
)
@click.option(
    "--gpu-hours",
    type=click.FloatRange(min=0.0, min_open=True),
    default=None,
    metavar="H",
    help="Stop once the trials have cost H GPU-hours: each its server's wall time from "
    "start to stop, times max([server] gpus, 1).",
)
@click.option(
    "--resume",
    is_flag=True,
    help="Continue the search stored in --db: no finished trial is measured again, the "
    "one in flight is redone.",
)
@click.option(
    "--finalists",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    metavar="N",
    help="At the end, start the best N trials and the baseline --finalist-starts more times, "
    "interleaved, and give each a mean and an interval over those fresh starts.",
)
@click.option(
    "--finalist-starts",
    type=click.IntRange(min=2, max=100),
    default=3,
    show_default=True,
    metavar="K",
    help="Fresh starts per finalist.",
)
@click.option(
    "--sampler",
    default=None,
    metavar="NAME",
    help="Optuna's sampler, in place of [search] sampler: tpe (the default), random, qmc, "
    "gp or nsga2 (docs/tune.md says how each treats crashes).",
)
@click.option(
    "--ray",
    "ray",
    default=None,
    metavar="ADDRESS",
    help="Run the trials on the Ray cluster at ADDRESS, as many at once as it has nodes (or "
    "GPU sets) that fit a server; needs servegate[ray]. [default: the file's [cluster] ray]",
)
@click.option(
    "--seed",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    metavar="N",
    help="The sampler's seed (TPE's first 5 trials are seeded random draws).",
)
@click.option(
    "--events-file",
    "events",
    type=click.Path(dir_okay=False, path_type=Path),
    metavar="FILE",
    callback=not_stdout,
    help="Append one JSON line per trial to FILE, as it ends.",
)
@json_flag("the search's result (best, trials, budget)")
@json_file("the search's result, rewritten after each trial")
@quiet()
def tune(
    *,
    campaign_file: Path,
    db: Path,
    max_trials: int | None,
    gpu_hours: float | None,
    resume: bool,
    finalists: int,
    finalist_starts: int,
    sampler: str | None,
    ray: str | None,
    seed: int,
    events: Path | None,
    as_json: bool,
    json_file: Path | None,
    quiet: bool,
) -> None:
    """Search server flags for the best objective: each trial a normal attempt.

    The campaign file's [search] table names the parameters (choices, int or float
    ranges, conditions, memory = "increasing") in the [matrix] grammar and the objective
    (capacity under [slo], goodput or throughput at the [bench] load). Optuna's TPE
    proposes each configuration; a crash or timeout is infeasible, never a score; a
    configuration at least as large as one that ran out of memory while starting (in
    every memory parameter, equal in the rest) is skipped without a start. See
    docs/tune.md.

    Exit codes: 0 the budget spent with a best; 1 every trial infeasible; 2 bad input;
    130 interrupted (continue with --resume).
    """
    from servegate import campaign as campaigns

    if max_trials is None and gpu_hours is None:
        raise UsageError("servegate tune needs a budget; add --max-trials N or --gpu-hours H.")
    progress = campaigns.CampaignProgress(sys.stderr, quiet=quiet)
    stream: TextIO | None = None
    if events is not None:
        try:
            stream = events.open("a", encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"--events-file {events}: cannot write it ({exc.strerror}).") from None

    def on_trial(trial: campaigns.Trial, outcome: campaigns.TuneOutcome) -> None:
        if not quiet:
            click.echo(_line(trial, outcome, max_trials, gpu_hours), err=True)
        if stream is not None:
            stream.write(json.dumps(trial.to_json()) + "\n")
            stream.flush()
        if json_file is not None:
            write_json_file(json_file, outcome.to_json())

    options = campaigns.TuneOptions(
        max_trials=max_trials,
        gpu_hours=gpu_hours,
        resume=resume,
        seed=seed,
        sampler=sampler,
        ray=ray,
        finalists=finalists,
        finalist_starts=finalist_starts,
    )
    try:
        outcome = campaigns.run_tune(
            campaign_file, db, options, progress=progress, on_trial=on_trial
        )
    finally:
        if stream is not None:
            stream.close()
    found = _search_report(db, outcome)
    document = outcome.to_json()
    document.update(
        found.to_json()
        if found is not None
        else {"pareto": None, "importances": None, "crash_map": None}
    )
    if json_file is not None:
        write_json_file(json_file, document)
    if as_json:
        click.echo(json.dumps(document))
    else:
        _summary(outcome)
        if found is not None:
            from servegate.report.search import search_lines

            for line in search_lines(found):
                click.echo(line)
    if outcome.signum is not None:
        click.echo(
            f"Interrupted; the trials are kept in {db}; continue with: servegate tune "
            f"{quote(str(campaign_file))} --db {quote(str(db))} --resume",
            err=True,
        )
    sys.exit(outcome.exit_code)


def _search_report(db: Path, outcome: Any) -> Any:
    """The Pareto front, importances and crash map of the search just run (None without
    a store)."""
    from servegate.campaign import search_report
    from servegate.store import Store

    if not db.is_file():
        return None
    with Store.open(db, read_only=True) as store:
        info = store.find_campaign(outcome.campaign)
        return None if info is None else search_report(store, info.id, outcome.trials)


def _line(trial: Any, outcome: Any, max_trials: int | None, gpu_hours: float | None) -> str:
    """``trial 3 of 20: NAME -> 41.5 | best 52.0 (NAME) | 0.12 GPU-hours of 4 left``."""
    of = f" of {max_trials}" if max_trials is not None else ""
    if trial.state == "feasible":
        got = f"{trial.value:g}"
    elif trial.state == "pruned":
        got = trial.cause or f"pruned at rung {trial.rung} ({trial.rung_value:g})"
    elif trial.state == "reused":
        got = f"{trial.value:g} (already measured)" if trial.value is not None else "infeasible"
        if trial.value is None and trial.rung_value is not None:
            got = f"pruned at rung {trial.rung} before ({trial.rung_value:g})"
    elif trial.state == "skipped":
        got = f"skipped without a start: {trial.cause}"
    else:
        got = f"infeasible ({trial.kind}): {trial.cause or ''}".rstrip(": ")
    best = outcome.best
    best_text = "none yet" if best is None else f"{best.value:g} ({best.name})"
    left = []
    if max_trials is not None:
        left.append(f"{max(0, max_trials - sum(t.number > 0 for t in outcome.trials))} trial(s)")
    if gpu_hours is not None:
        left.append(f"{max(0.0, gpu_hours - outcome.gpu_hours):.3f} GPU-hours")
    label = "baseline" if trial.number == 0 else f"trial {trial.number}{of}"
    return f"{label}: {trial.name} -> {got} | best {best_text} | left: {', '.join(left)}"


def _summary(outcome: Any) -> None:
    """The result on stdout: the best trial against the baseline, and the counts."""
    best = outcome.best
    base = next((t for t in outcome.trials if t.number == 0), None)
    if best is None:
        click.echo(f"No feasible trial in {len(outcome.trials)} ({outcome.stopped_by}).")
        return
    click.echo(f"Best {outcome.objective}: {best.value:g} with {best.name} (trial {best.number})")
    if base is not None and base.value:
        click.echo(f"Baseline {base.name}: {base.value:g} ({best.value / base.value:.2f}x)")
    for f in outcome.finalists:
        shown = "no value" if f.mean is None else f"{f.mean:g}"
        if f.low is not None:
            shown += f" [{f.low:g}, {f.high:g}]"
        ratio = "" if f.ratio is None or f.trial == 0 else f", {f.ratio:.3f}x the baseline"
        if ratio and f.ratio_low is not None:
            ratio += f" [{f.ratio_low:.3f}, {f.ratio_high:.3f}]"
        starts = len(f.values)
        click.echo(f"  finalist {f.name}: {shown} over {starts} fresh start(s){ratio}")
    counts = outcome.to_json()
    click.echo(
        f"{len(outcome.trials)} trial(s): {counts['infeasible']} infeasible, "
        f"{counts['skipped']} skipped, {counts['pruned']} pruned; "
        f"{outcome.gpu_hours:.4f} GPU-hours; {outcome.stopped_by or 'stopped'}"
    )
