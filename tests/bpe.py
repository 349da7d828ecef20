"""A small real BPE tokenizer.json, trained at test time with the ``tokenizers`` package.

Byte-level BPE as GPT-2, Llama 3 and Qwen use it: the pre-tokenizer keeps a word's
leading space, so merges cross spaces (`` the`` is one token, ``the`` another) and the
token count of a text is not the sum of its words' counts. The tokenizer adds a BOS
(``<s>``) as Llama's does, and ``tokenizer_config.json`` carries a ChatML template with
its special tokens, so chat prompts have the template's extra tokens.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from servegate.bench.dataset import VOCABULARY
from servegate.sim.tokens import CHATML

SPECIAL = ["<s>", "</s>", "<|im_start|>", "<|im_end|>"]


def _corpus(seed: int = 0) -> list[str]:
    """Sentences of common words, some glued together, so merges span words and spaces."""
    rng = random.Random(seed)
    lines = []
    for _ in range(400):
        words = rng.choices(VOCABULARY, k=rng.randint(5, 30))
        lines.append(" ".join(words))
        lines.append("".join(words[:4]) + ", " + " ".join(words[4:]) + ".")
    return lines


def train_bpe(folder: Path, vocab_size: int = 700) -> Path:
    """Write tokenizer.json and tokenizer_config.json into ``folder``; returns ``folder``."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(_corpus(), trainer=trainer)
    bos = tok.token_to_id("<s>")
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", bos)]
    )
    folder.mkdir(parents=True, exist_ok=True)
    tok.save(str(folder / "tokenizer.json"))
    config = {"bos_token": "<s>", "eos_token": "</s>", "chat_template": CHATML}
    (folder / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    return folder
