"""Create a tiny Llama-architecture model folder that vLLM can serve, entirely offline.

Why: the real-engine tests need a model that no hub has to provide. The weights are
random (saved with transformers), the tokenizer is a byte-level BPE trained here with
tokenizers on generated text, and head_dim is 64 because vLLM's CPU attention rejects
smaller heads (head_dim=16 fails at the first completion).

Run with the Python that has vLLM (it brings torch, transformers and tokenizers):
    python tests/real/make_tiny_llama.py OUT_DIR [--max-positions 1024]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

VOCAB_SIZE = 512
WORDS = [
    "the",
    "a",
    "server",
    "model",
    "token",
    "cache",
    "engine",
    "request",
    "batch",
    "latency",
    "gate",
    "ready",
    "crash",
    "timeout",
    "launch",
    "stop",
    "port",
    "health",
    "metric",
    "prefill",
    "decode",
    "weight",
    "layer",
    "head",
    "attention",
    "memory",
    "river",
    "stone",
    "cloud",
    "lamp",
    "garden",
    "window",
    "paper",
    "music",
    "market",
    "winter",
    "summer",
    "yellow",
    "green",
    "quick",
    "slow",
    "bright",
    "dark",
    "open",
    "close",
    "north",
    "south",
    "east",
    "west",
    "one",
    "two",
    "three",
    "four",
    "five",
]


def corpus(lines: int, seed: int) -> list[str]:
    """Generated sentences, enough for the BPE merges to cover common words."""
    rng = random.Random(seed)
    return [
        " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 16))) + "." for _ in range(lines)
    ]


def build_tokenizer(out: Path, seed: int) -> None:
    """Train a byte-level BPE and save it in the transformers layout."""
    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        special_tokens=["<unk>", "<s>", "</s>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(corpus(4000, seed), trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<s>", eos_token="</s>", unk_token="<unk>"
    )
    fast.save_pretrained(out)


def build_model(out: Path, max_positions: int, seed: int) -> None:
    """Random float32 weights for a two-layer Llama with 64-wide heads."""
    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=VOCAB_SIZE,
        hidden_size=128,
        intermediate_size=256,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        head_dim=64,
        max_position_embeddings=max_positions,
        bos_token_id=1,
        eos_token_id=2,
        tie_word_embeddings=False,
        torch_dtype="float32",
    )
    model = LlamaForCausalLM(config)
    model.save_pretrained(out, safe_serialization=True)


def main(argv: list[str] | None = None) -> int:
    """Write tokenizer and model into OUT_DIR and print a one-line summary."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--max-positions", type=int, default=1024)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    build_tokenizer(args.out, args.seed)
    build_model(args.out, args.max_positions, args.seed)
    config = json.loads((args.out / "config.json").read_text())
    print(
        f"tiny llama in {args.out}: head_dim={config['head_dim']} "
        f"max_position_embeddings={config['max_position_embeddings']}",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
