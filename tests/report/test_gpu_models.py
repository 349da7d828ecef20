"""Comparisons across GPU models: a variant meets only a baseline measured on its model.

A constructed campaign as a Ray cluster leaves it: the baseline started on an H200 node
(slow: 100 tok/s) and on an A100 node (200 tok/s); ``a100`` measured on an A100 node at
210 tok/s, ``h200`` on an H200 node at 105 tok/s, and ``b200`` on a B200 node, where no
baseline ran.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from servegate.report import build_report, render_html, render_json, render_markdown
from servegate.report.console import console_text
from servegate.store import AttemptStatus, CampaignStatus, Store

from .campaign import _point, _verdict

# variant, GPU model, node, output throughput
_STARTS = (
    ("baseline", "H200", "10.0.0.2/3fa2c1d0", 100.0),
    ("baseline", "A100", "10.0.0.3/9b01e77a", 200.0),
    ("a100", "A100", "10.0.0.3/9b01e77a", 210.0),
    ("h200", "H200", "10.0.0.4/51c0aa2e", 105.0),
    ("b200", "B200", "10.0.0.5/77aa01c3", 300.0),
)


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("gpu") / "s.db"
    rng = np.random.default_rng(3)
    with Store.open(path) as store:
        cid = store.campaign("models", "[campaign]\nname = 'models'\n", "baseline")
        for number, (variant, model, node, throughput) in enumerate(_STARTS, start=1):
            aid = store.start_attempt(
                cid,
                variant=variant,
                server_key=variant,
                command=["serve"],
                env={},
                host="local",
                versions={},
                git_commit=None,
                start=number if variant == "baseline" else 1,
                node=node,
                gpu_model=model,
            )
            store.record_verdict(aid, _verdict("ready", 3.0, [("load_weights", 0.2, 2.0)]))
            repeat0 = 0 if variant != "baseline" or model == "H200" else 3
            for rep in range(3):
                store.record_point(
                    aid,
                    variant=variant,
                    load="c=4",
                    repeat=repeat0 + rep,
                    result=_point(
                        rng, throughput=throughput, ttft_ms=40.0, itl_ms=8.0, requests=40
                    ),
                )
            store.finish_attempt(aid, AttemptStatus.DONE)
        store.set_campaign_status(cid, CampaignStatus.DONE)
    return path


def test_each_variant_is_compared_with_the_baseline_of_its_gpu_model(db: Path) -> None:
    """a100 against the A100 baseline (+5 %, not -48 % against all), h200 against the
    H200 baseline (+5 %, not +40 %): each against one baseline start."""
    with Store.open(db, read_only=True) as store:
        report = build_report(store, "models")
    for name, expected in (("a100", 210.0 / 200.0), ("h200", 105.0 / 100.0)):
        comp = report.get(name, "c=4", "output_throughput")
        assert comp is not None and comp.estimate is not None
        assert comp.estimate.ratio == pytest.approx(expected, rel=0.02)
        assert comp.estimate.starts_baseline == 1


def test_a_variant_without_a_baseline_on_its_gpu_model_is_not_compared(db: Path) -> None:
    """b200 ran where no baseline did: no comparison, and the reports say why."""
    with Store.open(db, read_only=True) as store:
        report = build_report(store, "models")
    assert report.get("b200", "c=4", "output_throughput") is None
    row = report.row("b200")
    assert row.reference is None
    assert row.not_compared is not None
    assert "B200" in row.not_compared and "no comparison" in row.not_compared
    assert row.not_compared in render_markdown(report)
    assert f"b200: {row.not_compared}" in console_text(report, width=300)
    assert row.not_compared.startswith("not compared: measured on B200, baseline only on A100")


def test_the_reports_say_which_node_measured_what(db: Path) -> None:
    """Each attempt's node and GPU model in the JSON; the console and markdown name them."""
    with Store.open(db, read_only=True) as store:
        report = build_report(store, "models")
    data = json.loads(render_json(report))
    placed = {
        (v["name"], a["node"], a["gpu_model"]) for v in data["variants"] for a in v["attempts"]
    }
    assert placed == {(v, node, model) for v, model, node, _ in _STARTS}
    text, markdown = console_text(report, width=200), render_markdown(report)
    page = render_html(report)
    assert "Measured on:" in text and "## Where each start ran" in markdown
    assert "<h2>Where each start ran</h2>" in page
    for _, model, node, _ in _STARTS:
        assert f"{node} ({model})" in text
        assert f"{node} ({model})" in markdown
        assert f"{node} ({model})" in page
    assert "a100: 10.0.0.3/9b01e77a (A100), start 1" in text
