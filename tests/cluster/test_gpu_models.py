"""Fair comparisons on a cluster of two GPU models (two H200 nodes and one A100 node)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.campaign.helpers import query
from tests.cluster.conftest import RayCluster, start_cluster
from tests.cluster.helpers import attempts, report, servegate, write_campaign

pytestmark = [pytest.mark.ray, pytest.mark.timeout(600)]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RayCluster]:
    yield from start_cluster(["H200", "H200", "A100"], tmp_path_factory)


def test_the_baseline_runs_on_every_gpu_model_and_variants_compare_on_their_own(
    cluster: RayCluster, tmp_path: Path
) -> None:
    """The three variants are spread over the two GPU models, the baseline is started on
    both, and each variant is compared with the baseline measured on its GPU model only
    (one baseline start, its values those of that start). The cluster is named by the
    file's [cluster] table."""
    variants = {"baseline": "", "fast": "--itl-ms 2", "slow": "--itl-ms 20", "mid": "--itl-ms 12"}
    file = write_campaign(tmp_path, variants=variants, startup_s=1, ray=cluster.address)
    db = tmp_path / "s.db"
    done = servegate("run", file, "--db", db)
    assert done.returncode == 0, done.stderr
    rows = attempts(db)
    assert all(r["status"] == "done" for r in rows), rows
    model_of = {r["variant"]: r["gpu_model"] for r in rows if r["variant"] != "baseline"}
    # spread in proportion to the nodes (2 H200, 1 A100), the baseline's start on each
    assert sorted(model_of.values()) == ["A100", "H200", "H200"]
    baseline = {r["gpu_model"]: r for r in rows if r["variant"] == "baseline"}
    assert sorted(baseline) == ["A100", "H200"]
    assert sorted(r["start"] for r in baseline.values()) == [1, 2]
    assert all(r["node"] is not None for r in rows)

    data = report(db, "ray")
    for comparison in data["comparisons"]:
        if comparison["metric"] != "output_throughput" or comparison["variant"] == "baseline":
            continue
        model = model_of[comparison["variant"]]
        estimate = comparison["estimate"]
        assert estimate["starts_baseline"] == 1, comparison
        own = query(
            db,
            "SELECT p.output_throughput FROM point p WHERE p.attempt_id = ? AND p.load = ?",
            baseline[model]["id"],
            comparison["load"],
        )
        values = [float(str(v)) for (v,) in own]
        assert estimate["baseline"] == pytest.approx(sum(values) / len(values), rel=1e-6)
    attempts_json = [a for v in data["variants"] for a in v["attempts"]]
    assert {(a["node"], a["gpu_model"]) for a in attempts_json} == {
        (r["node"], r["gpu_model"]) for r in rows
    }
