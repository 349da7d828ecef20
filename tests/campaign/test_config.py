"""The campaign file: parsing, placeholders, grouping, matrix, and one-sentence errors."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from servegate.campaign.config import load_campaign, parse_campaign
from servegate.errors import ConfigError, UsageError

FUSION_EXAMPLE = """\
[campaign]
name = "allreduce-fusion"
baseline = "baseline"

[server]
engine = "sglang"
host = "local"                      # or "ssh://root@gpu-1:22"
command = "python3 -m sglang.launch_server --model-path /models/m --tp 8 --port {port}"
port = 30000
env = { FLASHINFER_CACHE_DIR = "/data/cache" }
timeout_s = 900

[bench]
api = "completions"
concurrency = [1, 16, 64]
requests = 200
input_len = 1024
output_len = 256
repeats = 3

[[variant]]
name = "baseline"
args = "--attention-backend flashinfer"

[[variant]]
name = "fusion"
args = "--attention-backend flashinfer --enable-flashinfer-allreduce-fusion"
"""


def parse(text: str) -> object:
    return parse_campaign(textwrap.dedent(text), path=Path("c.toml"))


def error_of(text: str) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        parse_campaign(textwrap.dedent(text), path=Path("c.toml"))
    return info.value


def test_the_fusion_example_parses_into_two_server_groups() -> None:
    """The campaign of the allreduce-fusion example gives two variants, each with its own server."""
    campaign = parse_campaign(FUSION_EXAMPLE, path=Path("fusion.toml"))
    assert campaign.name == "allreduce-fusion"
    assert [v.name for v in campaign.variants] == ["baseline", "fusion"]
    assert len(campaign.groups) == 2
    assert campaign.port == 30000
    argv, env = campaign.variant("fusion").render(port=30000)
    assert argv == [
        "python3",
        "-m",
        "sglang.launch_server",
        "--model-path",
        "/models/m",
        "--tp",
        "8",
        "--port",
        "30000",
        "--attention-backend",
        "flashinfer",
        "--enable-flashinfer-allreduce-fusion",
    ]
    assert env == {"FLASHINFER_CACHE_DIR": "/data/cache"}
    bench = campaign.variant("baseline").bench
    assert [p.concurrency for p in bench.points] == [1, 16, 64]
    assert bench.repeats == 3


def test_placeholders_and_vars_are_filled_per_argument() -> None:
    """{python}, {model}, {host} and [vars] are filled in; a value with spaces stays one arg."""
    campaign = parse(
        """
        [campaign]
        name = "c"
        baseline = "b"
        [server]
        command = "{python} -m srv --model {model} --host {host} --port {port} --tp {tp}"
        model = "/models/my model"
        [vars]
        tp = 8
        [[variant]]
        name = "b"
        args = "--note 'two words' ; rm -rf /"
        """
    )
    argv, _ = campaign.variant("b").render(port=1234)  # type: ignore[attr-defined]
    assert argv == [
        sys.executable,
        "-m",
        "srv",
        "--model",
        "/models/my model",
        "--host",
        "127.0.0.1",
        "--port",
        "1234",
        "--tp",
        "8",
        "--note",
        "two words",
        ";",
        "rm",
        "-rf",
        "/",
    ]


def test_variant_command_env_and_vars_override_the_template() -> None:
    """A variant's command replaces the template, its env and vars win over the server's."""
    campaign = parse(
        """
        [campaign]
        name = "c"
        baseline = "b"
        [server]
        command = "srv --port {port} --mode {mode}"
        env = { A = "1", B = "2" }
        [vars]
        mode = "x"
        [[variant]]
        name = "b"
        [[variant]]
        name = "other"
        command = "other-srv {port}"
        env = { B = "3" }
        [[variant]]
        name = "mode-y"
        vars = { mode = "y" }
        """
    )
    assert campaign.variant("b").render(port=1) == (  # type: ignore[attr-defined]
        ["srv", "--port", "1", "--mode", "x"],
        {"A": "1", "B": "2"},
    )
    assert campaign.variant("other").render(port=1) == (  # type: ignore[attr-defined]
        ["other-srv", "1"],
        {"A": "1", "B": "3"},
    )
    assert campaign.variant("mode-y").render(port=1)[0][-1] == "y"  # type: ignore[attr-defined]


def test_bench_only_variants_share_one_server() -> None:
    """Variants whose final command and env are equal form one group; bench overrides apply."""
    campaign = parse(
        """
        [campaign]
        name = "c"
        baseline = "base"
        [server]
        command = "srv --port {port}"
        [bench]
        concurrency = [1, 4]
        [[variant]]
        name = "chat"
        bench = { api = "chat", concurrency = 8 }
        [[variant]]
        name = "base"
        [[variant]]
        name = "flag"
        args = "--flag"
        """
    )
    groups = [[v.name for v in g.variants] for g in campaign.groups]  # type: ignore[attr-defined]
    assert groups == [["base", "chat"], ["flag"]]
    chat = campaign.variant("chat").bench  # type: ignore[attr-defined]
    assert chat.api == "chat"
    assert [p.label for p in chat.points] == ["c=8"]


def test_matrix_expands_every_combination_into_named_variants() -> None:
    """[matrix] axes give one variant per combination, named from the name template."""
    campaign = parse(
        """
        [campaign]
        name = "c"
        baseline = "flashinfer-4096"
        [server]
        command = "srv --port {port}"
        [matrix]
        name = "{backend}-{chunk}"
        args = "--attention-backend {backend} --chunked-prefill-size {chunk}"
        [matrix.axes]
        backend = ["flashinfer", "triton"]
        chunk = [4096, 8192]
        """
    )
    names = [v.name for v in campaign.variants]  # type: ignore[attr-defined]
    assert names == ["flashinfer-4096", "flashinfer-8192", "triton-4096", "triton-8192"]
    argv, _ = campaign.variant("triton-8192").render(port=1)  # type: ignore[attr-defined]
    assert argv[-4:] == ["--attention-backend", "triton", "--chunked-prefill-size", "8192"]
    assert len(campaign.groups) == 4  # type: ignore[attr-defined]


def test_rate_points_are_labelled_with_their_rate() -> None:
    """A rate list gives one load point per rate, under the concurrency cap."""
    campaign = parse(
        """
        [campaign]
        name = "c"
        baseline = "b"
        [server]
        command = "srv {port}"
        [bench]
        concurrency = 64
        rate = [2, 8.5]
        [[variant]]
        name = "b"
        """
    )
    points = campaign.variant("b").bench.points  # type: ignore[attr-defined]
    assert [(p.concurrency, p.rate, p.label) for p in points] == [
        (64, 2.0, "rate=2"),
        (64, 8.5, "rate=8.5"),
    ]


def test_syntax_error_names_file_line_and_column() -> None:
    """A TOML syntax error names the file and tomllib's line and column."""
    err = error_of(
        """
        [campaign]
        name = "c"
        baseline = = "b"
        """
    )
    assert str(err).startswith("c.toml: TOML syntax error")
    assert "line 4" in str(err)
    assert "column" in str(err)


def test_unknown_key_names_key_line_and_suggestion() -> None:
    """An unknown key names the table, the key, its line and the likely intended key."""
    err = error_of(
        """
        [campaign]
        name = "c"
        baseline = "b"
        [server]
        command = "srv"
        prot = 8000
        [[variant]]
        name = "b"
        """
    )
    message = str(err)
    assert message.startswith("c.toml:7: unknown key server.prot")
    assert "did you mean 'port'" in message
    assert err.key == "server.prot"


def test_unknown_key_inside_a_variant_names_the_variant() -> None:
    """An unknown key in a [[variant]] names that variant and the line."""
    err = error_of(
        """
        [campaign]
        name = "c"
        baseline = "b"
        [server]
        command = "srv"
        [[variant]]
        name = "b"
        [[variant]]
        name = "x"
        arg = "--y"
        """
    )
    assert str(err).startswith("c.toml:11: unknown key variant['x'].arg;")
    assert "did you mean 'args'" in str(err)


def test_missing_baseline_key_is_named() -> None:
    """A [campaign] table without baseline says to add it."""
    err = error_of(
        """
        [campaign]
        name = "c"
        [server]
        command = "srv"
        [[variant]]
        name = "b"
        """
    )
    assert "missing key campaign.baseline; add it" in str(err)


def test_baseline_naming_no_variant_lists_the_choices() -> None:
    """A baseline that names no variant lists the variants to choose from."""
    err = error_of(
        """
        [campaign]
        name = "c"
        baseline = "base"
        [server]
        command = "srv"
        [[variant]]
        name = "b"
        """
    )
    assert str(err) == (
        "c.toml:4: baseline = 'base' names no variant; set [campaign] baseline to one of 'b'."
    )


def test_undefined_placeholder_is_named_with_the_fix() -> None:
    """A placeholder nobody defines names the variant, the placeholder and [vars]."""
    err = error_of(
        """
        [campaign]
        name = "c"
        baseline = "b"
        [server]
        command = "srv --port {port}"
        [[variant]]
        name = "b"
        args = "--tp {tp}"
        """
    )
    assert "variant 'b' command/args uses {tp}, which is not defined" in str(err)
    assert "define it under [vars]" in str(err)


def test_model_placeholder_without_model_says_to_set_it() -> None:
    """{model} without [server] model asks for the model key."""
    err = error_of(
        """
        [campaign]
        name = "c"
        baseline = "b"
        [server]
        command = "srv --model {model}"
        [[variant]]
        name = "b"
        """
    )
    assert 'set [server] model = "/path/to/model"' in str(err)


def test_duplicate_variant_names_point_at_the_second() -> None:
    """Two variants with one name: the message names it and the second one's line."""
    err = error_of(
        """
        [campaign]
        name = "c"
        baseline = "b"
        [server]
        command = "srv"
        [[variant]]
        name = "b"
        [[variant]]
        name = "b"
        args = "--x"
        """
    )
    assert str(err) == "c.toml:10: two variants are named 'b'; give each variant a unique name."


def test_wrong_type_names_key_and_value() -> None:
    """A value of the wrong type names the key and the value given."""
    err = error_of(
        """
        [campaign]
        name = "c"
        baseline = "b"
        [server]
        command = "srv"
        [bench]
        repeats = "three"
        [[variant]]
        name = "b"
        """
    )
    assert str(err).startswith("c.toml:8: bench.repeats:")
    assert "'three'" in str(err)


def test_unknown_engine_is_a_config_error() -> None:
    """An engine without a profile is refused, naming [server] engine."""
    err = error_of(
        """
        [campaign]
        name = "c"
        baseline = "b"
        [server]
        engine = "sglangx"
        command = "srv"
        [[variant]]
        name = "b"
        """
    )
    assert "c.toml:6: [server] engine" in str(err)


def test_a_host_is_an_ssh_destination_or_refused() -> None:
    """[server] host: an ssh:// destination is taken (its servers run there); anything
    else that is not a host is refused before anything starts, naming the spellings."""
    body = """
        [campaign]
        name = "c"
        baseline = "b"
        [server]
        host = "HOST"
        command = "srv"
        [[variant]]
        name = "b"
        """
    campaign = parse(body.replace("HOST", "ssh://root@gpu-1:22"))
    assert campaign.host == "ssh://root@gpu-1:22"  # type: ignore[attr-defined]
    err = error_of(body.replace("HOST", "ssh://root@gpu-1:99999"))
    assert str(err).startswith("c.toml:6: [server] host = 'ssh://root@gpu-1:99999' is not a host")
    assert 'a Host alias of ~/.ssh/config, or "local".' in str(err)


def test_missing_file_is_a_config_error(tmp_path: Path) -> None:
    """A path with no file behind it is a usage error naming the path."""
    with pytest.raises(ConfigError, match="no such campaign file"):
        load_campaign(tmp_path / "nope.toml")


def test_only_restricts_variants_and_refuses_unknown_names() -> None:
    """--only keeps the named variants; an unknown name lists the known ones."""
    campaign = parse_campaign(FUSION_EXAMPLE, path=Path("f.toml"))
    only = campaign.only(["fusion"])
    assert [v.name for v in only.variants] == ["fusion"]
    assert [[v.name for v in g.variants] for g in only.groups] == [["fusion"]]
    with pytest.raises(UsageError, match="choose from baseline, fusion"):
        campaign.only(["nope"])


def test_shipped_examples_are_valid_campaigns() -> None:
    """Every examples/*.toml parses, with its baseline among its variants."""
    folder = Path(__file__).resolve().parents[2] / "examples"
    files = sorted(folder.glob("*.toml"))
    assert len(files) >= 3
    for path in files:
        campaign = load_campaign(path)
        assert campaign.baseline in [v.name for v in campaign.variants], path


def test_gate_options_are_passed_on_and_checked() -> None:
    """ready/crash regexes and a health_url with placeholders reach the plan; a bad regex
    is named with its key."""
    campaign = parse(
        """
        [campaign]
        name = "c"
        baseline = "b"
        [server]
        command = "srv --port {port}"
        ready = ["Uvicorn running on"]
        crash = ["FATAL: .*"]
        health_url = "http://{host}:{port}/{probe}"
        [vars]
        probe = "v1/models"
        [[variant]]
        name = "b"
        """
    )
    assert campaign.ready == ("Uvicorn running on",)  # type: ignore[attr-defined]
    assert campaign.crash == ("FATAL: .*",)  # type: ignore[attr-defined]
    url = campaign.probe_url(port=8123)  # type: ignore[attr-defined]
    assert url == "http://127.0.0.1:8123/v1/models"
    err = error_of(
        """
        [campaign]
        name = "c"
        baseline = "b"
        [server]
        command = "srv"
        ready = ["(unclosed"]
        [[variant]]
        name = "b"
        """
    )
    assert str(err).startswith("c.toml:7: [server] ready '(unclosed' is not a regular expression")


DATASET_CAMPAIGN = """\
[campaign]
name = "prompts"
baseline = "base"

[server]
command = "{python} -m servegate sim --port {port}"

[bench]
dataset = "prompts.jsonl"

[[variant]]
name = "base"

[[variant]]
name = "random-prompts"
bench = { dataset = "random" }
"""


def test_bench_dataset_is_taken_relative_to_the_campaign_file(tmp_path: Path) -> None:
    """A dataset path is resolved from the campaign file's folder; a variant may override it."""
    (tmp_path / "prompts.jsonl").write_text('{"prompt": "Tell me about rivers."}\n')
    campaign = parse_campaign(DATASET_CAMPAIGN, path=tmp_path / "c.toml")
    datasets = {v.name: v.bench.dataset for v in campaign.variants}
    assert datasets == {"base": str(tmp_path / "prompts.jsonl"), "random-prompts": "random"}


def test_missing_bench_dataset_is_named_with_the_fix(tmp_path: Path) -> None:
    """A dataset file that does not exist is one ConfigError naming bench.dataset."""
    with pytest.raises(ConfigError) as info:
        parse_campaign(DATASET_CAMPAIGN, path=tmp_path / "c.toml")
    assert info.value.key == "bench.dataset"
    assert "prompts.jsonl" in str(info.value)
    assert 'dataset = "random"' in str(info.value)


MINIMAL = """\
[campaign]
name = "c"
baseline = "b"
[server]
command = "srv --port {{port}}"
{server}
[bench]
{bench}
[[variant]]
name = "b"
"""


def minimal(*, server: str = "", bench: str = "") -> str:
    return MINIMAL.format(server=server, bench=bench)


@pytest.mark.parametrize(
    ("server", "bench", "key"),
    [
        ("port = true", "", "server.port"),
        ("port = 0", "", "server.port"),
        ("port = 70000", "", "server.port"),
        ("port = 8000.0", "", "server.port"),
        ('port = "any"', "", "server.port"),
        ("timeout_s = true", "", "server.timeout_s"),
        ("timeout_s = inf", "", "server.timeout_s"),
        ("stall_s = nan", "", "server.stall_s"),
        ("", "requests = true", "bench.requests"),
        ("", "concurrency = [1, true]", "bench.concurrency"),
        ("", "rate = nan", "bench.rate"),
        ("", "rate = [2.0, inf]", "bench.rate"),
        ("", "rate = -1.0", "bench.rate"),
        ("", "repeats = false", "bench.repeats"),
    ],
)
def test_ports_booleans_and_non_finite_numbers_are_refused(
    server: str, bench: str, key: str
) -> None:
    """A port outside 1-65535, a boolean where a number goes, and nan or inf are each one
    ConfigError naming the key (true is not port 1, nan is not a rate)."""
    with pytest.raises(ConfigError) as info:
        parse_campaign(minimal(server=server, bench=bench), path=Path("c.toml"))
    message = str(info.value)
    assert (info.value.key or "").startswith(key), message
    assert message.startswith("c.toml:"), message
    assert len(message) < 300, message
    assert "\n" not in message


def test_port_auto_and_a_valid_port_are_accepted() -> None:
    """port = "auto" picks a port per start; 65535 is a port."""
    assert parse_campaign(minimal(server='port = "auto"'), path=Path("c.toml")).port is None
    assert parse_campaign(minimal(server="port = 65535"), path=Path("c.toml")).port == 65535


@pytest.mark.parametrize("depth", [40, 5000])
def test_deeply_nested_values_are_one_config_error(depth: int) -> None:
    """An array nested thousands deep (a RecursionError in the TOML parser) or merely far
    deeper than any campaign key is one short ConfigError, not a traceback."""
    text = minimal() + "[vars]\nx = " + "[" * depth + "]" * depth + "\n"
    with pytest.raises(ConfigError) as info:
        parse_campaign(text, path=Path("c.toml"))
    message = str(info.value)
    assert "nest" in message
    assert len(message) < 300, message


def test_an_oversized_file_is_refused_before_it_is_parsed(tmp_path: Path) -> None:
    """A campaign file of several MiB is refused with its size and the limit."""
    path = tmp_path / "big.toml"
    path.write_text(minimal() + "# padding\n" * 400_000)
    with pytest.raises(ConfigError, match=r"MiB"):
        load_campaign(path)


def _matrix(values: int, *, axes: str = "ab", extra: str = "") -> str:
    listed = "".join(f"{axis} = {list(range(values))}\n" for axis in axes)
    baseline = ",".join(f"{axis}=0" for axis in axes)
    return (
        f'[campaign]\nname = "c"\nbaseline = "{baseline}"\n[server]\ncommand = "srv {{port}}"\n'
        f"[matrix]\n{extra}\n[matrix.axes]\n{listed}"
    )


def test_a_matrix_past_the_cap_is_refused_with_its_count() -> None:
    """A [matrix] expanding to more than 1,000 variants is refused with its count and the
    key that raises the cap, before the variants are built (10^12 is refused at once)."""
    with pytest.raises(ConfigError) as info:
        parse_campaign(_matrix(32), path=Path("c.toml"))  # 32 x 32 = 1024
    assert "1024 variants" in str(info.value)
    assert "max_variants" in str(info.value)
    with pytest.raises(ConfigError, match="1000000000000 variants"):
        parse_campaign(_matrix(1000, axes="abcd"), path=Path("c.toml"))


def test_max_variants_raises_the_matrix_cap() -> None:
    """[matrix] max_variants lets a larger matrix through."""
    campaign = parse_campaign(_matrix(32, extra="max_variants = 1100"), path=Path("c.toml"))
    assert len(campaign.variants) == 1024
