"""The load generator on the host (its raw samples copied back), or here through a tunnel."""

from __future__ import annotations

import json
import time
import urllib.request

from tests.conftest import free_port
from tests.remote.helpers import run, simulator_here
from tests.remote.sshd import Remote

from servegate.remote import parse_host
from servegate.remote.tunnel import Tunnel, needs_tunnel


def test_bench_runs_on_the_host_and_returns_its_samples(host: Remote) -> None:
    """bench over SSH: the results document with every request's raw sample comes back."""
    port = free_port()
    with simulator_here(port, "0"):
        code, out, err = run(
            host,
            "cli",
            "bench",
            "--json",
            "-q",
            "--url",
            f"http://127.0.0.1:{port}",
            "--requests",
            "8",
            "--concurrency",
            "2",
            "--input-len",
            "16",
            "--output-len",
            "4",
        )
        assert code == 0, (out, err)
        (line,) = out
        results = json.loads(line)
        (point,) = results["points"]
        assert point["completed"] == 8
        assert len(point["samples"]) == 8


def test_a_tunnel_reaches_the_hosts_loopback(host: Remote) -> None:
    """A URL of the host's loopback, reached from here through ssh -L, and closed after."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    assert needs_tunnel(url) and not needs_tunnel("http://gpu-1:30000")
    with simulator_here(port, "0"):
        with Tunnel(parse_host(host.alias), url) as tunnel:
            assert tunnel.local_port != port
            health = tunnel.rewrite(f"{url}/health")
            for _ in range(200):  # the simulator binds its port a moment after it starts
                try:
                    with urllib.request.urlopen(health, timeout=5) as response:
                        assert response.status == 200
                        break
                except OSError:
                    time.sleep(0.05)
            else:
                raise AssertionError(f"{health} never answered")
        assert tunnel.proc.poll() is not None
