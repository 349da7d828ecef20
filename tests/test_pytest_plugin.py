"""The pytest plugin, run as users run it: pytest in a subprocess on real simulators.

Every run inherits this session's process marker, so the suite's leak check also sees
the servers the inner sessions started; the tests check besides that each server's PID
is gone and that its record was removed by the fixture's stop (the keeper alone would
kill the tree but leave the record).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import psutil
import pytest

from servegate.launch.tree import StopReport
from servegate.pytest_plugin import stop_problems

pytest_plugins = ["pytester"]

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "test_with_servegate.py"
SIM = (
    "[sys.executable, '-m', 'servegate', 'sim', '--engine', 'sglang', '--port', '{port}', "
    "'--profile', 'fast']"
)
TOKEN = "tok-4f7c2a9e81b3d605"  # a secret the server is given and prints


def records(state_dir: Path) -> list[str]:
    """Names of the servers still recorded in the state folder."""
    return sorted(path.stem for path in state_dir.glob("*.json"))


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_registered_through_the_entry_point(request: pytest.FixtureRequest) -> None:
    """The installed package declares the plugin, and this session loaded it from there."""
    declared = {ep.name: ep.value for ep in entry_points(group="pytest11")}
    assert declared.get("servegate") == "servegate.pytest_plugin"
    plugin = request.config.pluginmanager.get_plugin("servegate")
    assert plugin is not None and plugin.__name__ == "servegate.pytest_plugin"


def test_import_loads_neither_launcher_nor_load_generator() -> None:
    """Loading the plugin (as every pytest session does) stays cheap."""
    code = (
        "import sys, servegate.pytest_plugin\n"
        # the gate package itself loads its names lazily (the plugin reads gate.defaults)
        "heavy = ['servegate.launch.server', 'servegate.gate.decide', 'servegate.gate.running',"
        " 'servegate.bench', 'numpy']\n"
        "print([name for name in heavy if name in sys.modules])"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "[]"


@pytest.mark.slow
def test_example_passes(pytester: pytest.Pytester, _state_dir: Path) -> None:
    """examples/test_with_servegate.py: servers start, the bench asserts pass, all stop."""
    pytester.makepyfile(test_with_servegate=EXAMPLE.read_text())
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-v")
    result.assert_outcomes(passed=3)
    assert records(_state_dir) == []


@pytest.mark.slow
def test_crash_is_an_error_with_the_verdict_and_the_tail(
    pytester: pytest.Pytester, _state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server that runs out of memory while starting errors every test that needs it."""
    monkeypatch.setenv("SIM_FAIL", "oom")
    pytester.makepyfile(test_with_servegate=EXAMPLE.read_text())
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(errors=3)
    out = result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "*ERROR at setup of test_output_throughput*",
            "servegate: server 'sglang' did not start: CRASH after *: CUDA out of memory (oom)*",
            "--- last * lines of */sglang.log ---",
            "torch.OutOfMemoryError: CUDA out of memory.*",
        ]
    )
    # the session-scoped server failed once; both its tests show its verdict (the
    # short summary may repeat it on "ERROR ..." lines, as wide as the terminal allows)
    verdicts = re.findall(r"^servegate: server 'shared' did not start: CRASH", out, re.M)
    assert len(verdicts) == 2
    logs = re.findall(r"--- last \d+ lines of (\S+) ---", out)
    assert logs and all("torch.OutOfMemoryError" in Path(log).read_text() for log in logs)
    assert records(_state_dir) == []


@pytest.mark.slow
def test_failures_name_the_fix(pytester: pytest.Pytester, _state_dir: Path) -> None:
    """TIMEOUT (scaled limit), bad commands, bench errors: one clear failure each, no secret."""
    pytester.makepyfile(
        f"""
        import sys

        SIM = {SIM}

        def test_hangs(servegate_server):
            servegate_server([*SIM, "--fail", "hang", "--fail-at", "load_weights"],
                             engine="sglang", timeout=40, name="hung")

        def test_echoes_its_token(servegate_server):
            servegate_server(["sh", "-c", 'echo "using token $MY_API_TOKEN"; exit 3'],
                             env={{"MY_API_TOKEN": "{TOKEN}"}}, ready=["listening"],
                             name="leaky")

        def test_no_such_program(servegate_server):
            servegate_server(["no-such-server-program", "--port", "{{port}}"])

        def test_unreachable(servegate_bench):
            servegate_bench("http://127.0.0.1:1", requests=2)

        def test_misspelt_setting(servegate_bench):
            servegate_bench("http://127.0.0.1:1", requests=2, concurency=3)
        """
    )
    logs = pytester.path / "server-logs"
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--servegate-timeout-scale", "0.05",
        "--servegate-log-dir", str(logs),
    )  # fmt: skip
    result.assert_outcomes(failed=5)
    hung_log = logs / "test_failures_name_the_fix.py_test_hangs" / "hung.log"
    result.stdout.fnmatch_lines(
        [
            "servegate: server 'hung' did not start: TIMEOUT after *: "
            "not ready within --timeout 2.0s (during load_weights)*",
            f"--- last * lines of {hung_log} ---",
            "servegate: server 'leaky' did not start: CRASH after *",
            "using token ***",
            "servegate: command 'no-such-server-program' not found on PATH*",
            "servegate bench: cannot reach http://127.0.0.1:1 *",
            "servegate bench: unknown setting(s) concurency: pass BenchSettings fields only.",
        ],
        consecutive=False,
    )
    assert "Load weight begin." in hung_log.read_text()
    out = result.stdout.str()
    assert "Traceback" not in out
    assert TOKEN not in out
    assert records(_state_dir) == []


@pytest.mark.slow
def test_failed_and_interrupted_tests_stop_their_servers(
    pytester: pytest.Pytester, _state_dir: Path
) -> None:
    """A failing test with two servers, then Ctrl-C in the next: the fixture stops all three."""
    pytester.makepyfile(
        f"""
        import pathlib, sys

        SIM = {SIM}

        def test_fails(servegate_server):
            first = servegate_server(SIM, engine="sglang", timeout=60, name="failing")
            second = servegate_server(SIM, engine="sglang", timeout=60, name="failing")
            assert (first.name, second.name) == ("failing", "failing-2")
            assert first.log_path != second.log_path
            pathlib.Path("failing.pid").write_text(str(first.pid))
            pathlib.Path("failing-2.pid").write_text(str(second.pid))
            assert False, "the test's own failure"

        def test_interrupted(servegate_server):
            server = servegate_server(SIM, engine="sglang", timeout=60, name="interrupted")
            pathlib.Path("interrupted.pid").write_text(str(server.pid))
            raise KeyboardInterrupt
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(["*the test's own failure*", "*KeyboardInterrupt*"])
    logs = sorted(path.name for path in pytester.path.rglob("failing*.log"))
    assert logs == ["failing-2.log", "failing.log"]
    for name in ("failing", "failing-2", "interrupted"):
        pid = int((pytester.path / f"{name}.pid").read_text())
        assert not alive(pid), name
    assert records(_state_dir) == []  # stopped by the fixture, not only by the keeper


@pytest.mark.slow
def test_keep_leaves_servers_running_and_says_how_to_stop_them(
    pytester: pytest.Pytester, _state_dir: Path
) -> None:
    """--servegate-keep: a READY server and a TIMEOUT one outlive pytest; stop ends them."""
    pytester.makepyfile(
        f"""
        import pathlib, sys

        SIM = {SIM}

        def test_kept(servegate_server):
            server = servegate_server(SIM, engine="sglang", timeout=60, name="kept")
            pathlib.Path("kept.pid").write_text(str(server.pid))

        def test_kept_after_timeout(servegate_server):
            servegate_server([*SIM, "--fail", "hang", "--fail-at", "load_weights"],
                             engine="sglang", timeout=3, name="hung")
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--servegate-keep")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*kept running for a look (--servegate-keep): servegate stop hung",
            "*servegate: servers kept running*",
            "kept pid * http://127.0.0.1:* (READY): servegate stop kept",
            "hung pid * (TIMEOUT): servegate stop hung",
        ],
        consecutive=False,
    )
    pid = int((pytester.path / "kept.pid").read_text())
    assert alive(pid)  # the pytest process is gone; the kept server is not
    assert records(_state_dir) == ["hung", "kept"]
    for name in ("kept", "hung"):
        stop = subprocess.run(
            [sys.executable, "-m", "servegate", "stop", name],
            check=False,
            capture_output=True,
            text=True,
            timeout=60,
            env=os.environ.copy(),
        )
        assert stop.returncode == 0, stop.stderr
    assert not alive(pid)
    assert records(_state_dir) == []


def test_bad_timeout_scale_is_a_usage_error(pytester: pytest.Pytester) -> None:
    """A timeout scale that is not a positive number stops pytest before any test runs."""
    pytester.makepyfile("def test_nothing():\n    pass\n")
    result = pytester.runpytest_subprocess("--servegate-timeout-scale", "0")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*'0' is not a positive number: use e.g. 2 or 0.5*"])


def test_stop_problems_name_what_was_left() -> None:
    """A clean stop has no problems; survivors and a held port are one sentence each."""
    clean = StopReport(
        killed=(10, 11), survivors=(), escalated=False, duration_s=0.1, port=8000, port_free=True
    )
    assert stop_problems("sim", clean) == []
    left = StopReport(
        killed=(10,), survivors=(11, 12), escalated=True, duration_s=10.0, port=8000,
        port_free=False,
    )  # fmt: skip
    assert stop_problems("sim", left) == [
        "server 'sim': processes still alive after the stop: 11, 12",
        "server 'sim': port 8000 still in use after the stop",
    ]
    elsewhere = StopReport(
        killed=(10,), survivors=(), escalated=False, duration_s=0.1, port=8000,
        port_free=False, port_holders=(99,),
    )  # fmt: skip
    assert stop_problems("sim", elsewhere) == []  # another program took the port since


def test_docs_show_the_shipped_example() -> None:
    """docs/pytest.md quotes examples/test_with_servegate.py whole, as it is."""
    docs = (EXAMPLE.parents[1] / "docs" / "pytest.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", docs, flags=re.DOTALL)
    assert EXAMPLE.read_text() in blocks
