"""``servegate dump NAME``: where a running server's processes are, right now.

Prints the summary ("3 of 4 processes in wait_for_nccl_peers"), then each process of
the tree: the Python stacks (py-spy) or the kernel state and wait channel (/proc).
``--json`` prints one object: the name and the stacks (``servegate.diag.Stacks``).
"""

from __future__ import annotations

import contextlib
import json

import click

from servegate.cli.options import examples, json_flag
from servegate.cli.remote import host_option, run_remote
from servegate.errors import ServerNotFound, UsageError

__all__ = ["dump"]


@click.command(
    epilog=examples("servegate dump sglang", "servegate dump vllm --json | jq .summary")
    + "\n\n\b\n"
    "Python stacks need py-spy (pip install 'servegate[diag]') and permission to ptrace\n"
    "the server (the same user, or root). Exit codes: 0 dumped, 2 no such server."
)
@click.argument("name")
@json_flag("the stacks")
@click.option(
    "--timeout",
    "timeout_s",
    type=float,
    default=10.0,
    show_default=True,
    help="Seconds py-spy may take per process.",
)
@host_option("the server")
def dump(name: str, as_json: bool, timeout_s: float, host: str) -> None:
    """Dump the stacks of every process of the tracked server NAME (see servegate ps).

    Python processes are read with py-spy (each is paused for a moment); the others get
    their state and kernel wait channel from /proc. Nothing is stopped or changed.
    """
    import psutil

    from servegate.diag import dump_pids
    from servegate.launch import state
    from servegate.remote.hosts import is_local

    if not is_local(host):
        run_remote(host, "dump", click.get_current_context())
    if not timeout_s > 0:
        raise UsageError(f"--timeout must be a positive number of seconds, not {timeout_s}.")
    tracked = state.load(state.check_name(name))
    if tracked is None or tracked.gone():
        raise ServerNotFound(f"no running server named {name!r}: see servegate ps.")
    pids = [tracked.pid]
    # a main process that is gone has no children: its orphans are what is left
    with contextlib.suppress(psutil.Error):
        pids += [child.pid for child in psutil.Process(tracked.pid).children(recursive=True)]
    pids += [orphan.pid for orphan in tracked.orphans()]
    stacks = dump_pids(pids, timeout_s=timeout_s)
    if as_json:
        click.echo(json.dumps({"name": tracked.name, **stacks.to_json()}))
        return
    for line in stacks.lines():
        click.echo(line)
