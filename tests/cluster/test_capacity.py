"""``find_max`` in a campaign on a real Ray cluster (a head and two GPU nodes on this
machine): each start's capacity found on its node, stored here, compared over starts."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.campaign.helpers import query
from tests.campaign.test_capacity import BENCH
from tests.cluster.conftest import RayCluster, start_cluster, wait_none_left
from tests.cluster.helpers import attempts, report, servegate, write_campaign

pytestmark = [pytest.mark.ray, pytest.mark.timeout(600)]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RayCluster]:
    yield from start_cluster(["H200", "H200"], tmp_path_factory)


def test_each_start_on_a_node_finds_its_capacity_and_the_report_compares_them(
    cluster: RayCluster, tmp_path: Path
) -> None:
    """Two variants, two starts each, on the cluster's nodes: four capacities stored with
    their attempts (each on a worker node), every probe a point, the faster variant's
    capacity higher at every start and the report's ratio over starts "better"."""
    file = write_campaign(tmp_path, name="ray-capacity", startup_s=1.0,
                          variants={"baseline": "", "fast": "--itl-ms 6"})  # fmt: skip
    text = file.read_text()
    head, _, variants = text.partition("[bench]")
    bench = "[bench]\nwarmup = 1\ninput_len = 32\noutput_len = 16\n" + BENCH + "\n"
    _, _, variants = variants.partition("[[variant]]")
    file.write_text(head + bench + f'\n[cluster]\nray = "{cluster.address}"\n\n[[variant]]'
                    + variants)  # fmt: skip
    db = tmp_path / "c.db"
    done = servegate("run", file, "--db", db, timeout=480)
    assert done.returncode == 0, done.stderr[-3000:]
    assert wait_none_left() == []
    rows = attempts(db)
    workers = {f"/{node.node_id[:8]}" for node in cluster.workers}
    assert len(rows) == 4 and all(r["node"][-9:] in workers for r in rows), rows
    found = {
        (str(name), int(str(start))): json.loads(str(data))
        for name, start, data in query(
            db, "SELECT v.name, c.start, c.json FROM capacity c JOIN variant v ON v.id = "
            "c.variant_id ORDER BY v.name, c.start",
        )
    }  # fmt: skip
    assert sorted(found) == [("baseline", 1), ("baseline", 2), ("fast", 1), ("fast", 2)]
    for data in found.values():  # each start's own answer: a value, or the top censored
        assert data["value"] is not None, data["words"]
        assert (
            data["censored"]
            or data["bracket"]["passes"] <= data["value"] < data["bracket"]["fails"]
        )
    stored = int(str(query(db, "SELECT count(*) FROM point")[0][0]))
    assert stored == sum(len(d["probes"]) for d in found.values())
    (comp,) = report(db, "ray-capacity")["capacity"]["comparisons"]
    assert comp["variant"] == "fast" and comp["estimate"]["starts_variant"] == 2, comp
    assert comp["words"].startswith("fast: "), comp["words"]
    assert "the baseline's capacity (concurrency) at tpot_mean<=9ms" in comp["words"]
