#!/usr/bin/env python3
"""Regenerates tests/golden/logits/arch_<name>.json: llama.cpp's logits on synthetic dense models
of the architectures that no small download provides, the reference tests/model/logits_golden_test.cc
holds Lumen's forward pass to:
  qwen3:  `lumen synth qwen3-mini` (4 blocks of 256, 4 query heads of 128 on 2 KV heads: a query
          width twice the embedding's, per-head QK-norm before NeoX rope, tied embeddings)
  gemma2: `lumen synth gemma2-mini` (4 blocks of 256, local and global layers alternating with a
          16-position window, GeGLU, post-norms, scaled embeddings, attention and final-logit
          soft caps of 1.5 and 2.0, low enough to bend the random model's scores and logits)
  phi3:   `lumen synth phi4-mini-tiny` (Phi-4-mini's layout: 4 blocks of 256, fused q/k/v and gate/up
          matrices, 48 of 64 dims of each head rotating, its own output matrix) with LongRoPE from
          an original context of 256: llama.cpp runs at 1024 tokens of context, past it, so its
          long factor set applies, and so does Lumen's at the test's context of 1024
  phi3_short: `lumen synth phi4-mini-tiny-short`, the same from an original context of 2048: the
          short factor set
  smollm3: `lumen synth smollm3-mini` (4 blocks of 256, the fourth without rope)
  granite: `lumen synth granite-mini` (4 blocks of 256 with Granite's embedding, residual,
          attention and logit multipliers)
  gpt_oss: `lumen synth gpt-oss-mini` (4 blocks of 256, 8 query heads of 64 on 2 KV heads with
          q/k/v/output biases and a sink logit per head, windows of 32 on even layers, no YaRN
          (gpt-oss's differs from llama.cpp's on purpose: check_arch_transformers.py holds it);
          16 experts of 256, top 4 chosen by the biased router's logits and weighted by a softmax
          over those, biased experts with the clamped SwiGLU), MXFP4_MOE: MXFP4 experts, Q8_0
          elsewhere
All others Q4_1; seed 7. The measurements, prompts (fixed random token ids of 64, 96 and 128 tokens)
and provenance are make_moe_golden.py's; the test feeds the prompts in chunks of 48 tokens, so
every prompt crosses prefill chunks (and, for gemma2, its window). scripts/check_arch_transformers.py
checks the same forward passes on models written by llama.cpp's converter from random
transformers models.

Run with the llama-cpp-python venv make_logits_golden.py describes, after building `lumen`:
    VENV/bin/python scripts/make_arch_golden.py [--lumen build/release/src/cli/lumen] [names...]
"""
import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import make_logits_golden as base  # noqa: E402
import make_moe_golden as moe  # noqa: E402

PRESETS = {"qwen3": "qwen3-mini", "gemma2": "gemma2-mini", "phi3": "phi4-mini-tiny", "phi3_short": "phi4-mini-tiny-short",
           "smollm3": "smollm3-mini", "granite": "granite-mini", "gpt_oss": "gpt-oss-mini"}
# Synth arguments where a golden's are not make_moe_golden.py's.
SYNTH_ARGS = {"gpt_oss": ["--type", "MXFP4_MOE", "--seed", "7"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lumen", type=Path, default=base.REPO / "build" / "release" / "src" / "cli" / "lumen")
    parser.add_argument("names", nargs="*", default=list(PRESETS), choices=list(PRESETS))
    args = parser.parse_args()
    for name in args.names:
        with tempfile.TemporaryDirectory() as workdir:
            moe.make_golden(name, args.lumen, Path(workdir), preset=PRESETS[name], out_name=f"arch_{name}",
                            script="scripts/make_arch_golden.py", synth_args=SYNTH_ARGS.get(name, moe.SYNTH_ARGS))


if __name__ == "__main__":
    main()
