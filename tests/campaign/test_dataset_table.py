"""``[bench.dataset]``: the canonical form of a campaign's dataset, the same spec as the
one-line form, stored as that one line (its parameters in the workload key)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from servegate.campaign.config import parse_campaign
from servegate.errors import ConfigError

HEAD = """\
[campaign]
name = "d"
baseline = "base"

[server]
command = "{python} -m servegate sim --port {port}"

"""


def _trace(folder: Path) -> Path:
    path = folder / "t,1.jsonl"
    row = {"timestamp": 0, "input_length": 8, "output_length": 2, "hash_ids": [1]}
    path.write_text(json.dumps(row) + "\n")
    return path


def test_a_table_and_a_line_give_the_same_stored_dataset(tmp_path: Path) -> None:
    """[bench.dataset] kind = "trace" (a path holding a comma, relative to the file) and a
    variant's one-line trace:...,speed=2 store the same canonical line; a trace is
    replayed uncapped, with its own output lengths."""
    _trace(tmp_path)
    text = (
        HEAD
        + """\
[bench.dataset]
kind = "trace"
file = "t,1.jsonl"
speed = 2

[[variant]]
name = "base"

[[variant]]
name = "line"
bench = { dataset = "trace:t,1.jsonl,speed=2" }
"""
    )
    campaign = parse_campaign(text, path=tmp_path / "c.toml")
    plans = {v.name: v.bench for v in campaign.variants}
    file = tmp_path / "t,1.jsonl"
    assert plans["base"].dataset == f"trace:{file},speed=2,block=512"
    assert plans["line"].dataset == plans["base"].dataset
    assert [p.concurrency for p in plans["base"].points] == [None]
    assert plans["base"].output_len is None


def test_prefix_parameters_reach_the_plan_and_random_keeps_256() -> None:
    """prefix's keys (defaults filled in) are in the stored line; output_len defaults to
    256 for generated prompts."""
    text = (
        HEAD
        + """\
[bench]
dataset = { kind = "prefix", groups = 2, shared = 64 }

[[variant]]
name = "base"
"""
    )
    (variant,) = parse_campaign(text, path=Path("c.toml")).variants
    assert variant.bench.dataset == "prefix:groups=2,per_group=16,shared=64,unique=128"
    assert variant.bench.output_len == 256


@pytest.mark.parametrize(
    ("dataset", "words"),
    [
        ('{ kind = "prefix", groups = 0 }', "groups=0 must be a positive integer"),
        ('{ kind = "prefix", size = 3 }', "'size' is not a key of prefix"),
        ('{ kind = "nope" }', "is not a dataset kind"),
        ('"prefix:groups=x"', "groups=x must be a positive integer"),
        ('"trace:missing.jsonl"', "no such file"),
    ],
)
def test_a_bad_dataset_is_one_config_error_naming_the_key(dataset: str, words: str) -> None:
    """Each bad dataset is one sentence naming the file and bench.dataset."""
    text = HEAD + f'[bench]\ndataset = {dataset}\n\n[[variant]]\nname = "base"\n'
    with pytest.raises(ConfigError) as info:
        parse_campaign(text, path=Path("c.toml"))
    assert info.value.key == "bench.dataset"
    assert words in str(info.value)
    assert "c.toml" in str(info.value)


def test_a_trace_with_a_rate_is_refused(tmp_path: Path) -> None:
    """rate cannot go with a trace, whose rows are the schedule."""
    _trace(tmp_path)
    text = HEAD + '[bench]\nrate = 2.0\ndataset = "trace:t,1.jsonl"\n\n[[variant]]\nname = "base"\n'
    with pytest.raises(ConfigError) as info:
        parse_campaign(text, path=tmp_path / "c.toml")
    assert info.value.key == "bench.rate"


def test_multiturn_with_a_duration_is_refused() -> None:
    """A multiturn dataset counts sessions by requests: duration_s is refused by name."""
    text = HEAD + '[bench]\nduration_s = 5\ndataset = "multiturn:turns=3"\n\n'
    text += '[[variant]]\nname = "base"\n'
    with pytest.raises(ConfigError) as info:
        parse_campaign(text, path=Path("c.toml"))
    assert info.value.key == "bench.duration_s"


def test_a_length_file_is_taken_from_the_campaign_folder(tmp_path: Path) -> None:
    """input = "file:lengths.txt" in [bench.dataset] (and in the one-line form) is read
    from the campaign file's folder, and stored as an absolute path."""
    (tmp_path / "lengths.txt").write_text("5\n9\n")
    text = (
        HEAD
        + """\
[bench.dataset]
kind = "random"
input = "file:lengths.txt"

[[variant]]
name = "base"

[[variant]]
name = "line"
bench = { dataset = "random:output=file:lengths.txt" }
"""
    )
    plans = {v.name: v.bench for v in parse_campaign(text, path=tmp_path / "c.toml").variants}
    assert plans["base"].dataset == f"random:input=file:{tmp_path / 'lengths.txt'}"
    assert plans["line"].dataset == f"random:output=file:{tmp_path / 'lengths.txt'}"
