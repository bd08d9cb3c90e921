#!/usr/bin/env python3
"""Regenerates tests/golden/logits/hybrid_granitehybrid.json: llama.cpp's logits on a synthetic
granite-hybrid model (`lumen synth granite-hybrid-mini`: 4 blocks of 256 wide, blocks 1 and 3
attending with 4 heads over 2 KV heads and no rope, blocks 0 and 2 Mamba 2 layers of inner 512
in 8 heads of 64, state 64, two groups, kernel 4, a SwiGLU FFN of 512 in every block, Granite's
embedding, residual, attention and logit multipliers; Q4_1, seed 7), the reference
tests/model/logits_golden_test.cc holds Lumen's hybrid forward pass to. The measurements,
prompts (fixed random token ids of 64, 96 and 128 tokens) and provenance (synth arguments,
vocabulary and model sha256) are make_moe_golden.py's; the test feeds the prompts in chunks of
48 tokens, so every prompt crosses prefill chunks with both its KV and its recurrent state.
scripts/check_hybrid_transformers.py checks the same forward pass on a model written by
llama.cpp's converter from a random transformers GraniteMoeHybrid.

Run with the llama-cpp-python venv make_logits_golden.py describes, after building `lumen`:
    VENV/bin/python scripts/make_hybrid_golden.py [--lumen build/release/src/cli/lumen]
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
        moe.make_golden("granitehybrid", args.lumen, Path(workdir), preset="granite-hybrid-mini",
                        out_name="hybrid_granitehybrid", script="scripts/make_hybrid_golden.py")


if __name__ == "__main__":
    main()
