"""Cache isolation in campaigns (issue 24, item 4): every point of a start sends its own
prompts (salted by the start's repeat and the point), and paired variants send the same."""

from __future__ import annotations

import textwrap
from pathlib import Path

from servegate.bench.dataset import build_prompts
from servegate.campaign.config import parse_campaign
from servegate.campaign.execute import _settings, tasks_of

CAMPAIGN = """
[campaign]
name = "c"
baseline = "b"
[server]
command = "srv {port}"
[bench]
concurrency = [1, 4]
repeats = 2
input_len = 32
[[variant]]
name = "b"
[[variant]]
name = "fast"
args = ["--fast"]
"""


def test_points_differ_and_paired_variants_match() -> None:
    """Four (point, repeat) measurements per variant send four different prompt texts, and
    variant b's text at each is variant fast's."""
    campaign = parse_campaign(textwrap.dedent(CAMPAIGN), path=Path("c.toml"))
    texts: dict[tuple[str, str, int], bytes] = {}
    for group in campaign.groups:
        for task in tasks_of(group, 1):
            s = _settings("http://127.0.0.1:9", task, "vllm")
            (prompt,) = build_prompts(
                dataset=s.dataset, count=1, input_len=s.input_len, output_len=s.output_len,
                api=s.api, model="m", seed=s.seed, ignore_eos=True, salt=s.salt,
            )  # fmt: skip
            texts[(task.variant.name, task.point.label, task.repeat)] = prompt.body
    ours = {k[1:]: v for k, v in texts.items() if k[0] == "b"}
    theirs = {k[1:]: v for k, v in texts.items() if k[0] == "fast"}
    assert len(ours) == 4 and len(set(ours.values())) == 4
    assert ours == theirs


def test_cache_and_tokenizer_keys_reach_every_point() -> None:
    """[bench] cache = "share" and tokenizer (relative to the campaign file) are in each
    point's settings; a variant's bench sub-table overrides them."""
    text = (
        textwrap.dedent(CAMPAIGN)
        .replace(
            "input_len = 32\n",
            'input_len = 32\ncache = "share"\ntokenizer = "tok/tokenizer.json"\n',
        )
        .replace(
            'args = ["--fast"]',
            'args = ["--fast"]\nbench = { cache = "isolate", tokenizer = "server" }',
        )
    )
    campaign = parse_campaign(text, path=Path("/camp/c.toml"))
    seen = set()
    for group in campaign.groups:
        for task in tasks_of(group, 1):
            s = _settings("http://127.0.0.1:9", task, "vllm")
            seen.add((task.variant.name, s.cache, s.tokenizer))
    assert seen == {("b", "share", "/camp/tok/tokenizer.json"), ("fast", "isolate", "server")}
