"""``servegate run`` and ``servegate demo``: campaigns from the command line.

Thin: validate the file and the flags, hand them to ``servegate.campaign.run`` with the
progress on stderr, render the report it returns (the results table on stdout, as
``servegate report`` prints it), say where the results are and pick the exit code.
"""

from __future__ import annotations

import math
import os
import re
import sys
from pathlib import Path
from shlex import quote

import click

import servegate.campaign as campaigns
from servegate.campaign import (
    MAX_RESTARTS,
    Campaign,
    check_programs,
    load_campaign,
    missing_programs,
)
from servegate.cli.options import FiniteRange, examples, quiet
from servegate.errors import UsageError
from servegate.redact import Redactor

__all__ = ["demo", "run", "run_demo"]


@click.command(
    epilog=examples(
        "servegate run examples/sglang-allreduce-fusion.toml",
        "servegate run fusion.toml --only fusion --db results.db",
        "servegate run fusion.toml --resume          # after Ctrl-C, a crash or a reboot",
        "servegate run fusion.toml --restarts 5      # start each server 5 times, interleaved",
        "servegate run fusion.toml --restarts 3 --until-precision 2% --max-starts 10 --budget 2h",
        "servegate run fusion.toml --ray auto       # each server start a task on a Ray cluster",
    )
)
@click.argument("campaign_file", metavar="CAMPAIGN.toml", type=click.Path(path_type=Path))
@click.option(
    "--db",
    type=click.Path(dir_okay=False, path_type=Path),
    default=Path("servegate.db"),
    show_default=True,
    help="SQLite file the results are written to as they are measured.",
)
@click.option(
    "--resume",
    is_flag=True,
    help="Continue this campaign in --db: measurements already stored are not repeated.",
)
@click.option(
    "--only",
    "only",
    multiple=True,
    metavar="VARIANT",
    help="Run only this variant (repeatable).",
)
@click.option(
    "--max-failed-variants",
    type=click.IntRange(min=0),
    default=None,
    help="Exit 1 when more variants than this fail (crash, timeout, preflight, mid-run death).",
)
@click.option(
    "--max-error-rate",
    type=FiniteRange(min=0.0, max=1.0),
    default=None,
    help="Exit 1 when a load point's failed-request fraction is above this (e.g. 0.01).",
)
@click.option(
    "--restarts",
    "restarts",
    default=None,
    metavar="K",
    help="Start each server configuration K times, baseline and variants interleaved in "
    "seeded rounds. [default: the file's [bench] restarts]",
)
@click.option(
    "--seed",
    "seed",
    default=None,
    metavar="N",
    help="Seed of the start order; recorded, and kept by --resume. "
    "[default: the file's [bench] seed]",
)
@click.option(
    "--until-precision",
    "until_precision",
    default=None,
    metavar="PERCENT",
    help="After the first K starts, add rounds of starts until every compared throughput "
    "interval is within +/- PERCENT (e.g. 2%); needs --max-starts or --budget.",
)
@click.option(
    "--max-starts",
    "max_starts",
    default=None,
    metavar="N",
    help="With --until-precision: at most N starts per server configuration.",
)
@click.option(
    "--budget",
    "budget",
    default=None,
    metavar="TIME",
    help="With --until-precision: add no round that would end later than TIME after the "
    "run began (90s, 30m, 2h).",
)
@click.option(
    "--ray",
    "ray",
    default=None,
    metavar="ADDRESS",
    help="Run each server start as a task on the Ray cluster at ADDRESS (auto, or its GCS "
    "HOST:6379; this machine must be a node of it); needs servegate[ray]. "
    "[default: the file's [cluster] ray]",
)
@click.option("--dry-run", is_flag=True, help="Print the plan (servers, commands, load points).")
@quiet()
def run(
    *,
    campaign_file: Path,
    db: Path,
    resume: bool,
    only: tuple[str, ...],
    max_failed_variants: int | None,
    max_error_rate: float | None,
    restarts: str | None,
    seed: str | None,
    until_precision: str | None,
    max_starts: str | None,
    budget: str | None,
    ray: str | None,
    dry_run: bool,
    quiet: bool,
) -> None:
    """Run a campaign: for each variant, preflight, launch, gate, benchmark, stop.

    Variants whose command and environment are the same share one server start. A
    variant that crashes or times out is recorded with its reason and log tail and the
    campaign goes on. Ctrl-C (or SIGTERM) stops the server and keeps what was measured;
    a second Ctrl-C stops at once. The results table is printed on stdout at the end;
    `servegate report` renders it again, as markdown, JSON, CSV or HTML.

    Exit codes: 0 completed (a crashed variant is a result, not an error); 1 no
    variant could be measured, or a threshold set with --max-failed-variants or
    --max-error-rate was crossed; 2 bad campaign file or flags, a damaged or read-only
    database, or another run using it (nothing is launched); 3 the database could not
    be written (disk full: what was measured is kept); 130 interrupted (what was
    measured is kept; continue with --resume). A run with --until-precision ends with
    a line saying whether the precision was reached or the budget spent (exit 0 either
    way), and each interval's half-width.
    """
    starts = _whole("--restarts", restarts, low=1, high=MAX_RESTARTS, example="--restarts 5")
    order_seed = _whole("--seed", seed, low=0, example="--seed 7")
    target, most, budget_s = _precision_flags(until_precision, max_starts, budget)
    campaign = load_campaign(campaign_file)
    first = starts or campaign.restarts
    if most is not None and most < first:
        raise UsageError(
            f"--max-starts {most} is fewer than the {first} start(s) each configuration gets "
            f"before precision is checked; raise --max-starts or lower --restarts."
        )
    if only:
        campaign = campaign.only(only)
    if dry_run:  # a plan, also for a host or a later machine that has the programs
        _print_plan(
            campaign,
            restarts=first,
            seed=campaign.seed if order_seed is None else order_seed,
            ray=_address(ray) or campaign.ray,
        )
        return
    from servegate.remote import is_local

    if is_local(campaign.host):  # a host's programs are checked there, at each start
        check_programs(campaign)
    # imported once the file is known to be good: a mistake is reported without the
    # load generator's and the statistics' import time
    options = campaigns.RunOptions(
        resume=resume,
        max_failed_variants=max_failed_variants,
        max_error_rate=max_error_rate,
        restarts=starts,
        seed=order_seed,
        until_precision=target,
        max_starts=most,
        budget_s=budget_s,
        ray=_address(ray),
    )
    sys.exit(execute(campaign, db, options=options, quiet=quiet))


def _precision_flags(
    until_precision: str | None, max_starts: str | None, budget: str | None
) -> tuple[float | None, int | None, float | None]:
    """--until-precision and its budgets (--max-starts, --budget), checked together."""
    target = _precision(until_precision)
    most = _whole("--max-starts", max_starts, low=1, high=MAX_RESTARTS, example="--max-starts 10")
    budget_s = _budget(budget)
    if target is None and (most is not None or budget_s is not None):
        flag = "--max-starts" if most is not None else "--budget"
        raise UsageError(f"{flag} is a budget for --until-precision; add --until-precision 2%.")
    if target is not None and most is None and budget_s is None:
        raise UsageError(
            f"--until-precision {until_precision} needs a budget; add --max-starts N "
            "(starts per server configuration) or --budget TIME (e.g. 30m)."
        )
    return target, most, budget_s


def execute(
    campaign: Campaign, db: Path, *, options: campaigns.RunOptions, quiet: bool = False
) -> int:
    """Run ``campaign`` into ``db`` (``servegate.campaign.run``), print the results table
    and the closing lines; return the exit code."""
    done = _run(campaign, db, options=options, progress=_progress(quiet))
    outcome = done.outcome
    if outcome.status == "interrupted":
        click.echo(
            f"Interrupted: {outcome.measured} measurement(s) kept in {db}; "
            f"continue with: servegate run {quote(str(campaign.path))} --db {quote(str(db))} "
            "--resume",
            err=True,
        )
    else:
        click.echo(
            f"Stored in {db} ({outcome.measured} measured, {outcome.skipped} already stored). "
            f"Render again: servegate report --db {quote(str(db))} {quote(campaign.name)}",
            err=True,
        )
    if outcome.precision is not None:
        for line in outcome.precision.lines():
            click.echo(line, err=True)
    for breach in outcome.breaches:
        click.echo(f"Error: {breach}.", err=True)
    return outcome.exit_code


def _progress(quiet: bool) -> campaigns.CampaignProgress:
    """The campaign's progress on stderr (-q: warnings and failures only)."""
    return campaigns.CampaignProgress(sys.stderr, quiet=quiet)


def _run(
    campaign: Campaign,
    db: Path,
    *,
    options: campaigns.RunOptions,
    progress: campaigns.CampaignProgress,
) -> campaigns.CampaignRun:
    """``servegate.campaign.run``, then its results table on stdout."""
    from servegate.report import render_console

    done = campaigns.run(campaign, db, options=options, progress=progress)
    render_console(done.report)
    return done


def _address(text: str | None) -> str | None:
    """``--ray ADDRESS``, stripped; UsageError for an empty one."""
    if text is None:
        return None
    if not text.strip():
        raise UsageError("--ray needs the cluster's address, e.g. --ray auto or --ray head:6379.")
    return text.strip()


def _whole(
    flag: str, text: str | None, *, low: int, example: str, high: int | None = None
) -> int | None:
    """A whole-number flag, or None when not given; UsageError naming the fix."""
    if text is None:
        return None
    try:
        value = int(text.strip())
    except ValueError:
        value = low - 1
    if value < low:
        raise UsageError(f"{flag} {text}: give a whole number of at least {low}, e.g. {example}.")
    if high is not None and value > high:
        raise UsageError(
            f"{flag} {text}: at most {high} starts per server configuration, e.g. {example}."
        )
    return value


def _precision(text: str | None) -> float | None:
    """``--until-precision 2%`` as the fraction 0.02 (above 0)."""
    if text is None:
        return None
    try:
        value = float(text.strip().removesuffix("%").strip())
    except ValueError:
        value = float("nan")
    if not 0.0 < value < math.inf:
        raise UsageError(
            f"--until-precision {text}: give the half-width to reach as a percentage above "
            "0, e.g. --until-precision 2%."
        )
    return value / 100.0


_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0}


def _budget(text: str | None) -> float | None:
    """``--budget 30m`` in seconds (a number with s, m or h; a bare number is seconds)."""
    if text is None:
        return None
    match = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([smh]?)\s*", text)
    value = float(match.group(1)) * _UNITS[match.group(2) or "s"] if match else 0.0
    if value <= 0:
        raise UsageError(f"--budget {text}: give a wall time above 0 such as 90s, 30m or 2h.")
    return value


def _print_plan(campaign: Campaign, *, restarts: int, seed: int, ray: str | None) -> None:
    """The servers and measurements a run would make, without starting anything."""
    redactor = Redactor.collect(
        envs=[v.render(port=0)[1] for v in campaign.variants],
        commands=[v.render(port=0)[0] for v in campaign.variants],
    )
    port_text = (
        str(campaign.port)
        if campaign.port is not None
        else "auto (a free port is chosen at each start: {port} below)"
    )
    click.echo(f"campaign {campaign.name} (baseline {campaign.baseline}), port {port_text}")
    _note_missing_programs(campaign, ray)
    if ray is not None:
        asked = [f"GPU={campaign.gpus}"] if campaign.gpus else []
        asked += [f"{name}={amount:g}" for name, amount in campaign.resources]
        click.echo(
            f"on the Ray cluster at {ray}: each server start a task asking a node for "
            f"{', '.join(asked) or 'CPU=1'} (the cluster is not contacted by --dry-run)"
        )
    if campaign.port is not None:
        from servegate.launch.tree import describe_holders, named_port_holders, port_is_free

        if not port_is_free(campaign.port):
            holders = describe_holders(named_port_holders(campaign.port))
            click.echo(
                f"Warning: port {campaign.port} is in use now"
                + (f" by {holders}" if holders else "")
                + "; the run fails its preflight unless it is freed.",
                err=True,
            )
    for number, group in enumerate(campaign.groups, start=1):
        argv, env = group.render(port=campaign.port if campaign.port is not None else "{port}")
        click.echo(f"server {number}: {' '.join(redactor.command(argv))}")
        for key, value in sorted(redactor.env(env).items()):
            click.echo(f"  env {key}={value}")
        for variant in group.variants:
            bench = variant.bench
            loads = ", ".join(p.label for p in bench.points)
            search = bench.search
            if search is not None:
                click.echo(
                    f"  variant {variant.name}: capacity search per start ({search.over} "
                    f"{search.low:g} to {search.high:g}, at most {search.max_probes} probes, "
                    f"{', '.join(t.text for t in bench.slo)}) ({bench.api})"
                )
                continue
            click.echo(f"  variant {variant.name}: {loads} x {bench.repeats} repeats ({bench.api})")
    if restarts > 1:
        click.echo(f"{restarts} starts per server, in this order (seed {seed}):")
        for round_ in range(1, restarts + 1):
            order = campaigns.start_order(len(campaign.groups), round_, seed)
            click.echo(f"  round {round_}: " + ", ".join(f"server {i + 1}" for i in order))


def _note_missing_programs(campaign: Campaign, ray: str | None) -> None:
    """Say which programs are not on this machine: planned anyway, as for another host
    (where they are looked for at each start) or a machine the run will happen on later."""
    from servegate.remote import is_local

    for variant, program in missing_programs(campaign):
        where = "" if os.sep in program else " on PATH"
        if not is_local(campaign.host) and ray is None:
            then = f"it is looked for on {campaign.host} at each start"
        else:
            then = (
                "servegate run refuses it on this machine: install it or give its full path "
                "in the command"
            )
        click.echo(
            f"Note: variant {variant.name!r}: program {program!r} not found{where} here; {then}.",
            err=True,
        )


@click.command(
    epilog=examples(
        "servegate demo",
        "servegate demo --dir /tmp/servegate-demo",
        "servegate report --db servegate-demo/servegate.db demo --markdown",
    )
)
@click.option(
    "--dir",
    "folder",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("servegate-demo"),
    show_default=True,
    help="Folder for the demo's campaign file, database, logs and HTML report.",
)
@click.option(
    "--db",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Database to write to instead of DIR/servegate.db (kept, not reset). "
    "[default: DIR/servegate.db, emptied first]",
)
@quiet()
def demo(*, folder: Path, db: Path | None, quiet: bool) -> None:
    """Run a whole campaign on the simulated engine: no GPU, about a minute.

    Four variants of a simulated SGLang server: the baseline, a faster decode, a
    variant that runs out of memory while loading weights, and speculative decoding.
    Ends with the comparison table and the path of the HTML report.

    Exit codes: 0 done; 2 bad --dir or --db; 130 interrupted.
    """
    sys.exit(run_demo(folder, db=db, quiet=quiet))


def run_demo(folder: Path, *, db: Path | None = None, quiet: bool = False) -> int:
    """Write the demo campaign into ``folder``, run it, print the results; the exit code.

    With the default database (``folder/servegate.db``) each demo starts from an empty
    database; a database given with ``db`` is kept and the demo campaign re-measured.
    """
    import importlib.util

    from servegate._files import write_output
    from servegate.report import render_html

    campaign, db = campaigns.prepare_demo(folder, db)
    progress = _progress(quiet)
    progress.info(f"demo campaign written to {campaign.path}; running it into {db}")
    done = _run(
        campaign, db, options=campaigns.RunOptions(log_dir=folder / "logs"), progress=progress
    )
    if done.outcome.status == "interrupted":
        click.echo(f"Interrupted; what was measured is kept in {db}.", err=True)
        return done.outcome.exit_code
    if importlib.util.find_spec("plotly") is not None:  # the html extra
        html_path = write_output(folder / "report.html", render_html(done.report))
        click.echo(f"HTML report: {html_path.resolve()}")
    else:
        click.echo(
            "HTML report: needs plotly; pip install 'servegate[html]', then "
            f"servegate report --db {db} demo --html-file {folder / 'report.html'}"
        )
    click.echo(
        f"Campaign file: {campaign.path}  (edit it and run: servegate run {campaign.path} "
        f"--db {db})",
        err=True,
    )
    return done.outcome.exit_code
