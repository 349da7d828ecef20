"""A campaign's servers on one host over SSH (``[server] host = "ssh://..."``).

The runner and the store stay here; each start runs on the host, one after another,
through servegate there: the same ``StartExecutor`` as a local start (preflight of the
port, the leftover processes and the GPU memory on the host, launch, gate, benchmark,
stop), run by ``python -m servegate.campaign.cluster`` as on a cluster node, as a job
that outlives a dropped connection (``servegate.remote.run_node``). Its calls to the
recorder come back as frames and are made on the runner's ``Recorder`` here, so that
this side stays the only writer of the store. The server logs are written on the host
(``~/.servegate/campaigns/NAME``) and copied next to the local logs after each start.

    host = SshHost("ssh://root@gpu-1", campaign)   # used where a Ray cluster would be
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from servegate.campaign.cluster import Flight, replay
from servegate.campaign.config import Campaign
from servegate.campaign.execute import Placement, StartSpec, slug
from servegate.campaign.interrupt import Interrupted, Interrupts
from servegate.errors import UsageError
from servegate.remote import Output, parse_host
from servegate.remote.client import connect, fetch, run_node
from servegate.store import AttemptStatus

if TYPE_CHECKING:
    from servegate.campaign.runner import Recorder

__all__ = ["SshHost"]


class SshHost:
    """The runner's side of a campaign whose servers run on one SSH host."""

    def __init__(self, host: str, campaign: Campaign) -> None:
        self.host = parse_host(host)
        self.campaign = campaign
        self.capacity: dict[str | None, int] = {None: 1}  # one start at a time
        agent = connect(self.host)  # servegate there, this version (or exit 2 naming install)
        agent.close()
        self.folder = f"campaigns/{slug(campaign.name)}"
        self.remote_logs = f"{agent.hello['dir']}/{self.folder}"

    def close(self) -> None:
        """Nothing to leave: each start's connection ends with it."""

    def describe(self) -> str:
        """One line: where the starts run."""
        return f"servers on {self.host.spec} over SSH, one start after another"

    def run_round(
        self,
        specs: Sequence[tuple[StartSpec, str | None]],
        recorder: Recorder,
        interrupts: Interrupts,
        *,
        log_dir: Path,
        done: Callable[[], set[tuple[str, str, int]]],
    ) -> None:
        """Run the starts ``specs`` on the host one after another; every call of theirs
        goes to ``recorder``; each start's logs are copied into ``log_dir``."""
        del done  # a start that loses its connection is followed again, not repeated
        for spec, model in specs:
            interrupts.check()
            self._start(spec, model, recorder, interrupts, log_dir)
            if interrupts.signum is not None:
                interrupts.acknowledge()
                raise Interrupted(interrupts.signum)

    def _start(
        self,
        spec: StartSpec,
        model: str | None,
        recorder: Recorder,
        interrupts: Interrupts,
        log_dir: Path,
    ) -> None:
        flight = Flight(spec=spec, model=model, token=0)
        placement = Placement(node=self.host.spec)
        job = pickle.dumps((self.campaign, spec, self.remote_logs, placement))

        def on_frame(frame: bytes) -> None:
            method, args, kwargs = pickle.loads(frame)  # noqa: S301 (servegate on the host)
            with interrupts.shielded():  # a call replayed whole, or not at all
                replay(flight, method, args, kwargs, recorder)

        output = Output(out=recorder.info, err=recorder.info, note=recorder.warning)
        try:
            code = run_node(self.host, job, on_frame=on_frame, output=output)
            reason = f"servegate on {self.host.spec} ended this start with exit code {code}"
        except (OSError, UsageError) as exc:  # no connection for longer than the reconnect window
            reason = f"the connection to {self.host.spec} was lost ({exc})"
        if flight.open:  # attempts the host never closed
            with interrupts.shielded():
                for aid in sorted(flight.open):
                    recorder.finish(aid, AttemptStatus.LOST, reason)
            recorder.failure(f"{spec.tag} {spec.names}: {reason}")
        self._copy_logs(log_dir, recorder)

    def _copy_logs(self, log_dir: Path, recorder: Recorder) -> None:
        """The host's server logs of this campaign, next to the local logs."""
        log_dir.mkdir(parents=True, exist_ok=True)
        have = {p.name: p.stat().st_size for p in log_dir.iterdir() if p.is_file()}
        try:
            files = fetch(self.host, self.folder, have)
        except (OSError, UsageError) as exc:
            recorder.warning(f"server logs not copied from {self.host.spec}: {exc}")
            return
        for name, data in files.items():
            (log_dir / Path(name).name).write_bytes(data)
