"""A campaign's overhead per start over SSH, against the same campaign run here.

    python benchmarks/remote_campaign.py [--variants 4] [--repeats 2]

The same campaign (the fast simulator; ``--variants`` variants that differ only in the
simulator's seed, so each is a start of its own; two tiny load points) runs twice: with
its servers here, and with its servers on a real sshd on 127.0.0.1
(``tests/remote/sshd.py``, servegate installed there by ``servegate remote install``),
the runner and the store here in both cases. The figure is the difference of the two
wall times divided by the number of starts: what SSH adds to each start (connections,
the job and its ``servegate.campaign.cluster`` process on the host, the frames of every
call, the logs copied back). Alternating runs, ``--repeats`` of each; medians reported.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any, cast

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.remote import sshd  # noqa: E402

SIM = (
    "{python} -m servegate sim --engine sglang --port {port} --profile fast "
    "--time-scale 0.2 --jitter 0.02"
)


def campaign_text(name: str, python: str, variants: int) -> str:
    # a seed of its own: each variant a server of its own (the same speed)
    body = "\n".join(f'[[variant]]\nname = "v{i}"\nargs = "--seed {i}"\n' for i in range(variants))
    return f"""[campaign]
name = "{name}"
baseline = "v0"

[server]
engine = "sglang"
command = "{SIM.replace("{python}", python)}"
port = "auto"
timeout_s = 60
stop_grace_s = 5
release_timeout_s = 10

[bench]
warmup = 1
input_len = 32
output_len = 4
concurrency = [1, 4]
requests = 6
repeats = 1

{body}"""


def run_once(folder: Path, text: str, host: str | None) -> float:
    from servegate.campaign.config import parse_campaign
    from servegate.campaign.interrupt import Interrupts
    from servegate.campaign.progress import CampaignProgress
    from servegate.campaign.rounds import RunOptions, run_campaign
    from servegate.campaign.ssh import SshHost
    from servegate.store import Store

    folder.mkdir(parents=True)
    campaign = parse_campaign(text)
    began = time.monotonic()
    with (
        Store.open(folder / "c.db") as store,
        Interrupts() as interrupts,
        open(os.devnull, "w") as sink,
    ):
        cluster = None if host is None else cast(Any, SshHost(host, campaign))
        outcome = run_campaign(
            campaign,
            store,
            options=RunOptions(log_dir=folder / "logs"),
            progress=CampaignProgress(sink),
            interrupts=interrupts,
            cluster=cluster,
        )
        statuses = [a.status for a in store.attempts(outcome.campaign_id)]
    if set(statuses) != {"done"}:
        raise SystemExit(f"a start did not finish: {statuses}")
    return time.monotonic() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--variants", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="sg-remote-campaign-"))
    os.environ["SERVEGATE_SSH_CONTROL_DIR"] = tempfile.mkdtemp(prefix="sgc-")
    remote = sshd.start(folder / "ssh", uuid.uuid4().hex)
    os.environ["SERVEGATE_SSH_CONFIG"] = str(remote.config)
    try:
        done = sshd.install(remote, dict(os.environ))
        if done.returncode != 0:
            raise SystemExit(done.stderr)
        local: list[float] = []
        over_ssh: list[float] = []
        for repeat in range(args.repeats):
            name = f"overhead-{repeat}"
            local.append(
                run_once(
                    folder / f"l{repeat}", campaign_text(name, sys.executable, args.variants), None
                )
            )
            text = campaign_text(name, remote.python, args.variants)
            over_ssh.append(run_once(folder / f"r{repeat}", text, remote.alias))
        starts = args.variants
        here, there = statistics.median(local), statistics.median(over_ssh)
        print(
            f"{starts} starts per campaign, {args.repeats} runs each, load {os.getloadavg()[0]:.1f}"
        )
        print(f"servers here:    {here:6.2f} s  ({', '.join(f'{t:.2f}' for t in local)})")
        print(f"servers on host: {there:6.2f} s  ({', '.join(f'{t:.2f}' for t in over_ssh)})")
        print(f"overhead per start over SSH: {(there - here) / starts * 1000:.0f} ms")
    finally:
        sshd.close_masters(dict(os.environ))
        sshd.stop(remote)
        shutil.rmtree(os.environ["SERVEGATE_SSH_CONTROL_DIR"], ignore_errors=True)


if __name__ == "__main__":
    main()
