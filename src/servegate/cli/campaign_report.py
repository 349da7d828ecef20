"""``servegate report``: re-render a stored campaign as a table, markdown, JSON, CSV or HTML."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import click

from servegate.errors import UsageError

DEFAULT_DB = "servegate.db"

# the bootstrap's options, shared with ``servegate check``
CONFIDENCE = click.option(
    "--confidence",
    default=0.95,
    show_default=True,
    type=click.FloatRange(0.5, 0.999),
    help="Coverage of the confidence intervals.",
)
SEED = click.option(
    "--seed", default=0, show_default=True, help="Seed of the bootstrap resampling."
)


def _write(target: str, content: str) -> None:
    """Write ``content`` to ``target`` atomically, or to stdout for ``-``."""
    if target == "-":
        sys.stdout.write(content)
        sys.stdout.flush()
        return
    path = Path(target)
    if not path.parent.is_dir():
        raise UsageError(
            f"the folder of {target} does not exist; create it or choose another path."
        )
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        os.fchmod(fd, 0o644)  # reports are meant to be shared; mkstemp makes 0600
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(content)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    click.echo(f"wrote {path}", err=True)


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
    epilog="""\b
Example:
  servegate report                                  # newest campaign in servegate.db
  servegate report allreduce-fusion --html fusion.html --markdown -
  servegate report --db runs.db spec --json spec.json --csv spec.csv
  servegate report fusion --min-effect 2%          # call only changes of 2 % or more

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
@click.option("--html", "html_out", metavar="FILE", help="Write the HTML report with plots.")
@click.option("--markdown", "md_out", metavar="FILE", help="Write markdown ('-' for stdout).")
@click.option("--json", "json_out", metavar="FILE", help="Write JSON ('-' for stdout).")
@click.option("--csv", "csv_out", metavar="FILE", help="Write CSV ('-' for stdout).")
@CONFIDENCE
@SEED
@click.option(
    "--min-effect",
    "min_effect",
    default=None,
    metavar="PERCENT",
    help="The smallest change called better or worse (2 or 2% for 2 %; 0 calls any "
    "change whose interval excludes no change). Default: the campaign file's "
    "[campaign] min_effect, else 1%.",
)
def report(
    *,
    campaign: str | None,
    db: str,
    html_out: str | None,
    md_out: str | None,
    json_out: str | None,
    csv_out: str | None,
    confidence: float,
    seed: int,
    min_effect: str | None,
) -> None:
    """Render a stored campaign: every variant against the baseline, with intervals.

    Prints the table (variant, status, startup, tok/s at each load point with the change
    vs baseline and its interval) unless an export goes to stdout ('-'). CAMPAIGN is a
    campaign name; the newest campaign in the database when left out.
    """
    threshold = None if min_effect is None else _percent(min_effect)
    outputs = {"--html": html_out, "--markdown": md_out, "--json": json_out, "--csv": csv_out}
    to_stdout = [flag for flag, target in outputs.items() if target == "-"]
    if len(to_stdout) > 1:
        raise UsageError(
            f"only one output can go to stdout, not {' and '.join(to_stdout)}; "
            "give the others a file name."
        )
    if not Path(db).is_file():
        raise UsageError(
            f"no database at {db}; run a campaign first (servegate run CAMPAIGN.toml) "
            "or pass --db FILE."
        )
    from servegate import report as reports
    from servegate.store import Store

    if html_out is not None:
        from servegate.report.html import require_plotly

        require_plotly()  # fail before any work when the html extra is missing
    # read-only: a report never writes, and works in a read-only folder (an archive)
    with Store.open(db, read_only=True) as store:
        result = reports.build_report(
            store, campaign, confidence=confidence, seed=seed, min_effect=threshold
        )
    if not to_stdout:
        reports.render_console(result)
    if md_out is not None:
        _write(md_out, reports.render_markdown(result))
    if json_out is not None:
        _write(json_out, reports.render_json(result))
    if csv_out is not None:
        _write(csv_out, reports.render_csv(result))
    if html_out is not None:
        _write(html_out, reports.render_html(result))
