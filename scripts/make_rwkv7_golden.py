#!/usr/bin/env python3
"""Regenerates tests/golden/logits/rwkv_rwkv7.json: llama.cpp's logits on a synthetic RWKV 7
model (`lumen synth rwkv7-mini`: 4 blocks of 256 wide in 4 wkv heads of 64, FFN 1024, LoRA ranks
32 (gate 64), Q4_1, seed 7), the reference tests/model/logits_golden_test.cc holds Lumen's RWKV 7
forward pass to. The measurements, the prompts (fixed random token ids of 64, 96 and 128 tokens)
and the file's provenance (synth arguments, vocabulary and model sha256) are
make_moe_golden.py's; the test feeds the prompts in chunks of 48 tokens, so every prompt
crosses at least one prefill chunk with its recurrent state.

Run with the llama-cpp-python venv make_logits_golden.py describes (0.3.36 runs rwkv7), after
building `lumen`:
    VENV/bin/python scripts/make_rwkv7_golden.py [--lumen build/release/src/cli/lumen]
"""
import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import make_logits_golden as base  # noqa: E402
import make_moe_golden as moe  # noqa: E402

MODELS = {"rwkv7": "rwkv7-mini"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lumen", type=Path, default=base.REPO / "build" / "release" / "src" / "cli" / "lumen")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as workdir:
        for name, preset in MODELS.items():
            moe.make_golden(name, args.lumen, Path(workdir), preset=preset, out_name=f"rwkv_{name}",
                            script="scripts/make_rwkv7_golden.py")


if __name__ == "__main__":
    main()
