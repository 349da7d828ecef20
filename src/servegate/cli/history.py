"""``servegate history``: the past starts of plain launches and waits, with their phases.

One line per start (newest first), the kind and reason of a CRASH or TIMEOUT, and its
phases with their durations and progress; ``--json`` prints a JSON list. The database:
$SERVEGATE_HISTORY, else $XDG_DATA_HOME/servegate/history.db, else
~/.local/share/servegate/history.db.
"""

from __future__ import annotations

import json

import click

from servegate._text import printable
from servegate.cli.options import engine, examples, json_flag
from servegate.errors import UsageError
from servegate.gate.verdict import Status
from servegate.redact import scrub


@click.command(
    epilog=examples(
        "servegate history",
        "servegate history --engine vllm --status ready --limit 5",
        "servegate history --config 3fa9c1 --json",
    )
    + "\n\n\b\n"
    "Exit codes: 0 listed (nothing printed when there is no start), 2 bad usage or input."
)
@engine("Only starts of this engine profile.", default=None)
@click.option(
    "--status",
    type=click.Choice([str(status) for status in Status]),
    help="Only starts with this verdict.",
)
@click.option("--config", "config", metavar="KEY", help="Only this configuration (key or prefix).")
@click.option("--limit", type=int, default=20, show_default=True, help="At most this many starts.")
@json_flag("the starts as a list")
def history(
    engine: str | None, status: str | None, config: str | None, limit: int, as_json: bool
) -> None:
    """List past starts (launch, wait): verdict (a CRASH's or TIMEOUT's kind and reason),
    cold or warm, phases, ETA against actual."""
    from servegate.startup.history import History, history_path
    from servegate.startup.status import describe_progress

    if limit < 1:
        raise UsageError(f"--limit must be 1 or more, not {limit}.")
    path = history_path()
    if not path.exists():
        if as_json:
            click.echo("[]")
        return
    with History.open(path, create=False) as db:
        rows = db.starts(config=config, engine=engine, status=status, limit=limit)
    if as_json:
        click.echo(json.dumps([row.to_json() for row in rows]))
        return
    from servegate.gate.verdict import PhaseProgress

    for row in rows:
        temperature = {True: "cold", False: "warm", None: "-"}[row.cold]
        if row.startup.get("already_up"):
            temperature = "already up"
        eta = row.startup.get("eta_s")
        eta_text = f", ETA {eta:.1f}s" if eta is not None else ""
        click.echo(
            f"#{row.id} {row.started_at[:19]} {row.engine} {row.status.upper()} "
            f"{row.elapsed_s:.1f}s {temperature}{eta_text} [{row.config_key}] "
            f"{printable(' '.join(row.command)[:120])}"
        )
        if row.status != Status.READY and (row.kind or row.reason):
            why = f"{row.kind}: {row.reason}" if row.kind else row.reason
            click.echo(f"    {printable(scrub(why), keep_tab=True)}")
        for phase in row.phases:
            end = phase.get("end_s")
            took = f"{end - phase['start_s']:.1f}s" if end is not None else "open"
            progress = describe_progress(PhaseProgress.from_json(phase.get("progress")))
            name = printable(str(phase["name"]))
            click.echo(f"    {name:<28} {took:>8}  {progress}".rstrip())
