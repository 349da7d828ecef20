"""The SQLite store of campaigns: schema migrations, writes as results happen, queries.

from servegate.store import Store
with Store.open("servegate.db") as store:
    cid = store.campaign(name, config_text, baseline)
"""

from __future__ import annotations

from servegate.store.inputs import PointRecord, StopRecord, VerdictRecord
from servegate.store.records import (
    AttemptInfo,
    CampaignInfo,
    CapacityInfo,
    PhaseInfo,
    PointInfo,
    Samples,
)
from servegate.store.schema import MIGRATIONS, Migration
from servegate.store.status import AttemptStatus, CampaignStatus
from servegate.store.store import ATTEMPT_STATUSES, CAMPAIGN_STATUSES, Store

__all__ = [
    "ATTEMPT_STATUSES",
    "CAMPAIGN_STATUSES",
    "MIGRATIONS",
    "AttemptInfo",
    "AttemptStatus",
    "CampaignInfo",
    "CampaignStatus",
    "CapacityInfo",
    "Migration",
    "PhaseInfo",
    "PointInfo",
    "PointRecord",
    "Samples",
    "StopRecord",
    "Store",
    "VerdictRecord",
]
