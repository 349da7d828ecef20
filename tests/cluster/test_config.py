"""The campaign file's cluster keys: [cluster] ray, [server] gpus and resources.

No Ray needed: these run in the main suite."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from servegate.campaign import parse_campaign
from servegate.campaign.cluster import demand_of
from servegate.errors import ConfigError

FILE = textwrap.dedent(
    """\
    [campaign]
    name = "c"
    baseline = "b"

    [server]
    command = "serve --port {{port}}"
    {server}

    {cluster}

    [[variant]]
    name = "b"
    """
)


def _parse(server: str = "", cluster: str = "") -> object:
    return parse_campaign(FILE.format(server=server, cluster=cluster), path=Path("c.toml"))


def test_cluster_keys_are_read() -> None:
    """The address, the GPUs and custom resources one server asks a node for."""
    plan = parse_campaign(
        FILE.format(
            server="gpus = 8\nresources = { nvlink = 1, disk_tb = 0.5 }",
            cluster='[cluster]\nray = "10.0.0.1:6379"',
        )
    )
    assert plan.ray == "10.0.0.1:6379"
    assert (plan.gpus, plan.resources) == (8, (("disk_tb", 0.5), ("nvlink", 1.0)))
    assert demand_of(plan) == {"GPU": 8.0, "disk_tb": 0.5, "nvlink": 1.0}
    local = parse_campaign(FILE.format(server="", cluster=""))
    assert (local.ray, local.gpus, local.resources) == (None, 0, ())
    assert demand_of(local) == {"CPU": 1.0}  # a server asking for nothing takes a CPU


@pytest.mark.parametrize(
    ("server", "cluster", "said"),
    [
        ("gpus = -1", "", "c.toml:7: server.gpus: Input should be greater than or equal to 0"),
        ("gpus = 1.5", "", "c.toml:7: server.gpus: Input should be a valid integer (got 1.5)"),
        ("resources = { GPU = 2 }", "", "GPU is not a custom resource; set [server] gpus"),
        ("resources = { nvlink = 0 }", "", "an amount above 0"),
        ("", '[cluster]\nray = ""', "cluster.ray"),
        ("", '[cluster]\nray = "auto"\nnodes = 4', "unknown key cluster.nodes"),
    ],
)
def test_mistakes_in_cluster_keys_are_one_sentence(server: str, cluster: str, said: str) -> None:
    with pytest.raises(ConfigError) as caught:
        _parse(server, cluster)
    assert said in str(caught.value)
    assert str(caught.value).count("\n") == 0


def test_dry_run_names_the_cluster_and_what_a_start_asks_for(tmp_path: Path) -> None:
    """--dry-run says where the starts would run, without contacting the cluster."""
    from tests.cluster.helpers import servegate, write_campaign

    file = write_campaign(tmp_path, extra_server="resources = { nvlink = 1 }")
    done = servegate("run", file, "--ray", "10.255.255.1:6379", "--dry-run", timeout=60)
    assert done.returncode == 0, done.stderr
    assert (
        "on the Ray cluster at 10.255.255.1:6379: each server start a task asking a node "
        "for GPU=1, nvlink=1" in done.stdout
    )


def test_starts_are_spread_over_gpu_models_by_their_nodes(tmp_path: Path) -> None:
    """Several GPU models: the variants in proportion to each model's nodes, the baseline
    on every model used, its starts numbered on from round to round; one model: each
    server once per round, unpinned placement left to Ray."""
    from tests.cluster.helpers import write_campaign

    from servegate.campaign.rounds import _placed

    variants = {"baseline": "", **{f"v{n}": f"--itl-ms {n + 2}" for n in range(1, 6)}}
    plan = parse_campaign(write_campaign(tmp_path, variants=variants).read_text())
    order = list(range(len(plan.groups)))
    capacity: dict[str | None, int] = {"A100": 1, "H200": 3}
    first = _placed(plan, order, 1, capacity)
    models = {g.variants[0].name: m for g, _, m in first if g.variants[0].name != "baseline"}
    assert sorted(models.values(), key=str) == ["A100", "H200", "H200", "H200", "H200"]
    baseline = [(start, m) for g, start, m in first if g.variants[0].name == "baseline"]
    assert baseline == [(1, "A100"), (2, "H200")]
    second = _placed(plan, order, 2, capacity)
    assert [(s, m) for g, s, m in second if g.variants[0].name == "baseline"] == [
        (3, "A100"),
        (4, "H200"),
    ]
    assert {g.variants[0].name: m for g, _, m in second if g.variants[0].name != "baseline"} == (
        models
    )
    alone = _placed(plan, order, 2, {"H200": 4})
    assert [(s, m) for _, s, m in alone] == [(2, "H200")] * len(plan.groups)


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        (None, "accepts connections but sent nothing in 5 s"),
        (b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n", "answers, but not as a gRPC"),
    ],
    ids=["silent", "http"],
)
@pytest.mark.ray  # without Ray the sentence is the extra to install (test_node.py)
def test_a_port_that_is_no_ray_gcs_is_one_sentence(
    tmp_path: Path, answer: bytes | None, said: str
) -> None:
    """--ray on a port where something listens that is not a GCS (silent, or an HTTP
    server): exit 2 within the connect bound, one sentence naming --ray, none of Ray's
    own warnings, no database."""
    from tests.cluster.helpers import servegate, write_campaign
    from tests.listeners import Listener, answering, silent

    with Listener(silent if answer is None else answering(answer)) as listener:
        address = f"127.0.0.1:{listener.port}"
        file = write_campaign(tmp_path)
        done = servegate("run", file, "--ray", address, "--db", tmp_path / "a.db", timeout=120)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"Error: --ray {address} is not a Ray cluster's GCS: ")
    assert said in done.stderr
    assert "ray start --head" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert not (tmp_path / "a.db").exists()
