"""A flag search's report (the Pareto front, importances, the crash map) from the store.

``servegate tune`` passes its own trials (its skips included: they are never started, so
never stored); ``servegate report`` reads the trials back from the store, parsing each
variant's name with the ``[search]`` of the stored campaign file.

    with Store.open(db, read_only=True) as store:
        found = search_report(store, cid)      # None: the campaign is not a tune
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping, Sequence
from typing import Any

from servegate.campaign.tune import SearchSpace, Trial, _space, _stored_trials, distributions
from servegate.errors import ConfigError
from servegate.report.search import SearchReport, build_search
from servegate.store import Store

__all__ = ["search_report", "stored_space"]


def stored_space(config_text: str) -> SearchSpace | None:
    """The ``[search]`` of a stored campaign file; None when it has none (not a tune)."""
    try:
        raw = tomllib.loads(config_text).get("search")
    except tomllib.TOMLDecodeError:
        return None
    if not isinstance(raw, dict):
        return None
    try:
        return _space(raw, "the stored campaign file")
    except ConfigError:
        return None


def search_report(
    store: Store, cid: int, trials: Sequence[Trial] | None = None
) -> SearchReport | None:
    """The search report of campaign ``cid``; None when it is not a tune campaign.

    ``trials``: the search's own, with its skips; None reads them from the store.
    """
    info = store.campaign_info(cid)
    space = stored_space(info.config_text)
    if space is None:
        return None

    def distributions_of(optuna: Any, values: Mapping[str, Any]) -> dict[str, Any]:
        return distributions(optuna, space, values)

    return build_search(
        store,
        cid,
        objective=space.objective,
        trials=list(trials) if trials is not None else _stored_trials(store, cid, space, info),
        params=space.params,
        distributions_of=distributions_of,
        skips_known=trials is not None,
    )
