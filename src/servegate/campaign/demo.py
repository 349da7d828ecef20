"""``servegate demo``: the shipped demo campaign, run on the simulated engine.

The demo is a real campaign (the file ``demo.toml`` next to this module, written into
the demo folder so that it can be read, edited and run again with ``servegate run``),
run by the same runner as any other, against the built-in simulator. It shows every
part once: a baseline, a change that helps, a change that crashes at start (recorded
with its kind and hint), speculative decoding, the comparison with intervals, and the
HTML report. ``servegate demo`` (cli/campaign.py) runs it through ``campaign.run`` and
says where the results are; this module only writes the campaign and picks its database.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from servegate.campaign.config import Campaign, load_campaign
from servegate.errors import RunnerBusyError, ServegateError, UsageError
from servegate.store import Store
from servegate.store.lock import busy_message

__all__ = ["DEMO_FILE", "demo_text", "prepare_demo"]

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


def prepare_demo(folder: Path, db: Path | None = None) -> tuple[Campaign, Path]:
    """Write the demo campaign into ``folder``; it and the database to run it into.

    Without ``db``: ``folder/servegate.db``, emptied (each demo starts from an empty
    database, unless a demo is running into it: RunnerBusyError). A ``db`` given is kept
    and the demo campaign re-measured in it.
    """
    campaign = _write_campaign(folder)
    return campaign, _fresh_db(folder) if db is None else db
