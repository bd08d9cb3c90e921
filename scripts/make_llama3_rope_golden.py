#!/usr/bin/env python3
"""Regenerates tests/golden/logits/llama3_rope.json: llama.cpp's logits on a synthetic model with
llama3-style RoPE scaling, at positions past its original context, the reference
tests/model/logits_golden_test.cc holds Lumen's forward pass to.

The model is `lumen synth llama3-mini` (llama shape, 4 layers of width 256, 4 query heads of 64
on 2 KV heads, rope base 500000, an original context of 256 stretched 8 times; its q and k
weights are 4x synth's usual random scale: at 1x a random model's attention is so flat that
dropping the divisors moved llama.cpp's logits by only 2.5x its own spread). Its scaling is
what llama.cpp's converters write for Llama 3.1+: no rope.scaling.* keys, a rope_freqs tensor of
per-pair divisors (Meta's rule: pairs 0-5 kept, 6-9 blended, 10-31 divided by 8;
tests/unit/model/llama3_rope_test.cc checks them against transformers' formula). Prompts of 64,
384 and 768 random token ids, so most positions lie past the original 256. Everything else
(what is stored, the sha256-pinned synthetic file the test regenerates, the reference's own
spread) is scripts/make_moe_golden.py's.

The golden also records how far llama.cpp's logits move when the same file's rope_freqs are all
1 ("rope_freqs_effect"); the script refuses to write a golden where that is not far beyond the
reference's own spread, since then the test could not tell whether the divisors are applied.

Run with the llama-cpp-python venv make_logits_golden.py describes (it has gguf), after
building `lumen`:
    ~/.cache/lumen/llama-venv/bin/python scripts/make_llama3_rope_golden.py [--lumen build/release/src/cli/lumen]
"""
import argparse
import shutil
import sys
import tempfile
from pathlib import Path

import gguf
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import make_logits_golden as base  # noqa: E402
import make_moe_golden as synth_golden  # noqa: E402

PRESET = "llama3-mini"
PROMPT_LENGTHS = [64, 384, 768]
# The divisors' effect must exceed the reference's own spread this many times over.
MIN_EFFECT_OVER_SPREAD = 10.0


def rope_freqs_effect(model: Path, cases, probes, spread) -> dict:
    """llama.cpp's default path on a copy of the model whose divisors are all 1, against the
    golden: what ignoring rope_freqs would cost."""
    plain = model.with_name(model.stem + ".no-rope-freqs.gguf")
    shutil.copyfile(model, plain)
    reader = gguf.GGUFReader(plain, "r+")
    tensors = [t for t in reader.tensors if t.name == "rope_freqs.weight"]
    assert len(tensors) == 1, "the synthetic model has no rope_freqs tensor"
    assert float(np.min(tensors[0].data)) == 1.0 and float(np.max(tensors[0].data)) == 8.0
    tensors[0].data[:] = 1.0
    reader.data.flush()
    del reader
    effect = base.spread_of_flash_attention(plain, cases, probes, flash_attn=False)
    plain.unlink()
    print(f"without rope_freqs: {effect}", file=sys.stderr)
    for key in ("max_top_logit_diff", "max_probe_logit_diff"):
        assert effect[key] > MIN_EFFECT_OVER_SPREAD * spread[key], (key, effect[key], spread[key])
    return {"rope_freqs_effect": {"max_top_logit_diff": effect["max_top_logit_diff"],
                                  "max_probe_logit_diff": effect["max_probe_logit_diff"],
                                  "top1_agreement": effect["top1_agreement"]}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lumen", type=Path, default=base.REPO / "build" / "release" / "src" / "cli" / "lumen")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as workdir:
        synth_golden.make_golden("llama3_rope", args.lumen, Path(workdir), preset=PRESET, out_name="llama3_rope",
                                 prompt_lengths=PROMPT_LENGTHS, script="scripts/make_llama3_rope_golden.py",
                                 measure=rope_freqs_effect)


if __name__ == "__main__":
    main()
