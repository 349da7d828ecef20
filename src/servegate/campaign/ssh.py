"""A campaign's servers on one host over SSH (``[server] host = "ssh://..."``).

The runner and the store stay here; each start runs on the host, one after another,
through servegate there: the same ``StartExecutor`` as a local start (preflight of the
port, the leftover processes and the GPU memory on the host, launch, gate, benchmark,
stop), run by ``python -m servegate.campaign.node`` as on a cluster node, as a job
that outlives a dropped connection (``servegate.remote.run_node``). The job goes there
and its events come back as frames of the node protocol (``campaign.node``: JSON lines,
every field checked, never code) and are handed to the runner's ``Recorder`` here, so
that this side stays the only writer of the store; a frame that is not one ends the
campaign with one sentence (exit 2). The server logs are written on the host
(``~/.servegate/campaigns/NAME``) and copied next to the local logs after each start,
readable by their owner only (0600), as a local server's log.

    host = SshHost("ssh://root@gpu-1", campaign)   # used where a Ray cluster would be
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from servegate.campaign.cluster import Flight, replay
from servegate.campaign.config import Campaign
from servegate.campaign.events import AttemptClosed, Placement, Said, Tone
from servegate.campaign.execute import StartSpec, slug
from servegate.campaign.interrupt import Interrupted, Interrupts
from servegate.campaign.node import FRAMES, FrameError, NodeJob, encode
from servegate.errors import ServegateError, UsageError
from servegate.remote import Output, parse_host
from servegate.remote.client import RemoteProtocolError, connect, fetch, run_node
from servegate.store import AttemptStatus

if TYPE_CHECKING:
    from servegate.campaign.rounds import Recorder, Refill

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
        self.remote_logs = f"{agent.hello.dir}/{self.folder}"

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
        refill: Refill | None = None,
    ) -> None:
        """Run the starts ``specs`` on the host one after another (then those ``refill``
        gives as each ends); every call of theirs goes to ``recorder``; each start's logs
        are copied into ``log_dir``."""
        del done  # a start that loses its connection is followed again, not repeated
        queue = list(specs)
        while queue:
            spec, model = queue.pop(0)
            interrupts.check()
            self._start(spec, model, recorder, interrupts, log_dir)
            if interrupts.signum is not None:
                interrupts.acknowledge()
                raise Interrupted(interrupts.signum)
            if refill is not None:
                queue.extend(refill(spec))

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
        job = NodeJob(
            campaign=self.campaign, spec=spec, log_dir=self.remote_logs, placement=placement
        )

        def on_frame(frame: object) -> None:
            with interrupts.shielded():  # an event handed on whole, or not at all
                replay(flight, frame, recorder)

        def said(tone: Tone) -> Callable[[str], None]:
            return lambda text: recorder.emit(Said(tone=tone, text=text))

        output = Output(
            out=said(Tone.INFO),
            err=said(Tone.INFO),
            note=said(Tone.WARNING),
            warn=said(Tone.WARNING),
        )
        refused: UsageError | None = None
        status = AttemptStatus.LOST
        try:
            code = run_node(
                self.host,
                json.loads(encode(job)),
                frames=FRAMES,
                on_frame=on_frame,
                output=output,
            )
            reason = f"servegate on {self.host.spec} ended this start with exit code {code}"
        except FrameError as exc:  # an event that names an attempt it never opened
            refused = RemoteProtocolError(self.host, exc)
        except RemoteProtocolError as exc:
            refused = exc
        except (OSError, UsageError) as exc:  # no connection for longer than the reconnect window
            reason = f"the connection to {self.host.spec} was lost ({exc})"
        if refused is not None:
            status, reason = AttemptStatus.FAILED, str(refused)
        if flight.open:  # attempts the host never closed
            with interrupts.shielded():
                for aid in sorted(flight.open):
                    recorder.emit(AttemptClosed(attempt=aid, status=status, reason=reason))
            if refused is None:
                recorder.emit(Said(tone=Tone.FAILURE, text=f"{spec.tag} {spec.names}: {reason}"))
        if refused is not None:
            raise refused
        self._copy_logs(log_dir, recorder)

    def _copy_logs(self, log_dir: Path, recorder: Recorder) -> None:
        """The host's server logs of this campaign, next to the local logs (0600: they are
        verbatim, and a server's log may hold a token)."""
        log_dir.mkdir(parents=True, exist_ok=True)
        have = {p.name: p.stat().st_size for p in log_dir.iterdir() if p.is_file()}
        try:
            files = fetch(
                self.host,
                self.folder,
                have,
                warn=lambda text: recorder.emit(Said(tone=Tone.WARNING, text=text)),
            )
        except (OSError, ServegateError) as exc:  # the copy never costs the campaign
            text = f"server logs not copied from {self.host.spec}: {exc}"
            recorder.emit(Said(tone=Tone.WARNING, text=text))
            return
        for name, data in files.items():
            _write_private(log_dir / name, data)


def _write_private(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` (its name checked by ``fetch``), readable by its owner
    only, whatever mode the file had; never through a link."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with contextlib.closing(os.fdopen(fd, "wb")) as stream:
        os.fchmod(fd, 0o600)
        stream.write(data)
