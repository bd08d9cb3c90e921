#!/usr/bin/env python3
"""Regenerates tests/golden/logits/alibi_bloom.json: llama.cpp's logits on a synthetic BLOOM
model (`lumen synth bloom-mini`: 4 blocks of 384 wide, 6 heads of 64 with ALiBi at llama.cpp's
max bias 8 (6 heads: both slope series), LayerNorms with biases, a fused biased QKV, a plain
GELU FFN of 1536; Q4_1, seed 7), the reference tests/model/logits_golden_test.cc holds Lumen's
ALiBi attention and LayerNorm blocks to. The measurements, prompts (fixed random token ids of
64, 96 and 128 tokens) and provenance are make_moe_golden.py's; the test feeds the prompts in
chunks of 48 tokens, so every prompt crosses prefill chunks. scripts/check_bloom_transformers.py
checks the same forward pass on a model written by llama.cpp's converter from a random
transformers BloomForCausalLM.

Run with the llama-cpp-python venv make_logits_golden.py describes, after building `lumen`:
    VENV/bin/python scripts/make_alibi_golden.py [--lumen build/release/src/cli/lumen]
"""
import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import make_logits_golden as base  # noqa: E402
import make_moe_golden as moe  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lumen", type=Path, default=base.REPO / "build" / "release" / "src" / "cli" / "lumen")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as workdir:
        moe.make_golden("bloom", args.lumen, Path(workdir), preset="bloom-mini", out_name="alibi_bloom",
                        script="scripts/make_alibi_golden.py")


if __name__ == "__main__":
    main()
