"""Write a small word-level Hugging Face tokenizer for peer benchmark tools.

`vllm bench serve` (and other peers) build their random prompts from a tokenizer's
vocabulary and refuse to run without one; this machine cannot download one, so this
script writes a self-contained word-level tokenizer (the load generator's own vocabulary)
to a folder that ``--tokenizer DIR`` accepts. Run it with the peer's Python:

    /work/venvs/vllm/bin/python benchmarks/peer_tokenizer.py /work/venvs/tokenizer
"""

from __future__ import annotations

import sys
from pathlib import Path

from tokenizers import Tokenizer, decoders, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from servegate.bench.dataset import VOCABULARY


def main() -> None:
    out = Path(sys.argv[1])
    words = ["<unk>", "<s>", "</s>", *dict.fromkeys(VOCABULARY)]
    vocab = {w: i for i, w in enumerate(words)}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.decoder = decoders.WordPiece(prefix="##")
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token="<unk>", bos_token="<s>", eos_token="</s>"
    )
    fast.save_pretrained(out)
    print(f"tokenizer with {len(vocab)} words written to {out}")


if __name__ == "__main__":
    main()
