#!/usr/bin/env python3
"""Regenerates tests/golden/tokenizer/gpt4o_pretokenizer.json: Hugging Face tokenizers' ids for
the shared test strings and gpt4o_vocab.EXTRA_CASES under GPT-4o's o200k pre-tokenizer
(tokenizer.ggml.pre "gpt-4o", gpt-oss's), on Llama 3's byte-level BPE vocabulary
(gpt4o_vocab.py says why that vocabulary). The reference tokenizer is built as gpt-oss's
tokenizer.json builds its own: BPE (merges applied, ignore_merges off), a Split of the o200k
pattern (isolated) then ByteLevel without its own regex, ByteLevel decoding.

    VENV/bin/python scripts/make_gpt4o_tokenizer_golden.py

VENV: any venv with tokenizers and gguf (e.g. make_tokenizer_golden.py's llama-venv)."""
import hashlib
import json
import sys
from pathlib import Path

import gguf
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gpt4o_vocab import O200K_PATTERN, test_strings  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
SOURCE = REPO.parent / "shared" / "testdata" / "tokenizer" / "ggml-vocab-llama-bpe.gguf"
OUT = REPO / "tests" / "golden" / "tokenizer" / "gpt4o_pretokenizer.json"


def reference_tokenizer(source: Path) -> Tokenizer:
    reader = gguf.GGUFReader(str(source))
    tokens = reader.fields["tokenizer.ggml.tokens"].contents()
    merges = [tuple(m.split(" ", 1)) for m in reader.fields["tokenizer.ggml.merges"].contents()]
    bpe = models.BPE(vocab={t: i for i, t in enumerate(tokens)}, merges=merges, ignore_merges=False)
    tok = Tokenizer(bpe)
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(O200K_PATTERN), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    return tok


def main() -> None:
    tok = reference_tokenizer(SOURCE)
    cases = [{"text": text, "ids": tok.encode(text, add_special_tokens=False).ids}
             for text in test_strings(Path(str(SOURCE) + ".inp"))]
    import tokenizers
    golden = {"generator": {"script": "scripts/make_gpt4o_tokenizer_golden.py", "tokenizers": tokenizers.__version__,
                            "vocab": SOURCE.name, "vocab_sha256": hashlib.sha256(SOURCE.read_bytes()).hexdigest(),
                            "pattern": O200K_PATTERN},
              "cases": cases}
    OUT.write_text(json.dumps(golden, ensure_ascii=True, indent=0) + "\n", encoding="ascii")
    print(f"wrote {OUT}: {len(cases)} cases", file=sys.stderr)


if __name__ == "__main__":
    main()
