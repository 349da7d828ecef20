"""``price_per_gpu_hour`` in ``[bench]``: read, carried to every point's settings, checked."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.campaign.helpers import write_campaign

from servegate.campaign.config import parse_campaign
from servegate.campaign.execute import _settings, tasks_of
from servegate.errors import ConfigError

BASE = '[[variant]]\nname = "baseline"\n'


def test_the_price_reaches_each_point_s_settings(tmp_path: Path) -> None:
    """price_per_gpu_hour = 2.5 is the plan's, and every task's BenchSettings carries it."""
    path = write_campaign(tmp_path, BASE, bench="requests = 6\nprice_per_gpu_hour = 2.5")
    plan = parse_campaign(path.read_text(), path=path)
    (variant,) = plan.variants
    assert variant.bench.price_per_gpu_hour == 2.5
    tasks = list(tasks_of(plan.groups[0], 1))
    assert tasks
    assert {_settings("http://127.0.0.1:1", t, "vllm").price_per_gpu_hour for t in tasks} == {2.5}


def test_no_price_is_none_not_zero(tmp_path: Path) -> None:
    """Without the key the plan's price is None (no cost is computed)."""
    path = write_campaign(tmp_path, BASE)
    (variant,) = parse_campaign(path.read_text(), path=path).variants
    assert variant.bench.price_per_gpu_hour is None


def test_a_price_that_is_not_positive_is_one_error_naming_the_key(tmp_path: Path) -> None:
    """price_per_gpu_hour = 0 fails at parse time, the message naming the key."""
    path = write_campaign(tmp_path, BASE, bench="requests = 6\nprice_per_gpu_hour = 0")
    with pytest.raises(ConfigError) as raised:
        parse_campaign(path.read_text(), path=path)
    assert "price_per_gpu_hour" in str(raised.value)
