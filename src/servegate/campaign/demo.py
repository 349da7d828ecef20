"""``servegate demo``: the shipped demo campaign, run on the simulated engine.

The demo is a real campaign (the file ``demo.toml`` next to this module, written into
the demo folder so that it can be read, edited and run again with ``servegate run``),
run by the same runner as any other, against the built-in simulator. It shows every
part once: a baseline, a change that helps, a change that crashes at start (recorded
with its kind and hint), speculative decoding, the comparison with intervals, and the
HTML report.
"""

from __future__ import annotations

import sys
from importlib import resources
from pathlib import Path

from servegate.campaign.config import Campaign, load_campaign
from servegate.campaign.progress import CampaignProgress
from servegate.campaign.results import html_available, write_html
from servegate.campaign.runner import RunOptions
from servegate.campaign.session import run
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


def _write_campaign(folder: Path) -> Campaign:
    """Write the demo campaign file into ``folder`` and load it."""
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
    return load_campaign(campaign_file)


def _fresh_db(folder: Path) -> Path:
    """``folder/servegate.db``, emptied (unless a demo is running into it)."""
    db = folder / "servegate.db"
    _refuse_live_runner(db)  # a demo running in this folder keeps its database
    for stale in (db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")):
        stale.unlink(missing_ok=True)
    return db


def run_demo(folder: Path, *, db: Path | None = None, quiet: bool = False) -> int:
    """Write the demo campaign into ``folder``, run it, print the results; the exit code.

    With the default database (``folder/servegate.db``) each demo starts from an empty
    database; a database given with ``db`` is kept and the demo campaign re-measured.
    """
    campaign = _write_campaign(folder)
    db = _fresh_db(folder) if db is None else db
    progress = CampaignProgress(quiet=quiet)
    progress.info(f"demo campaign written to {campaign.path}; running it into {db}")
    done = run(campaign, db, options=RunOptions(log_dir=folder / "logs"), progress=progress)
    if done.outcome.status == "interrupted":
        print(f"Interrupted; what was measured is kept in {db}.", file=sys.stderr, flush=True)
        return done.outcome.exit_code
    if html_available():
        html_path = write_html(done.report, folder / "report.html")
        print(f"HTML report: {html_path.resolve()}", flush=True)
    else:
        print(
            "HTML report: needs plotly; pip install 'servegate[html]', then "
            f"servegate report --db {db} demo --html-file {folder / 'report.html'}",
            flush=True,
        )
    print(
        f"Campaign file: {campaign.path}  (edit it and run: servegate run {campaign.path} "
        f"--db {db})",
        file=sys.stderr,
        flush=True,
    )
    return done.outcome.exit_code
