"""Campaigns: variants of a server, each preflighted, launched, gated, benchmarked and
stopped, every result written to the store as it happens.

    from servegate import campaign
    plan = campaign.load_campaign(Path("fusion.toml"))      # UsageError naming the fix
    done = campaign.run(plan, Path("servegate.db"), options=campaign.RunOptions(restarts=3))
    done.outcome.exit_code, done.report                     # nothing was printed

``run`` is the one way in, for ``servegate run`` and ``servegate demo`` alike
(``prepare_demo`` writes the shipped demo campaign for ``run``). It prints nothing; pass
a ``CampaignProgress`` on a stream to see the progress, and render the report. The names
are imported when first used, so that reading a campaign file does not pay for the load
generator's and the statistics' imports.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from servegate.campaign.config import (
        Campaign,
        LoadPoint,
        ServerGroup,
        Variant,
        check_programs,
        load_campaign,
        missing_programs,
        parse_campaign,
    )
    from servegate.campaign.demo import demo_text, prepare_demo
    from servegate.campaign.interrupt import Interrupted, Interrupts
    from servegate.campaign.progress import CampaignProgress
    from servegate.campaign.rounds import (
        PrecisionOutcome,
        RunOptions,
        RunOutcome,
        run_campaign,
        start_order,
    )
    from servegate.campaign.schema import MAX_RESTARTS
    from servegate.campaign.session import CampaignRun, run
    from servegate.campaign.tune import Trial, TuneOptions, TuneOutcome, run_tune
    from servegate.campaign.tune_report import search_report

# public name -> the module that defines it
_WHERE = {
    "Campaign": "config",
    "LoadPoint": "config",
    "ServerGroup": "config",
    "Variant": "config",
    "check_programs": "config",
    "load_campaign": "config",
    "missing_programs": "config",
    "parse_campaign": "config",
    "MAX_RESTARTS": "schema",
    "demo_text": "demo",
    "prepare_demo": "demo",
    "Interrupted": "interrupt",
    "Interrupts": "interrupt",
    "CampaignProgress": "progress",
    "PrecisionOutcome": "rounds",
    "RunOptions": "rounds",
    "RunOutcome": "rounds",
    "run_campaign": "rounds",
    "start_order": "rounds",
    "CampaignRun": "session",
    "run": "session",
    "Trial": "tune",
    "TuneOptions": "tune",
    "TuneOutcome": "tune",
    "run_tune": "tune",
    "search_report": "tune_report",
}

__all__ = [
    "MAX_RESTARTS",
    "Campaign",
    "CampaignProgress",
    "CampaignRun",
    "Interrupted",
    "Interrupts",
    "LoadPoint",
    "PrecisionOutcome",
    "RunOptions",
    "RunOutcome",
    "ServerGroup",
    "Trial",
    "TuneOptions",
    "TuneOutcome",
    "Variant",
    "check_programs",
    "demo_text",
    "load_campaign",
    "missing_programs",
    "parse_campaign",
    "prepare_demo",
    "run",
    "run_campaign",
    "run_tune",
    "search_report",
    "start_order",
]


def __getattr__(name: str) -> Any:
    """Import a public name's module on first use."""
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'servegate.campaign' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"servegate.campaign.{module}"), name)
    globals()[name] = value
    return value
