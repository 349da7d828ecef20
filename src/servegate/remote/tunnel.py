"""A local port forwarded to an address as the remote host sees it (``ssh -N -L``).

``bench --host H --bench-from local`` measures from this side: a URL that names the
host's loopback (``http://127.0.0.1:30000`` there) is reached through a tunnel, any
other URL directly.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import threading
import time
from types import TracebackType
from urllib.parse import urlsplit, urlunsplit

from servegate.errors import ServegateError
from servegate.remote.hosts import Host
from servegate.remote.transport import check_ssh, child_options, ssh_argv

__all__ = ["LOOPBACK", "Tunnel", "needs_tunnel"]

LOOPBACK = ("127.0.0.1", "localhost", "::1", "0.0.0.0", "[::1]")
START_S = 30.0


def needs_tunnel(url: str) -> bool:
    """Whether ``url`` names the remote host's own loopback (only reachable there)."""
    return (urlsplit(url).hostname or "") in LOOPBACK


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Tunnel:
    """``ssh -N -L 127.0.0.1:LOCAL:TARGET`` to ``host`` while the ``with`` block runs."""

    def __init__(self, host: Host, url: str) -> None:
        parts = urlsplit(url)
        target = parts.hostname or "127.0.0.1"
        target = "127.0.0.1" if target == "0.0.0.0" else target
        port = parts.port or (443 if parts.scheme == "https" else 80)
        self.host = host
        self.local_port = _free_port()
        netloc = f"127.0.0.1:{self.local_port}"
        self.url = urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
        forward = f"127.0.0.1:{self.local_port}:{target}:{port}"
        self.proc = subprocess.Popen(
            ssh_argv(
                host,
                None,
                master=False,
                extra=["-o", "ExitOnForwardFailure=yes", "-L", forward],
            ),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            **child_options(),  # a session of its own, ending with servegate
        )
        self._stderr = b""
        self._reader = threading.Thread(target=self._drain, daemon=True)
        self._reader.start()

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        self._stderr = self.proc.stderr.read()

    def rewrite(self, url: str) -> str:
        """``url`` (same host and port as the tunnel's) through the tunnel."""
        parts = urlsplit(url)
        netloc = f"127.0.0.1:{self.local_port}"
        return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))

    def open(self) -> Tunnel:
        """Wait until the local port accepts connections; ssh's failure as an error."""
        deadline = time.monotonic() + START_S
        while time.monotonic() < deadline:
            code = self.proc.poll()
            if code is not None:
                self._reader.join(timeout=5)
                stderr = self._stderr.decode("utf-8", "replace")
                check_ssh(self.host, code, stderr)
                raise ServegateError(
                    f"the tunnel to {self.host.spec} ended ({stderr.strip() or code})."
                )
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", self.local_port)) == 0:
                    return self
            time.sleep(0.02)
        self.close()
        raise ServegateError(f"the tunnel to {self.host.spec} did not open in {START_S:.0f}s.")

    def close(self) -> None:
        """End the tunnel."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._reader.join(timeout=5)
        if self.proc.stderr is not None:
            with contextlib.suppress(OSError):
                self.proc.stderr.close()

    def __enter__(self) -> Tunnel:
        return self.open()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
