"""``servegate compare``: bench results against bench results, with the report's statistics.

Thin: load the files (one sentence and exit 2 for a file that is not a bench result),
refuse unlike runs unless ``--force``, and print the table, ``--json`` or ``--markdown``.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from servegate.cli.campaign_report import CONFIDENCE, SEED, _percent, print_out, stdout_flag
from servegate.cli.options import examples
from servegate.errors import UsageError
from servegate.report.bootstrap import MIN_EFFECT
from servegate.report.runs import compare_runs, load_run, render_markdown, render_text


def _files(text: str, side: str) -> list[Path]:
    """A side: one file or several, separated by commas."""
    paths = [Path(x.strip()) for x in text.split(",") if x.strip()]
    if not paths:
        raise UsageError(f"side {side} names no file; give FILE.json or FILE1.json,FILE2.json.")
    return paths


@click.command(
    "compare",
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
    epilog="""\b
Each side is a bench --json-file result, or several (repeats) separated by commas; each
file counts as one server start. Throughputs get an interval from two files a side;
latency percentiles from one (order statistics over the requests). Points are matched by
label. Settings that change what is measured (API and chat template, input_len,
output_len, ignore_eos, dataset, rate, burstiness, concurrency, cache, tokenizer, and the
usage token totals per request) are compared first: runs that differ are refused.

\b
Exit codes: 0 compared (whatever the calls); 2 bad files or flags, or unlike runs
without --force.

"""
    + examples(
        "servegate bench --url http://127.0.0.1:8123 --concurrency 16 --json-file a.json",
        "servegate bench --url http://127.0.0.1:8124 --concurrency 16 --json-file b.json",
        "servegate compare a.json b.json",
        "servegate compare a1.json,a2.json b1.json,b2.json --markdown > compare.md",
    ),
)
@click.argument("side_a", metavar="A")
@click.argument("side_b", metavar="B")
@click.option("--force", is_flag=True, help="Compare even when the runs' settings differ.")
@CONFIDENCE
@click.option(
    "--min-effect",
    "min_effect",
    default=None,
    help="Smallest change called better or worse, e.g. 2% [default: 1%]",
)
@click.option(
    "--percentiles",
    "percentiles_text",
    default="50,99",
    show_default=True,
    help="Latency percentiles compared, e.g. 50,90,99,99.9.",
)
@SEED
@stdout_flag("json", "the comparison as JSON")
@stdout_flag("markdown", "the comparison as a Markdown table")
def compare(  # noqa: PLR0917 (click passes options by position)
    side_a: str,
    side_b: str,
    force: bool,
    confidence: float,
    min_effect: str | None,
    percentiles_text: str,
    seed: int,
    as_json: bool,
    as_markdown: bool,
) -> None:
    """Compare bench results B against A: each metric's ratio, interval and call."""
    if as_json and as_markdown:
        raise UsageError("give --json or --markdown, not both.")
    percentiles = _percentiles(percentiles_text)
    effect = MIN_EFFECT if min_effect is None else _percent(min_effect)
    runs_a = [load_run(p) for p in _files(side_a, "A")]
    runs_b = [load_run(p) for p in _files(side_b, "B")]
    comparison = compare_runs(
        runs_a,
        runs_b,
        force=force,
        confidence=confidence,
        min_effect=effect,
        seed=seed,
        percentiles=percentiles,
    )
    if as_json:
        print_out(json.dumps(comparison.to_json()) + "\n")
    elif as_markdown:
        print_out(render_markdown(comparison))
    else:
        for line in comparison.differences:
            click.echo(f"warning: the runs differ in {line} (--force)", err=True)
        click.echo(render_text(comparison))


def _percentiles(text: str) -> tuple[float, ...]:
    """``--percentiles``: numbers between 0 and 100."""
    try:
        items = tuple(float(x) for x in text.split(","))
    except ValueError:
        items = ()
    if not items or not all(0 < p < 100 for p in items):
        raise UsageError(
            f"--percentiles {text!r} must be numbers between 0 and 100 like 50,90,99,99.9."
        )
    return items
