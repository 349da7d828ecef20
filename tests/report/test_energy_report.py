"""The HTML report's energy frontier: throughput per GPU against per user, with the SLO.

A campaign written into a real SQLite file whose points carry `energy` (as
``PointResult.to_json()`` writes it where NVML counted the server's GPUs) and `slo`;
the constructed demo campaign, without energy, shows no frontier.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from servegate.report import build_report, render_html
from servegate.report.energy import frontier_points
from servegate.store import AttemptStatus, CampaignStatus, Store

from .campaign import _point, _verdict

# (load, output tok/s, TPOT p50 ms, SLO met): two GPUs, so per GPU is half the throughput
LOADS = ((1, 200.0, 10.0, True), (8, 1200.0, 20.0, True), (32, 2400.0, 40.0, False))


def _energy(tok_s: float, gpus: int = 2) -> dict[str, Any]:
    return {
        "gpus": list(range(gpus)),
        "by": "processes",
        "reason": None,
        "gpu_seen": True,
        "energy_j": 6000.0,
        "window_s": 10.0,
        "mean_power_w": 600.0,
        "output_tokens": int(tok_s * 10),
        "joules_per_output_token": 6000.0 / (tok_s * 10),
        "price_per_gpu_hour": None,
        "usd_per_million_output_tokens": None,
    }


def _slo(met: bool) -> dict[str, Any]:
    target = {"target": "tpot_p99<=25ms", "metric": "tpot", "stat": "p99", "bound_ms": 25.0}
    return {"met": met, "targets": [target | {"met": met}], "attainment": 1.0 if met else 0.2}


def _build(path: Path) -> None:
    rng = np.random.default_rng(3)
    with Store.open(path) as store:
        cid = store.campaign("energy", "[campaign]\nname = 'energy'\n", "baseline")
        for variant in ("baseline", "fast"):
            store.add_variant(cid, variant)
            aid = store.start_attempt(
                cid, variant=variant, server_key=variant, command=["python3", "-m", "x"],
                env={}, host="local", versions={"servegate": "0.1.0"}, git_commit=None,
            )  # fmt: skip
            store.record_verdict(aid, _verdict("ready", 3.0, [("load_weights", 0.2, 2.0)]))
            for load, tok_s, tpot, met in LOADS:
                for repeat in range(2):
                    result = _point(rng, throughput=tok_s, ttft_ms=40.0, itl_ms=8.0, requests=20)
                    result["summary"] = {"output_throughput": tok_s, "tpot_ms_p50": tpot}
                    result["energy"] = _energy(tok_s)
                    result["slo"] = _slo(met)
                    store.record_point(
                        aid, variant=variant, load=f"c={load}", repeat=repeat, result=result
                    )
            store.finish_attempt(aid, AttemptStatus.DONE)
        store.set_campaign_status(cid, CampaignStatus.DONE)


def test_the_frontier_plots_per_gpu_against_per_user_with_the_slo(tmp_path: Path) -> None:
    """Per GPU is the throughput over the 2 GPUs counted, per user 1000 / TPOT p50; the
    page has the plot, the TPOT target's boundary and a filled/open marker per SLO."""
    path = tmp_path / "servegate.db"
    _build(path)
    with Store.open(path) as store:
        report = build_report(store, "energy")
    points = [p for p in frontier_points(report.data) if p.variant == "baseline"]
    assert [(p.load, p.met) for p in points] == [("c=1", True), ("c=8", True), ("c=32", False)]
    assert [p.per_gpu_tok_s for p in points] == pytest.approx([100.0, 600.0, 1200.0])
    assert [p.per_user_tok_s for p in points] == pytest.approx([100.0, 50.0, 25.0])
    assert points[0].joules_per_output_token == pytest.approx(3.0)
    page = render_html(report)
    assert 'id="plot-energy"' in page
    assert "Energy: throughput per GPU against per user" in page
    assert "SLO tpot_p99\\u003c=25ms" in page  # plotly's JSON escapes "<"
    assert "circle-open" in page
    assert "<td>1,200.0</td><td>25.0</td><td>0.25</td><td>2</td>" in page


def test_no_energy_no_frontier(campaign_db: Path) -> None:
    """The demo campaign's points carry no energy: no frontier plot, no energy heading."""
    with Store.open(campaign_db) as store:
        report = build_report(store, "demo")
    assert frontier_points(report.data) == []
    page = render_html(report)
    assert 'id="plot-energy"' not in page
    assert "Energy:" not in page
