"""One campaign run, from a loaded campaign file to its report: the front door.

``servegate run`` and ``servegate demo`` both come through ``run``: it opens the store,
runs (or resumes) the campaign with Ctrl-C handled, and returns the outcome with the
report, which the command line renders exactly as ``servegate report`` does later. It
prints nothing: the progress goes to the ``CampaignProgress`` its caller installs (the
command line's writes on stderr), and none is said without one.

    from servegate import campaign
    done = campaign.run(campaign.load_campaign(Path("fusion.toml")), Path("servegate.db"))
    render_console(done.report)                      # servegate.report
    sys.exit(done.outcome.exit_code)
"""

from __future__ import annotations

from contextlib import ExitStack, closing
from dataclasses import dataclass
from pathlib import Path

from servegate.campaign.config import Campaign, check_programs
from servegate.campaign.interrupt import Interrupts
from servegate.campaign.progress import CampaignProgress
from servegate.campaign.rounds import RunOptions, RunOutcome, StartPool, run_campaign
from servegate.errors import UsageError
from servegate.remote import is_local
from servegate.report import Report, build_report
from servegate.store import Store

__all__ = ["CampaignRun", "run"]


@dataclass(frozen=True, slots=True, kw_only=True)
class CampaignRun:
    """What ``run`` did: the runner's outcome and the campaign's report."""

    outcome: RunOutcome
    report: Report
    db: Path


def run(
    campaign: Campaign,
    db: Path,
    *,
    options: RunOptions | None = None,
    progress: CampaignProgress | None = None,
) -> CampaignRun:
    """Run ``campaign`` into the database ``db``; its outcome and report.

    What happens is said to ``progress`` (none: nothing is said). With a Ray cluster's
    address (``options.ray``, else the file's
    ``[cluster] ray``) the starts run on the cluster, joined and checked first. Raises
    UsageError for a folder given as ``db``, a missing program or a cluster that cannot
    run the campaign, before anything starts; crashes and timeouts of servers are
    results, not errors.
    """
    if db.is_dir():
        raise UsageError(f"--db {db} is a folder; pass a database file such as {db}/servegate.db.")
    if is_local(campaign.host):  # a host's programs are checked there, at each start
        check_programs(campaign)
    progress = progress or CampaignProgress()
    options = options or RunOptions()
    address = options.ray or campaign.ray
    with ExitStack() as stack:
        cluster: StartPool | None = None
        if address is not None:  # joined (and checked) before the database is touched
            from servegate.campaign.cluster import connect

            cluster = stack.enter_context(closing(connect(address, campaign)))
        elif not is_local(campaign.host):  # servegate there checked before the database
            from servegate.campaign.ssh import SshHost

            cluster = SshHost(campaign.host, campaign)
        store = stack.enter_context(Store.open(db))
        interrupts = stack.enter_context(Interrupts(notify=progress.notice))
        outcome = run_campaign(
            campaign,
            store,
            options=options,
            progress=progress,
            interrupts=interrupts,
            cluster=cluster,
        )
        report = build_report(store, outcome.campaign_id)
    return CampaignRun(outcome=outcome, report=report, db=db)
