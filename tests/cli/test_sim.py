"""``servegate sim`` command line: usage errors, profiles, help."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from servegate.cli import main
from servegate.errors import ConfigError, UsageError
from servegate.sim.config import ENGINES, PHASES, resolve, shipped_profiles


def run(*args: str) -> subprocess.CompletedProcess[str]:
    """``python -m servegate sim ARGS``, captured."""
    return subprocess.run(
        [sys.executable, "-m", "servegate", "sim", *args],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--engine", "tgx"], "--engine tgx: unknown engine; choose one of sglang"),
        (["--phase", "bogus=1"], "--phase bogus: sglang has no such phase"),
        (["--phase", "load_weights=-1"], "a duration must be >= 0"),
        (["--phase", "load_weights"], "write NAME=SECONDS"),
        (["--startup", "-3"], "--startup -3.0: must be >= 0"),
        (["--fail", "meltdown"], "--fail meltdown: unknown failure"),
        (["--fail", "oom", "--fail-at", "nowhere"], "--fail-at nowhere: sglang has no such phase"),
        (["--fail", "oom", "--fail-at", "500", "--startup", "2"], "startup ends at 2.0 s"),
        (["--fail-at", "load_weights"], "--fail-at needs --fail"),
        (["--fail", "child-death", "--engine", "llamacpp"], "use --engine sglang or vllm"),
        (["--time-scale", "0"], "--time-scale must be > 0"),
        (["--profile", "nosuch"], "no shipped profile by that name"),
        (["--spec-accept-length", "0.5"], "--spec-accept-length must be >= 1"),
    ],
)
def test_bad_flags_exit_2_with_one_sentence(
    args: list[str], needle: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each bad flag exits 2 with an ``Error:`` sentence that names the fix."""
    with pytest.raises(SystemExit) as info:
        main(["sim", *args, "--port", "1"])
    err = capsys.readouterr().err
    assert info.value.code == 2
    assert needle in err
    assert err.startswith("Error: ") and err.count("\n") == 1


def test_profile_with_an_unknown_key_names_the_file_and_key(tmp_path: Path) -> None:
    """A profile key that does not exist is a ConfigError naming file and key."""
    path = tmp_path / "p.toml"
    path.write_text('engine = "vllm"\nitl = 3\n')
    with pytest.raises(ConfigError, match=r"p\.toml: key 'itl'"):
        resolve(profile=str(path), flags={})
    path.write_text("engine = \n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        resolve(profile=str(path), flags={})


def test_flags_override_the_profile(tmp_path: Path) -> None:
    """Defaults < profile < flags; profile phases the engine lacks are ignored."""
    path = tmp_path / "p.toml"
    path.write_text('engine = "vllm"\nitl_ms = 3\nstartup = 10\n[phases]\nwarmup = 2\n')
    config = resolve(profile=str(path), flags={"itl_ms": 7.0, "port": 9})
    assert (config.engine, config.itl_ms, config.port) == ("vllm", 7.0, 9)
    assert config.startup_s == pytest.approx(10.0)
    assert "warmup" not in dict(config.phases)


def test_startup_is_spread_over_phases_and_scaled() -> None:
    """--startup spreads over the phases; --phase fixes one; --time-scale scales all."""
    config = resolve(
        profile=None,
        flags={
            "engine": "sglang",
            "startup": 100.0,
            "phases": {"jit_compile": 40.0},
            "time_scale": 0.5,
        },
    )
    phases = dict(config.phases)
    assert [name for name, _ in config.phases] == [name for name, _ in PHASES["sglang"]]
    assert phases["jit_compile"] == pytest.approx(20.0)
    assert config.startup_s == pytest.approx(50.0)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("profile", shipped_profiles())
def test_shipped_profiles_resolve_for_every_engine(profile: str, engine: str) -> None:
    """Every shipped profile works with every engine."""
    config = resolve(profile=profile, flags={"engine": engine})
    assert config.startup_s > 0


def test_shipped_profiles_are_listed() -> None:
    """--list-profiles prints the fast and the 8-GPU profile."""
    out = run("--list-profiles")
    assert out.returncode == 0
    assert out.stdout.split() == ["big-8gpu", "fast"]


def test_fast_profile_starts_in_about_two_seconds() -> None:
    """The fast profile is meant for tests and the demo: under 2 s of startup."""
    assert resolve(profile="fast", flags={}).startup_s <= 2.0


def test_help_ends_with_an_example() -> None:
    """--help has a runnable example."""
    out = run("--help")
    assert out.returncode == 0
    assert "Examples:" in out.stdout and "servegate sim --engine" in out.stdout


def test_usage_error_is_a_servegate_usage_error() -> None:
    """resolve raises UsageError (exit 2) for a bad value."""
    with pytest.raises(UsageError) as info:
        resolve(profile=None, flags={"max_running": 0})
    assert info.value.exit_code == 2


def test_the_gates_phase_names_are_accepted() -> None:
    """--phase and --fail-at also take the gate's names (init_distributed, ...)."""
    config = resolve(
        profile=None,
        flags={"phases": {"init_distributed": 3.0}, "fail": "oom", "fail_at": "allocate_kv_cache"},
    )
    assert dict(config.phases)["dist_init"] == pytest.approx(3.0)
    assert config.fail_phase == "kv_cache"
