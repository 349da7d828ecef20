"""A real OpenSSH server on 127.0.0.1, with servegate installed behind it (``sshd.py``).

The server, its user (as root, one of this session's own, removed at its end) and the
install are once per session, in a fresh venv; every test then runs with
``SERVEGATE_SSH_CONFIG`` pointing at the generated config and a control folder of its
own, and is checked afterwards on the remote side too: the control masters are closed,
and no process of the remote user may be left (as root). The remote sessions carry this
test session's marker, so the suite's own leak check sees their processes as well.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shutil
import signal
import tempfile
from collections.abc import Iterator

import pytest
from tests.conftest import MARKER
from tests.remote import sshd
from tests.remote.sshd import Remote


@pytest.fixture(scope="session")
def remote(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Remote]:
    """sshd on 127.0.0.1 with servegate installed for the remote user."""
    try:
        server = sshd.start(tmp_path_factory.mktemp("ssh"), MARKER)
    except RuntimeError as exc:
        pytest.fail(str(exc))
    control = tempfile.mkdtemp(prefix="sgc-")
    env = {**os.environ, "SERVEGATE_SSH_CONTROL_DIR": control}
    try:
        done = sshd.install(server, env)
        assert done.returncode == 0, done.stderr
        installed = json.loads(done.stdout)
        assert installed["path"] == f"{server.remote_dir}/venv"
        sshd.close_masters(env)  # the tests each start from no connection
        yield dataclasses.replace(server, installed_build=installed["build"])
    finally:
        sshd.close_masters(env)
        shutil.rmtree(control, ignore_errors=True)
        sshd.stop(server)


@pytest.fixture
def host(remote: Remote, monkeypatch: pytest.MonkeyPatch) -> Iterator[Remote]:
    """The remote host for one test; afterwards nothing of it may run on either side, and
    no job may be left in the remote folder."""
    monkeypatch.setenv("SERVEGATE_SSH_CONFIG", str(remote.config))
    control = tempfile.mkdtemp(prefix="sgc-")  # short: a socket path has ~100 bytes
    monkeypatch.setenv("SERVEGATE_SSH_CONTROL_DIR", control)
    yield remote
    sshd.close_masters({**os.environ})
    shutil.rmtree(control, ignore_errors=True)
    alive = sshd.remote_leftovers(remote)
    if alive:
        for line in alive:
            with contextlib.suppress(OSError):
                os.kill(int(line.split()[0]), signal.SIGKILL)
        pytest.fail("processes left running on the remote side:\n" + "\n".join(alive))
    jobs = remote.remote_dir / "jobs"
    left = sorted(p.name for p in jobs.iterdir()) if jobs.is_dir() else []
    for name in left:  # reported once, here: the next test starts from none
        (jobs / name).unlink(missing_ok=True)
    assert not left, f"job files left on the remote side: {left}"
