"""A real Ray cluster on this machine for the campaign's cluster tests (servegate[ray]).

Each module starts its own small cluster (``ray.cluster_utils.Cluster``: a head without
GPUs and a few worker nodes that each declare one GPU and a GPU model, as Ray's
``accelerator_type:MODEL`` resource). The servers are the simulator, which needs no GPU.

The suite's leak check is replaced here: Ray's own processes (GCS, raylets, workers)
live as long as the module's cluster, so after each test no servegate process may be
left (keepers, simulated servers, ``servegate run``), and after the module the cluster
is shut down and nothing of this session is left at all.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from tests.conftest import leftovers, marked_processes


def servegate_processes() -> list[psutil.Process]:
    """Processes of this session running servegate (not Ray's own)."""
    found = []
    me = os.getpid()
    for proc in marked_processes():
        try:
            line = " ".join(proc.cmdline())
            ours = proc.pid != me and "servegate" in line and not line.startswith("ray::")
            if ours and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc)
        except psutil.Error:
            continue
    return found


def wait_none_left(timeout_s: float = 30.0) -> list[str]:
    """Wait until no servegate process of this session is left; those still alive."""
    deadline = time.monotonic() + timeout_s
    while True:
        alive = []
        for proc in servegate_processes():
            with contextlib.suppress(psutil.Error):
                alive.append(f"{proc.pid} {' '.join(proc.cmdline())[:120]}")
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.1)


@pytest.fixture(autouse=True)
def _no_leftover_processes(request: pytest.FixtureRequest) -> Iterator[None]:
    """Replaces the suite's check for the ``ray`` tests: no servegate process may outlive
    one; the other tests here (the main suite's) keep the suite's check of every process."""
    yield
    ray_test = request.node.get_closest_marker("ray") is not None
    alive = wait_none_left() if ray_test else leftovers()
    if alive:
        for line in alive:
            with contextlib.suppress(OSError):
                os.kill(int(line.split()[0]), signal.SIGKILL)
        pytest.fail("processes left running by this test:\n" + "\n".join(alive))


class RayCluster:
    """A started cluster: its address and worker nodes (``ray._private.node.Node``)."""

    def __init__(self, models: list[str], state: Path) -> None:
        from ray.cluster_utils import Cluster

        os.environ["SERVEGATE_STATE_DIR"] = str(state)
        os.environ["SERVEGATE_HISTORY"] = str(state / "history.db")
        self.cluster: Any = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
        self.workers: list[Any] = []
        for model in models:
            self.add(model)
        self.cluster.wait_for_nodes()
        self.address: str = self.cluster.address

    def add(self, model: str) -> Any:
        node = self.cluster.add_node(
            num_cpus=1, num_gpus=1, resources={f"accelerator_type:{model}": 1}
        )
        self.workers.append(node)
        return node

    def node_named(self, name: str) -> Any:
        """The worker node whose servegate name (``ADDRESS/NODEID8``) is ``name``."""
        for node in self.workers:
            if name.endswith("/" + node.node_id[:8]):
                return node
        raise KeyError(name)

    def shutdown(self) -> None:
        self.cluster.shutdown()


def start_cluster(
    models: list[str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RayCluster]:
    """A cluster with one worker node per GPU model given; shut down and checked after."""
    saved = {k: os.environ.get(k) for k in ("SERVEGATE_STATE_DIR", "SERVEGATE_HISTORY")}
    cluster = RayCluster(models, tmp_path_factory.mktemp("ray-state"))
    try:
        yield cluster
    finally:
        cluster.shutdown()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    alive = leftovers(grace_s=30.0)
    if alive:
        for line in alive:
            with contextlib.suppress(OSError):
                os.kill(int(line.split()[0]), signal.SIGKILL)
        pytest.fail("processes left after the Ray cluster was shut down:\n" + "\n".join(alive))
