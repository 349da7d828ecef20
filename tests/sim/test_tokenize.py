"""The simulator's tokenizer: /tokenize in each engine's shape, chat templates that add
tokens, and usage.prompt_tokens that agrees with both, against a real BPE tokenizer.json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.bpe import train_bpe
from tests.sim.helpers import Sim
from tests.sim.test_serving import FAST, READY, post

from servegate.sim.tokens import load_tokenizer

TEXT = "the water of time, and the people who made it longer than words"
CHAT = [{"role": "system", "content": "be brief"}, {"role": "user", "content": TEXT}]


@pytest.fixture(scope="module")
def bpe(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A BPE tokenizer folder (tokenizer.json with a BOS, tokenizer_config.json with ChatML)."""
    return train_bpe(tmp_path_factory.mktemp("bpe"))


def _usage(url: str, chat: bool) -> int:
    path = "/v1/chat/completions" if chat else "/v1/completions"
    body = {"messages": CHAT} if chat else {"prompt": TEXT}
    status, raw = post(url + path, {**body, "max_tokens": 2})
    assert status == 200, raw
    return int(json.loads(raw)["usage"]["prompt_tokens"])


@pytest.mark.parametrize("engine", ["vllm", "sglang", "llamacpp", "generic"])
def test_tokenize_answers_in_the_engines_shape_with_the_tokenizer_json_ids(
    engine: str, bpe: Path, port: int
) -> None:
    """Each engine's /tokenize request gives the tokenizer.json's own ids, in its shape, and
    a completion's usage.prompt_tokens is that count (the BOS included)."""
    local = load_tokenizer(bpe)
    ids = local.encode(TEXT)
    assert len(ids) != len(TEXT.split()) + 1  # merges cross spaces: not a word count
    with Sim(port, "--engine", engine, *FAST, "--tokenizer", str(bpe)) as sim:
        sim.wait_line(READY.get(engine, "Uvicorn running|ready|listening"), timeout=30)
        if engine == "llamacpp":
            status, raw = post(sim.url + "/tokenize", {"content": TEXT, "add_special": True})
            assert (status, json.loads(raw)) == (200, {"tokens": ids})
            status, raw = post(sim.url + "/tokenize", {"content": TEXT})
            assert json.loads(raw) == {"tokens": ids[1:]}  # add_special is off by default
        elif engine == "generic":  # TGI's shape
            status, raw = post(sim.url + "/tokenize", {"inputs": TEXT})
            assert status == 200
            assert [t["id"] for t in json.loads(raw)] == ids
        else:
            status, raw = post(sim.url + "/tokenize", {"model": "m", "prompt": TEXT})
            body = json.loads(raw)
            assert (status, body["tokens"], body["count"]) == (200, ids, len(ids))
            assert body["max_model_len"] == 32768
            if engine == "vllm":
                assert body["token_strs"] is None
        assert _usage(sim.url, chat=False) == len(ids)


def test_chat_prompts_count_the_templates_tokens(bpe: Path, port: int) -> None:
    """A chat request's prompt_tokens is its messages rendered through the chat template and
    tokenized without a BOS, which vLLM's /tokenize with messages also returns."""
    local = load_tokenizer(bpe)
    expected = len(local.encode(local.render(CHAT), special=False))
    content = sum(len(local.encode(m["content"], special=False)) for m in CHAT)
    assert expected > content + 10  # the template's tokens are counted
    with Sim(port, "--engine", "vllm", *FAST, "--tokenizer", str(bpe)) as sim:
        sim.wait_line(READY["vllm"])
        status, raw = post(sim.url + "/tokenize", {"model": "m", "messages": CHAT})
        assert (status, json.loads(raw)["count"]) == (200, expected)
        assert _usage(sim.url, chat=True) == expected


def test_the_builtin_tokenizer_adds_chatml_tokens(port: int) -> None:
    """Without --tokenizer a word is a token, and ChatML adds 3 per message and 2 for the
    assistant's turn."""
    with Sim(port, "--engine", "sglang", *FAST) as sim:
        sim.wait_line(READY["sglang"])
        assert _usage(sim.url, chat=False) == len(TEXT.split())
        assert _usage(sim.url, chat=True) == 2 + len(TEXT.split()) + 3 * 2 + 2
        status, raw = post(sim.url + "/v1/tokenize", {"prompt": TEXT})
        assert status == 200 and json.loads(raw)["count"] == len(TEXT.split())


def test_a_tokenizer_that_is_not_one_is_exit_2(tmp_path: Path, port: int) -> None:
    """--tokenizer on a file that is no tokenizer.json is one sentence and exit 2."""
    bad = tmp_path / "tokenizer.json"
    bad.write_text("{}", encoding="utf-8")
    with Sim(port, "--engine", "vllm", *FAST, "--tokenizer", str(bad)) as sim:
        assert sim.wait_exit(timeout=30) == 2
        assert "--tokenizer" in sim.stderr()
