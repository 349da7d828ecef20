"""Run one servegate command on a host through ``servegate.remote``, as a real process.

    python tests/remote/drive.py job|cli|foreground HOST COMMAND [ARG...]

``job`` runs it with ``run_job`` (it outlives a dropped connection), ``cli`` with
``run_cli``, ``foreground`` with ``run_cli(foreground=True)``. The command's stdout and
stderr lines go to this process's stdout and stderr; its exit code is this one's.
"""

from __future__ import annotations

import sys

from servegate.errors import ServegateError
from servegate.remote import Output, parse_host, run_cli, run_job


def main(argv: list[str]) -> int:
    mode, host, command, *args = argv

    def out(text: str) -> None:
        print(text, flush=True)

    def err(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    output = Output(out=out, err=err, note=err)
    target = parse_host(host)
    try:
        if mode == "job":
            return run_job(target, command, args, output=output)
        return run_cli(target, command, args, output=output, foreground=mode == "foreground")
    except ServegateError as exc:
        err(f"Error: {exc}")
        return exc.exit_code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
