"""Write a Llama-architecture GGUF with random weights, for serving tests on machines offline.

Why: the GPU machine reaches no model hub and takes a small upload only, so its model is
generated there: real shapes and a real file format, random numbers. Throughput and
memory depend on the shapes, not on the values, so the serving figures stay meaningful.

Usage:
    python benchmarks/real_make_gguf.py OUT.gguf [--hidden 2048] [--layers 16] [--heads 16]
        [--kv-heads 8] [--ffn 5632] [--vocab 32000] [--ctx 8192] [--seed 0]

Needs numpy and the gguf package (pip install gguf, or llama.cpp's gguf-py on PYTHONPATH).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import gguf
import numpy as np

BYTE_TOKENS = 256
SPECIAL = ("<unk>", "<s>", "</s>")
TOKEN_TYPE_NORMAL = 1
TOKEN_TYPE_UNKNOWN = 2
TOKEN_TYPE_CONTROL = 3
TOKEN_TYPE_BYTE = 6
FILE_TYPE_MOSTLY_F16 = 1


def make_vocab(size: int, rng: np.random.Generator) -> tuple[list[str], list[float], list[int]]:
    """A SentencePiece-style vocabulary: specials, byte fallbacks, then unique word pieces."""
    tokens = list(SPECIAL)
    types = [TOKEN_TYPE_UNKNOWN, TOKEN_TYPE_CONTROL, TOKEN_TYPE_CONTROL]
    tokens += [f"<0x{b:02X}>" for b in range(BYTE_TOKENS)]
    types += [TOKEN_TYPE_BYTE] * BYTE_TOKENS
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    seen = set(tokens)
    singles = [f"\u2581{c}" for c in letters] + [str(c) for c in letters] + ["\u2581"]
    for piece in singles:
        if len(tokens) < size and piece not in seen:
            seen.add(piece)
            tokens.append(piece)
            types.append(TOKEN_TYPE_NORMAL)
    while len(tokens) < size:
        length = int(rng.integers(2, 9))
        piece = ("\u2581" if rng.random() < 0.6 else "") + "".join(rng.choice(letters, length))
        if piece not in seen:
            seen.add(piece)
            tokens.append(piece)
            types.append(TOKEN_TYPE_NORMAL)
    scores = [0.0] * len(SPECIAL) + [0.0] * BYTE_TOKENS
    scores += [-float(i) for i in range(len(tokens) - len(scores))]
    return tokens, scores, types


def write(path: Path, args: argparse.Namespace) -> int:
    """Write the model and return its size in bytes."""
    rng = np.random.default_rng(args.seed)
    head_dim = args.hidden // args.heads
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name(f"random-llama-{args.layers}x{args.hidden}")
    writer.add_context_length(args.ctx)
    writer.add_embedding_length(args.hidden)
    writer.add_block_count(args.layers)
    writer.add_feed_forward_length(args.ffn)
    writer.add_head_count(args.heads)
    writer.add_head_count_kv(args.kv_heads)
    writer.add_rope_dimension_count(head_dim)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_vocab_size(args.vocab)
    writer.add_file_type(FILE_TYPE_MOSTLY_F16)
    tokens, scores, types = make_vocab(args.vocab, rng)
    writer.add_tokenizer_model("llama")
    writer.add_token_list(tokens)
    writer.add_token_scores(scores)
    writer.add_token_types(types)
    writer.add_unk_token_id(0)
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)
    writer.add_add_bos_token(True)

    def rand(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape, dtype=np.float32) * 0.02).astype(np.float16)

    kv_dim = args.kv_heads * head_dim
    writer.add_tensor("token_embd.weight", rand(args.vocab, args.hidden))
    for i in range(args.layers):
        blk = f"blk.{i}"
        writer.add_tensor(f"{blk}.attn_norm.weight", np.ones(args.hidden, dtype=np.float32))
        writer.add_tensor(f"{blk}.attn_q.weight", rand(args.hidden, args.hidden))
        writer.add_tensor(f"{blk}.attn_k.weight", rand(kv_dim, args.hidden))
        writer.add_tensor(f"{blk}.attn_v.weight", rand(kv_dim, args.hidden))
        writer.add_tensor(f"{blk}.attn_output.weight", rand(args.hidden, args.hidden))
        writer.add_tensor(f"{blk}.ffn_norm.weight", np.ones(args.hidden, dtype=np.float32))
        writer.add_tensor(f"{blk}.ffn_gate.weight", rand(args.ffn, args.hidden))
        writer.add_tensor(f"{blk}.ffn_up.weight", rand(args.ffn, args.hidden))
        writer.add_tensor(f"{blk}.ffn_down.weight", rand(args.hidden, args.ffn))
    writer.add_tensor("output_norm.weight", np.ones(args.hidden, dtype=np.float32))
    writer.add_tensor("output.weight", rand(args.vocab, args.hidden))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path.stat().st_size


def main(argv: list[str] | None = None) -> int:
    """Parse the shape, write the file, print its size."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--hidden", type=int, default=2048)
    parser.add_argument("--layers", type=int, default=16)
    parser.add_argument("--heads", type=int, default=16)
    parser.add_argument("--kv-heads", type=int, default=8)
    parser.add_argument("--ffn", type=int, default=5632)
    parser.add_argument("--vocab", type=int, default=32000)
    parser.add_argument("--ctx", type=int, default=8192)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.hidden % args.heads or args.heads % args.kv_heads:
        parser.error("--hidden must divide by --heads, and --heads by --kv-heads")
    started = time.monotonic()
    size = write(args.out, args)
    print(
        f"wrote {args.out}: {size / 2**20:.1f} MiB in {time.monotonic() - started:.1f}s",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
