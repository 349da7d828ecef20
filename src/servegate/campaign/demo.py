"""``servegate demo``: the shipped demo campaign, run on the simulated engine.

The demo is a real campaign (the file ``demo.toml`` next to this module, written into
the demo folder so that it can be read, edited and run again with ``servegate run``),
run by the same runner as any other, against the built-in simulator. It shows every
part once: a baseline, a change that helps, a change that crashes at start (recorded
with its kind and hint), speculative decoding, the comparison with intervals, and the
HTML report.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import click

from servegate.campaign.config import load_campaign
from servegate.campaign.interrupt import Interrupts
from servegate.campaign.progress import CampaignProgress
from servegate.campaign.results import html_available, print_results, write_html
from servegate.campaign.runner import RunOptions, run_campaign
from servegate.errors import RunnerBusyError, ServegateError, UsageError
from servegate.store import Store
from servegate.store.lock import busy_message

__all__ = ["DEMO_FILE", "demo_text", "run_demo"]

DEMO_FILE = "demo.toml"


def demo_text() -> str:
    """The shipped demo campaign file."""
    return resources.files("servegate.campaign").joinpath(DEMO_FILE).read_text(encoding="utf-8")


def _refuse_live_runner(db: Path) -> None:
    """Raise RunnerBusyError when a run is writing to ``db``; a damaged file is no obstacle."""
    if not db.is_file():
        return
    try:
        store = Store.open(db, read_only=True)
    except ServegateError:
        return  # damaged or foreign: the demo replaces it
    with store:
        live = store.live_runner()
    if live is not None:
        raise RunnerBusyError(busy_message(str(db), live))


def run_demo(folder: Path, *, db: Path | None = None, quiet: bool = False) -> int:
    """Write the demo campaign into ``folder``, run it, print the results; the exit code.

    With the default database (``folder/servegate.db``) each demo starts from an empty
    database; a database given with ``db`` is kept and the demo campaign re-measured.
    """
    if folder.exists() and not folder.is_dir():
        raise UsageError(f"--dir {folder} is a file; pass a folder for the demo's files.")
    campaign_file = folder / DEMO_FILE
    try:
        folder.mkdir(parents=True, exist_ok=True)
        campaign_file.write_text(demo_text(), encoding="utf-8")
    except OSError as exc:
        raise UsageError(
            f"cannot write the demo's files in {folder} ({exc.strerror or exc}); "
            "pass a writable folder with --dir."
        ) from None
    campaign = load_campaign(campaign_file)
    if db is None:
        db = folder / "servegate.db"
        _refuse_live_runner(db)  # a demo running in this folder keeps its database
        for stale in (db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")):
            stale.unlink(missing_ok=True)
    progress = CampaignProgress(quiet=quiet)
    progress.info(f"demo campaign written to {campaign_file}; running it into {db}")
    with Store.open(db) as store, Interrupts() as interrupts:
        outcome = run_campaign(
            campaign,
            store,
            options=RunOptions(log_dir=folder / "logs"),
            progress=progress,
            interrupts=interrupts,
        )
        report = print_results(store, outcome.campaign_id)
    if outcome.status == "interrupted":
        click.echo(f"Interrupted; what was measured is kept in {db}.", err=True)
        return outcome.exit_code
    if html_available():
        html_path = write_html(report, folder / "report.html")
        click.echo(f"HTML report: {html_path.resolve()}")
    else:
        click.echo(
            "HTML report: needs plotly; pip install 'servegate[html]', then "
            f"servegate report --db {db} demo --html {folder / 'report.html'}"
        )
    click.echo(
        f"Campaign file: {campaign_file}  (edit it and run: servegate run {campaign_file} "
        f"--db {db})",
        err=True,
    )
    return outcome.exit_code
