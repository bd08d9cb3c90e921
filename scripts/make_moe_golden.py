#!/usr/bin/env python3
"""Regenerates tests/golden/logits/moe_<name>.json: llama.cpp's logits on synthetic
mixture-of-experts models, the reference tests/model/logits_golden_test.cc holds Lumen's forward
pass to (scripts/make_llama3_rope_golden.py uses make_golden for its synthetic dense model). No
MoE GGUF small enough can be downloaded here, so each model is written by `lumen synth` (random
weights in a scaled-down real shape, fixed seed; its output does not depend on the thread
count) and both implementations run the same file:
  qwen2moe: qwen2moe-a2.7b-mini (softmax top-4 of 60, weights not renormalized, a shared expert
            behind a sigmoid gate, q/k/v biases)
  qwen3moe: qwen3moe-mini (softmax top-8 of 128, renormalized, QK-norm, 8 query heads on 1 KV)
  olmoe:    olmoe-mini (softmax top-8 of 64, not renormalized, RMS norms of the whole q and k)
  mixtral:  mixtral-mini (general.architecture "llama" with 8 experts, top 2, renormalized)
  deepseek2: deepseek2-lite-mini (multi-head latent attention with DeepSeek-V2-Lite's latent rank
            and head sizes, a dense first layer, softmax top-6 of 64 plus 2 shared experts)

Run with the llama-cpp-python venv make_logits_golden.py describes, after building `lumen`:
    ~/.cache/lumen/llama-venv/bin/python scripts/make_moe_golden.py [--lumen build/release/src/cli/lumen] [names...]

The synthetic file is not stored: the golden names the synth arguments, the vocabulary file
(the default model, whose tokenizer synth copies) with its sha256, and the synthesized file's
sha256, so the test regenerates the same bytes and checks them before comparing. Random
weights make flat distributions and meaningless text, so the prompts are fixed random token
ids and the comparison is numeric: per position the top 8 logits and 16 probe logits, a
teacher-forced greedy continuation, and llama.cpp's own flash-attention spread (as in
make_logits_golden.py, whose measurement code this reuses).
"""
import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import make_logits_golden as base  # noqa: E402  (also selects llama.cpp's plain CPU kernels)
from llama_cpp import Llama, __version__ as llama_cpp_version  # noqa: E402

MODELS = {
    "qwen2moe": "qwen2moe-a2.7b-mini",
    "qwen3moe": "qwen3moe-mini",
    "olmoe": "olmoe-mini",
    "mixtral": "mixtral-mini",
    "deepseek2": "deepseek2-lite-mini",
}
SYNTH_ARGS = ["--type", "Q4_1", "--seed", "7"]
VOCAB = "SmolLM2-135M-Instruct.Q4_1.gguf"
PROMPT_LENGTHS = [64, 96, 128]
N_CONTINUE = 32
PROMPT_SEED = 2024


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def synthesize(preset: str, lumen: Path, workdir: Path, synth_args: list[str] = SYNTH_ARGS) -> Path:
    model = workdir / f"{preset}.gguf"
    subprocess.run([str(lumen), "synth", preset, "-o", str(model), "--vocab", str(base.CACHE / VOCAB), *synth_args],
                   check=True, stdout=subprocess.DEVNULL)
    return model


def make_golden(name: str, lumen: Path, workdir: Path, *, preset: str | None = None, out_name: str | None = None,
                prompt_lengths: list[int] = PROMPT_LENGTHS, script: str = "scripts/make_moe_golden.py",
                measure=None, synth_args: list[str] = SYNTH_ARGS) -> None:
    """Writes tests/golden/logits/<out_name>.json (default moe_<name>) for the preset (default
    MODELS[name]); measure(model, cases, probes, spread), when given, returns a dict merged into
    the golden's top level."""
    preset = preset or MODELS[name]
    vocab = base.CACHE / VOCAB
    model = synthesize(preset, lumen, workdir, synth_args)
    llm = Llama(model_path=str(model), n_ctx=base.N_CTX, n_batch=512, n_threads=2, logits_all=True, seed=0,
                verbose=False)
    n_vocab = llm.n_vocab()
    probes = [int(i) for i in np.linspace(0, n_vocab - 1, base.N_PROBES).round()]
    rng = np.random.default_rng(PROMPT_SEED)
    cases = []
    for length in prompt_lengths:
        tokens = [int(t) for t in rng.integers(0, n_vocab, size=length)]
        llm.reset()
        llm.eval(tokens)
        scores = np.array(llm.scores[:len(tokens)], dtype=np.float32)
        positions = []
        for row in scores:
            top = np.argsort(-row, kind="stable")[:base.TOP_K]
            positions.append({"top_ids": [int(i) for i in top], "top_logits": [float(row[i]) for i in top],
                              "probe_logits": [float(row[i]) for i in probes]})
        continuation, gaps = [], []
        row = scores[-1]
        for _ in range(N_CONTINUE):
            order = np.argsort(-row, kind="stable")[:2]
            continuation.append(int(order[0]))
            gaps.append(float(row[order[0]] - row[order[1]]))
            llm.eval([int(order[0])])
            row = np.array(llm.scores[llm.n_tokens - 1], dtype=np.float32)
        cases.append({"tokens": tokens, "positions": positions, "greedy": continuation, "greedy_top2_gap": gaps})
    del llm
    # The reference's own spread over two of its other paths: flash attention, and one token per
    # batch (its matmuls' vector path, another summation order in the f32 router). A routing
    # decision between two nearly equally probable experts flips under any rounding change, and
    # each flip moves that position's logits by the weight of the experts it swaps, so the
    # spread is the worse of the two paths, stat by stat.
    spreads = [base.spread_of_flash_attention(model, cases, probes),
               base.spread_of_flash_attention(model, cases, probes, flash_attn=False, n_batch=1)]
    spread = {key: (min if key == "top1_agreement" else max)(s[key] for s in spreads) for key in spreads[0]}
    print(f"{name}: llama.cpp flash attention / one token per batch vs default: {spreads}", file=sys.stderr)
    extra = measure(model, cases, probes, spread) if measure else {}
    golden = {"generator": {"script": script, "llama_cpp_python": llama_cpp_version,
                            "synth": [preset, *synth_args], "vocab": VOCAB, "vocab_sha256": sha256(vocab),
                            "model_sha256": sha256(model),
                            "settings": f"n_ctx {base.N_CTX}, n_batch 512, f16 KV cache, no flash attention, "
                                        "no extra buffer types",
                            "spread_paths": "flash attention; n_batch 1"},
              "probe_ids": probes, "reference_spread": spread, **extra, "cases": cases}
    out = base.REPO / "tests" / "golden" / "logits" / f"{out_name or 'moe_' + name}.json"
    with out.open("w") as f:
        json.dump(golden, f, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {out} ({out.stat().st_size} bytes)", file=sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lumen", type=Path, default=base.REPO / "build" / "release" / "src" / "cli" / "lumen")
    parser.add_argument("names", nargs="*", help=f"some of {', '.join(MODELS)} (default: all)")
    args = parser.parse_args()
    for name in args.names:
        if name not in MODELS:
            parser.error(f"unknown model '{name}' (known: {', '.join(MODELS)})")
    with tempfile.TemporaryDirectory() as workdir:
        for name in args.names or MODELS:
            make_golden(name, args.lumen, Path(workdir))


if __name__ == "__main__":
    main()
