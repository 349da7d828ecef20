"""``servegate check``: a regression gate for CI, a stored campaign against a stored baseline."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import click

from servegate.cli.campaign_report import (
    CONFIDENCE,
    DEFAULT_DB,
    SEED,
    check_output_files,
    file_option,
    one_on_stdout,
    print_out,
    stdout_flag,
    write_file,
)
from servegate.cli.options import examples, json_file, json_flag
from servegate.errors import ServegateError, UsageError

_EPILOG = (
    examples(
        "servegate check                                   # newest campaign vs its own baseline",
        "servegate check nightly --db results.db --baseline-db main.db",
        "servegate check nightly --db results.db --baseline-db main.db \\",
        "    --baseline-variant base --max-regression output_throughput=3%,ttft_p99=10%",
        "servegate check fusion --variant fusion --markdown --json-file check.json",
    )
    + """

\b
Metrics: output_throughput, ttft_p50, ttft_p99, tpot_p50, tpot_p99, e2el_p50;
startup (the whole start and each phase, cold with cold and warm with warm) and
startup.PHASE (one phase's own threshold, e.g. startup.load_weights=5%); capacity
(the capacity under the SLO of a find_max campaign, one value per start; there it
replaces the probes' loads); default --max-regression
output_throughput=3%,ttft_p99=10%,tpot_p99=5%,startup=10%,capacity=5%.

\b
Exit codes: 0 no regression established; 1 a regression established, or a candidate
that failed; 2 bad input (missing database, campaign or variant, another workload,
no load point in common, bad option); 3 an internal error."""
)


@click.command("check", epilog=_EPILOG)
@click.argument("campaign", required=False)
@click.option(
    "--db", default=DEFAULT_DB, show_default=True, metavar="FILE", help="The candidate's database."
)
@click.option(
    "--variant",
    "variants",
    multiple=True,
    metavar="NAME",
    help="A candidate variant to check (repeatable). [default: every one that can be]",
)
@click.option(
    "--baseline-db",
    metavar="FILE",
    help="The baseline's database. [default: --db]",
)
@click.option(
    "--baseline-campaign",
    metavar="NAME",
    help="The baseline's campaign. [default: the candidate campaign's name]",
)
@click.option(
    "--baseline-variant",
    metavar="NAME",
    help="The variant every candidate is compared with. [default: the campaign's baseline "
    "(same campaign) or the variant of the same name (another campaign)]",
)
@click.option(
    "--max-regression",
    "max_regression",
    multiple=True,
    metavar="METRIC=PERCENT,...",
    help="The largest tolerated regression per metric; the metrics named are the ones "
    "checked; startup and startup.PHASE check the startup, capacity the capacity under "
    "the SLO (find_max). "
    "[default: output_throughput=3%,ttft_p99=10%,tpot_p99=5%,startup=10%,capacity=5%]",
)
@click.option(
    "--strict",
    is_flag=True,
    help="Fail on a comparison that cannot be called: a percentile from too few requests "
    "per server start, or one start on a side (listed, not failed, without it).",
)
@json_flag("the result")
@stdout_flag("markdown", "the markdown summary")
@json_file("the result")
@file_option("markdown", "the markdown summary")
@CONFIDENCE
@SEED
def check(**options: Any) -> None:
    """Check a stored campaign against a stored baseline: exit 1 on a regression.

    CAMPAIGN (the newest in --db when left out) is compared, at every load point both
    measured and every metric of --max-regression, with its baseline: by default the
    campaign's own baseline variant; with --baseline-db or --baseline-campaign, the
    variant of the same name (or --baseline-variant) in that campaign. A regression is
    established when the whole interval lies on the worse side of no change and the
    change is at least the metric's threshold. The startup (time to READY and each
    phase) is compared start by start, cold starts with cold ones and warm with warm.
    A candidate that failed fails the check.
    When GITHUB_STEP_SUMMARY is set, the markdown summary is appended to it.
    """
    try:
        code = _check(**options)
    except ServegateError as exc:
        if exc.exit_code == 2:  # CI logs say why no check was made
            from servegate.report.markdown import check_error_markdown

            _step_summary(check_error_markdown(str(exc)))
        raise
    sys.stdout.flush()
    sys.exit(code)


def _check(
    *,
    campaign: str | None,
    db: str,
    variants: tuple[str, ...],
    baseline_db: str | None,
    baseline_campaign: str | None,
    baseline_variant: str | None,
    max_regression: tuple[str, ...],
    as_json: bool,
    as_markdown: bool,
    json_file: Path | None,
    markdown_file: Path | None,
    confidence: float,
    seed: int,
    strict: bool,
) -> int:
    from servegate.report import check as checks
    from servegate.report.console import render_check_table
    from servegate.report.export import render_check_json
    from servegate.report.markdown import render_check_markdown

    thresholds = (
        checks.parse_thresholds(max_regression) if max_regression else checks.DEFAULT_THRESHOLDS
    )
    one_on_stdout(json=as_json, markdown=as_markdown)
    check_output_files({"--json-file": json_file, "--markdown-file": markdown_file})
    for path, flag in ((db, "--db"), (baseline_db, "--baseline-db")):
        if path is not None and not Path(path).is_file():
            raise UsageError(
                f"no database at {path}; pass an existing one with {flag} "
                "(servegate run CAMPAIGN.toml writes one)."
            )
    from servegate.report.data import load_campaign, resolve_campaign
    from servegate.store import Store

    # read-only: a check never writes, and works on an archived database
    with Store.open(db, read_only=True) as store:
        info = resolve_campaign(store, campaign)
        candidate = load_campaign(store, info.id)
    other_db = baseline_db is not None and not _same_file(baseline_db, db)
    base_name = baseline_campaign or info.name
    baseline = None
    if other_db:
        assert baseline_db is not None
        with Store.open(baseline_db, read_only=True) as store:
            baseline = load_campaign(store, resolve_campaign(store, base_name).id)
    elif base_name != info.name:
        with Store.open(db, read_only=True) as store:
            baseline = load_campaign(store, resolve_campaign(store, base_name).id)
    result = checks.run_check(
        candidate,
        baseline,
        thresholds=thresholds,
        variants=list(variants) or None,
        baseline_variant=baseline_variant,
        confidence=confidence,
        seed=seed,
        strict=strict,
    )
    markdown = render_check_markdown(result)
    if not (as_json or as_markdown):
        click.echo(render_check_table(result), nl=False)
    if as_markdown:
        print_out(markdown)
    if markdown_file is not None:
        write_file(markdown_file, markdown, flag="--markdown-file")
    if as_json or json_file is not None:
        document = render_check_json(result)
        if as_json:
            print_out(document)
        if json_file is not None:
            write_file(json_file, document, flag="--json-file")
    _step_summary(markdown)
    return result.exit_code


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _step_summary(markdown: str) -> None:
    """Append to the file GITHUB_STEP_SUMMARY names (GitHub Actions' job summary)."""
    target = os.environ.get("GITHUB_STEP_SUMMARY")
    if not target:
        return
    try:
        with open(target, "a", encoding="utf-8") as handle:
            handle.write(markdown + "\n")
    except OSError as exc:
        click.echo(
            f"warning: could not append the summary to GITHUB_STEP_SUMMARY ({target}): "
            f"{exc.strerror or exc}",
            err=True,
        )
