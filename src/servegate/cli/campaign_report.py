"""``servegate report``: re-render a stored campaign as a table, markdown, JSON, CSV or HTML.

The grammar of ``servegate.cli.options``: ``--json``, ``--markdown`` and ``--csv`` print
that format on stdout instead of the table (at most one of them); ``--json-file``,
``--markdown-file``, ``--csv-file`` and ``--html-file`` write files beside it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from servegate._files import check_output, write_output
from servegate.cli.options import FiniteRange, examples, json_file, json_flag, not_stdout
from servegate.errors import UsageError

DEFAULT_DB = "servegate.db"

F = TypeVar("F", bound=Callable[..., Any])

# the bootstrap's options, shared with ``servegate check``
CONFIDENCE = click.option(
    "--confidence",
    default=0.95,
    show_default=True,
    type=FiniteRange(0.5, 0.999),
    help="Coverage of the confidence intervals.",
)
SEED = click.option(
    "--seed",
    default=0,
    show_default=True,
    type=click.IntRange(min=0),
    help="Seed of the bootstrap resampling (0 or more).",
)


def stdout_flag(name: str, what: str) -> Callable[[F], F]:
    """``--NAME``: print ``what`` on stdout instead of the table (parameter ``as_NAME``)."""
    return click.option(f"--{name}", f"as_{name}", is_flag=True, help=f"Print {what} on stdout.")


def file_option(name: str, what: str) -> Callable[[F], F]:
    """``--NAME-file FILE``: write ``what`` to FILE (parameter ``NAME_file``)."""
    return click.option(
        f"--{name}-file",
        f"{name}_file",
        type=click.Path(dir_okay=False, path_type=Path),
        metavar="FILE",
        callback=not_stdout,
        help=f"Write {what} to FILE.",
    )


def one_on_stdout(**flags: bool) -> None:
    """UsageError when more than one format is asked for on stdout (``--json --csv``)."""
    chosen = [f"--{name}" for name, on in flags.items() if on]
    if len(chosen) > 1:
        raise UsageError(
            f"only one output can go to stdout, not {' and '.join(chosen)}; "
            "write the others to files (--json-file, --markdown-file, --csv-file FILE)."
        )


def check_output_files(files: dict[str, Path | None]) -> None:
    """UsageError, before any work or output, for the first ``--X-file FILE`` (flag ->
    path) that cannot be written: its folder is missing or read-only, or it is, or it is a
    folder or a socket."""
    for flag, path in files.items():
        if path is not None:
            check_output(path, flag=flag)


def write_file(path: Path, content: str, *, flag: str = "the output file") -> None:
    """Write ``content`` to ``path`` (``servegate._files``: atomically for a file, in
    place for a FIFO or a device, through a link); say so on stderr."""
    write_output(path, content, flag=flag)
    click.echo(f"wrote {path}", err=True)


def print_out(content: str) -> None:
    """``content`` on stdout, as is."""
    sys.stdout.write(content)
    sys.stdout.flush()


def _percent(text: str) -> float:
    """``--min-effect`` as a fraction: ``2``, ``2%`` and ``2 %`` are 0.02."""
    try:
        value = float(text.strip().removesuffix("%").strip())
    except ValueError:
        value = float("nan")
    if not 0.0 <= value < 100.0:
        raise UsageError(
            f"--min-effect {text}: give a percentage from 0 to 100, e.g. --min-effect 2%."
        )
    return value / 100.0


@click.command(
    "report",
    epilog=examples(
        "servegate report                                  # newest campaign in servegate.db",
        "servegate report allreduce-fusion --html-file fusion.html --markdown",
        "servegate report --db runs.db spec --json-file spec.json --csv-file spec.csv",
        "servegate report fusion --min-effect 2%          # call only changes of 2 % or more",
    )
    + """

\b
Exit codes: 0 written; 2 unknown campaign, missing or damaged database, missing
plotly, bad option; 3 an I/O error reading the database.""",
)
@click.argument("campaign", required=False)
@click.option(
    "--db",
    "db",
    default=DEFAULT_DB,
    show_default=True,
    metavar="FILE",
    help="The campaign database.",
)
@json_flag("the report")
@stdout_flag("markdown", "the report as markdown")
@stdout_flag("csv", "the report as CSV")
@json_file("the report")
@file_option("markdown", "the report as markdown")
@file_option("csv", "the report as CSV")
@file_option("html", "the HTML report with plots (needs the html extra)")
@CONFIDENCE
@SEED
@click.option(
    "--min-effect",
    "min_effect",
    default=None,
    metavar="PERCENT",
    help="The smallest change called better or worse (2 or 2% for 2 %; 0 calls any "
    "change whose interval excludes no change). "
    "[default: the campaign file's [campaign] min_effect, else 1%]",
)
def report(
    *,
    campaign: str | None,
    db: str,
    as_json: bool,
    as_markdown: bool,
    as_csv: bool,
    json_file: Path | None,
    markdown_file: Path | None,
    csv_file: Path | None,
    html_file: Path | None,
    confidence: float,
    seed: int,
    min_effect: str | None,
) -> None:
    """Render a stored campaign: every variant against the baseline, with intervals.

    Prints the table (variant, status, startup, tok/s at each load point with the change
    vs baseline and its interval) unless --json, --markdown or --csv prints that format
    instead. CAMPAIGN is a campaign name; the newest campaign in the database when left
    out.
    """
    threshold = None if min_effect is None else _percent(min_effect)
    one_on_stdout(json=as_json, markdown=as_markdown, csv=as_csv)
    check_output_files(
        {
            "--json-file": json_file,
            "--markdown-file": markdown_file,
            "--csv-file": csv_file,
            "--html-file": html_file,
        }
    )
    if not Path(db).is_file():
        raise UsageError(
            f"no database at {db}; run a campaign first (servegate run CAMPAIGN.toml) "
            "or pass --db FILE."
        )
    from servegate import report as reports
    from servegate.store import Store

    if html_file is not None:
        from servegate.report.html import require_plotly

        require_plotly()  # fail before any work when the html extra is missing
    # read-only: a report never writes, and works in a read-only folder (an archive)
    with Store.open(db, read_only=True) as store:
        result = reports.build_report(
            store, campaign, confidence=confidence, seed=seed, min_effect=threshold
        )
        if "[search" in result.campaign.config_text:  # a tune: its search report too
            from dataclasses import replace

            from servegate.campaign import search_report

            result = replace(result, search=search_report(store, result.campaign.id))
    outputs = (  # markdown, JSON, CSV, HTML: each rendered once
        (as_markdown, markdown_file, reports.render_markdown, "--markdown-file"),
        (as_json, json_file, reports.render_json, "--json-file"),
        (as_csv, csv_file, reports.render_csv, "--csv-file"),
        (False, html_file, reports.render_html, "--html-file"),
    )
    if not (as_json or as_markdown or as_csv):
        reports.render_console(result)
    for on_stdout, path, render, flag in outputs:
        if on_stdout or path is not None:
            text = render(result)
            if on_stdout:
                print_out(text)
            if path is not None:
                write_file(path, text, flag=flag)
