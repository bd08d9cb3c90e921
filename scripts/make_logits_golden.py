#!/usr/bin/env python3
"""Regenerates tests/golden/logits/smollm2.json: llama.cpp's logits and greedy continuations for
SmolLM2-135M-Instruct Q4_1, the reference Lumen's forward pass is tested against.

Run with a Python that has llama-cpp-python built from PyPI's source package (CPU), kept outside
the repo, e.g.:
    python3 -m venv ~/.cache/lumen/llama-venv
    CMAKE_ARGS="-DGGML_NATIVE=ON" ~/.cache/lumen/llama-venv/bin/pip install --no-binary \
        llama-cpp-python llama-cpp-python==0.3.36
    ~/.cache/lumen/llama-venv/bin/python scripts/make_logits_golden.py

What is stored, per prompt (the full logits would be megabytes):
- the prompt's token ids as llama.cpp tokenizes them (BOS as the model asks), so the forward
  pass is tested apart from the tokenizer;
- per position: the top 8 token ids and logits, and the logits of 16 fixed "probe" ids spread
  over the vocabulary (differences there measure the whole distribution, not only its head);
- a greedy continuation of 128 tokens with, per step, the gap between llama.cpp's top two
  logits (where that gap is tiny, either choice is correct to within rounding);
- the spread of llama.cpp against itself: the same measurements with its flash-attention path,
  which computes the same function with different rounding. On a small 4-bit model, rounding
  differences flip 8-bit activation codes and compound over the layers, so an independent
  implementation cannot be expected to agree with the reference more closely than the
  reference's own two paths agree with each other; the test's bounds are set from this spread.
"""
import hashlib
import json
import os
import sys
from pathlib import Path

import numpy as np
from llama_cpp import Llama, __version__ as llama_cpp_version

REPO = Path(__file__).resolve().parent.parent
CACHE = Path(os.environ.get("LUMEN_CACHE") or Path.home() / ".cache" / "lumen" / "models")
MODEL = CACHE / "SmolLM2-135M-Instruct.Q4_1.gguf"
OUT = REPO / "tests" / "golden" / "logits" / "smollm2.json"

# Our own prompts, each long enough for 64+ positions.
PROMPTS = [
    "The history of the printing press begins long before Gutenberg. Wooden blocks were carved "
    "by hand, inked, and pressed onto paper or cloth, and the technique spread slowly along trade "
    "routes. Movable type changed the economics of copying: a page could be composed, printed "
    "hundreds of times, and then broken up so that its letters could be reused.",
    "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number, computed iteratively.\"\"\"\n"
    "    a, b = 0, 1\n    for _ in range(n):\n        a, b = b, a + b\n    return a\n\n\n"
    "if __name__ == \"__main__\":\n    for i in range(10):\n        print(i, fibonacci(i))\n",
    "<|im_start|>system\nYou are a helpful assistant who answers briefly.<|im_end|>\n"
    "<|im_start|>user\nI have three apples and buy five more, then give two to my sister. How many "
    "apples do I have left, and how did you work it out? Please show each step of the "
    "arithmetic on its own line, then give the final answer.<|im_end|>\n<|im_start|>assistant\n",
    "Q: What is the boiling point of water at sea level?\nA: 100 degrees Celsius.\n"
    "Q: What gas do plants absorb from the air?\nA: Carbon dioxide.\n"
    "Q: Which planet is known as the red planet?\nA: Mars.\n"
    "Q: What is the largest ocean on Earth?\nA: The Pacific Ocean.\n"
    "Q: Who wrote the play Romeo and Juliet?\nA:",
    "Dear team,\n\nThank you all for the hard work this quarter. The new release shipped on time, "
    "the error rate dropped by half, and customers noticed. Next month we will focus on "
    "documentation and on making the installer simpler, so that a new user can go from download "
    "to a first result in under ten minutes. Please send me your ideas by Friday.\n\n"
    "Best regards,\n",
]
TOP_K = 8
N_PROBES = 16
N_CONTINUE = 128


def spread_of_flash_attention(cases, probes) -> dict:
    """How far llama.cpp's flash-attention path is from its default path, on the same inputs."""
    llm = Llama(model_path=str(MODEL), n_ctx=1024, n_batch=512, n_threads=2, logits_all=True,
                flash_attn=True, seed=0, verbose=False)
    n = agree = 0
    max_top = max_probe = widest_gap = 0.0
    greedy_mismatches = 0
    greedy_widest_gap = 0.0
    for case in cases:
        llm.reset()
        llm.eval(case["tokens"])
        scores = np.array(llm.scores[: len(case["tokens"])], dtype=np.float32)
        for row, want in zip(scores, case["positions"]):
            max_top = max(max_top, max(abs(float(row[i]) - l) for i, l in zip(want["top_ids"], want["top_logits"])))
            max_probe = max(max_probe, max(abs(float(row[i]) - l) for i, l in zip(probes, want["probe_logits"])))
            n += 1
            if int(np.argmax(row)) == want["top_ids"][0]:
                agree += 1
            else:
                widest_gap = max(widest_gap, want["top_logits"][0] - want["top_logits"][1])
        row = scores[-1]
        for token, gap in zip(case["greedy"], case["greedy_top2_gap"]):
            if int(np.argmax(row)) != token:
                greedy_mismatches += 1
                greedy_widest_gap = max(greedy_widest_gap, gap)
            llm.eval([token])  # teacher-forced, as the test does
            row = np.array(llm.scores[llm.n_tokens - 1], dtype=np.float32)
    return {"top1_agreement": agree / n, "widest_gap_missed": widest_gap,
            "max_top_logit_diff": max_top, "max_probe_logit_diff": max_probe,
            "greedy_mismatches": greedy_mismatches, "greedy_widest_gap_missed": greedy_widest_gap}


def main() -> None:
    llm = Llama(model_path=str(MODEL), n_ctx=1024, n_batch=512, n_threads=2, logits_all=True,
                seed=0, verbose=False)
    n_vocab = llm.n_vocab()
    probes = [int(i) for i in np.linspace(0, n_vocab - 1, N_PROBES).round()]
    cases = []
    for prompt in PROMPTS:
        tokens = llm.tokenize(prompt.encode(), add_bos=True, special=True)
        assert len(tokens) >= 64, (len(tokens), prompt[:40])
        llm.reset()
        llm.eval(tokens)
        scores = np.array(llm.scores[: len(tokens)], dtype=np.float32)
        positions = []
        for row in scores:
            top = np.argsort(-row, kind="stable")[:TOP_K]
            positions.append({"top_ids": [int(i) for i in top],
                              "top_logits": [float(row[i]) for i in top],
                              "probe_logits": [float(row[i]) for i in probes]})
        # Greedy continuation, one token at a time, recording the top-2 gap at each step.
        continuation, gaps = [], []
        row = scores[-1]
        for _ in range(N_CONTINUE):
            order = np.argsort(-row, kind="stable")[:2]
            continuation.append(int(order[0]))
            gaps.append(float(row[order[0]] - row[order[1]]))
            llm.eval([int(order[0])])
            row = np.array(llm.scores[llm.n_tokens - 1], dtype=np.float32)
        cases.append({"prompt": prompt, "tokens": tokens, "positions": positions,
                      "greedy": continuation, "greedy_top2_gap": gaps})
    del llm
    spread = spread_of_flash_attention(cases, probes)
    print(f"llama.cpp flash attention vs default: {spread}", file=sys.stderr)
    digest = hashlib.sha256(MODEL.read_bytes()).hexdigest()
    golden = {"generator": {"script": "scripts/make_logits_golden.py",
                            "llama_cpp_python": llama_cpp_version,
                            "model": MODEL.name, "model_sha256": digest,
                            "settings": "n_ctx 1024, n_batch 512, f16 KV cache, no flash attention"},
              "probe_ids": probes, "reference_spread": spread, "cases": cases}
    OUT.parent.mkdir(parents=True, exist_ok=True)
    with OUT.open("w") as f:
        json.dump(golden, f, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes)", file=sys.stderr)


if __name__ == "__main__":
    main()
