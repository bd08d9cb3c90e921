#!/usr/bin/env python3
"""Regenerates tests/golden/logits/<model>.json: llama.cpp's logits and greedy continuations for
a real model, the reference Lumen's forward pass is tested against. Models: smollm2
(SmolLM2-135M-Instruct Q4_1, the default) and gemma3 (Gemma 3 270M Q4_K_M, with a prompt longer
than its 512-token sliding window, so that local and global layers differ), and smollm2_yarn /
smollm2_linear (the default model with rope scaling added by scripts/make_rope_variants.py).

Run with a Python that has llama-cpp-python built from PyPI's source package (CPU), kept outside
the repo, e.g.:
    python3 -m venv ~/.cache/lumen/llama-venv
    CMAKE_ARGS="-DGGML_NATIVE=ON" ~/.cache/lumen/llama-venv/bin/pip install --no-binary \
        llama-cpp-python llama-cpp-python==0.3.36
    ~/.cache/lumen/llama-venv/bin/python scripts/make_logits_golden.py [smollm2|gemma3]

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

import llama_cpp.llama_cpp as llama_cpp_api
import numpy as np
from llama_cpp import Llama, __version__ as llama_cpp_version

# llama.cpp's plain CPU kernels, without its extra buffer types (weight repacking, AMX tiles):
# on a Xeon with AMX, 0.3.36's AMX matmul crashed in the first decode, and the plain path is
# the same on every x86 machine.
_default_model_params = llama_cpp_api.llama_model_default_params


def _plain_cpu_model_params():
    params = _default_model_params()
    params.use_extra_bufts = False
    return params


llama_cpp_api.llama_model_default_params = _plain_cpu_model_params  # what Llama() calls

REPO = Path(__file__).resolve().parent.parent
CACHE = Path(os.environ.get("LUMEN_CACHE") or Path.home() / ".cache" / "lumen" / "models")
# Our own prompts, each long enough for 64+ positions.
PLAIN_PROMPTS = [
    "The history of the printing press begins long before Gutenberg. Wooden blocks were carved "
    "by hand, inked, and pressed onto paper or cloth, and the technique spread slowly along trade "
    "routes. Movable type changed the economics of copying: a page could be composed, printed "
    "hundreds of times, and then broken up so that its letters could be reused.",
    "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number, computed iteratively.\"\"\"\n"
    "    a, b = 0, 1\n    for _ in range(n):\n        a, b = b, a + b\n    return a\n\n\n"
    "if __name__ == \"__main__\":\n    for i in range(10):\n        print(i, fibonacci(i))\n",
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
CHAT_QUESTION = (
    "I have three apples and buy five more, then give two to my sister. How many apples do I "
    "have left, and how did you work it out? Please show each step of the arithmetic on its own "
    "line, then give the final answer.")
# Each model's own chat format around the same question.
CHAT_PROMPTS = {
    "smollm2": "<|im_start|>system\nYou are a helpful assistant who answers briefly.<|im_end|>\n"
               f"<|im_start|>user\n{CHAT_QUESTION}<|im_end|>\n<|im_start|>assistant\n",
    "gemma3": f"<start_of_turn>user\nYou are a helpful assistant who answers briefly.\n\n"
              f"{CHAT_QUESTION}<end_of_turn>\n<start_of_turn>model\n",
}
# Past Gemma 3's 512-token window: every plain prompt twice, then a question about the start.
LONG_PROMPT = "\n\n".join(PLAIN_PROMPTS * 2) + "\n\nQ: In the first paragraph above, what was carved by hand?\nA:"

MODELS = {
    "smollm2": {"file": "SmolLM2-135M-Instruct.Q4_1.gguf",
                "prompts": PLAIN_PROMPTS[:2] + [CHAT_PROMPTS["smollm2"]] + PLAIN_PROMPTS[2:]},
    "gemma3": {"file": "gemma-3-270m-q4_k_m.gguf",
               "prompts": PLAIN_PROMPTS[:2] + [CHAT_PROMPTS["gemma3"]] + PLAIN_PROMPTS[2:] + [LONG_PROMPT]},
    # The default model with rope scaling in its metadata (scripts/make_rope_variants.py): YaRN
    # over an original context of 256, so the long prompt runs far past it; and linear scaling.
    "smollm2_yarn": {"file": "derived/SmolLM2-135M-Instruct.Q4_1.rope-yarn.gguf",
                     "prompts": [PLAIN_PROMPTS[0], LONG_PROMPT]},
    "smollm2_linear": {"file": "derived/SmolLM2-135M-Instruct.Q4_1.rope-linear.gguf",
                       "prompts": [PLAIN_PROMPTS[0], LONG_PROMPT]},
}
N_CTX = 1024
TOP_K = 8
N_PROBES = 16
N_CONTINUE = 128
# The first positions of a prompt, before rounding differences have had many layers and keys to
# compound through: the test holds their top logits, shifted to agree on the top-1 one, to the
# reference's own spread there (or 1e-3).
EARLY_POSITIONS = 2


def centered_top_diff(row, want) -> float:
    """The largest difference over the top ids once both rows are shifted to agree on the top-1
    logit: softmax ignores a shift of the whole row, which Gemma 3's logits show at once."""
    shift = float(row[want["top_ids"][0]]) - want["top_logits"][0]
    return max(abs(float(row[i]) - shift - l) for i, l in zip(want["top_ids"], want["top_logits"]))


def spread_of_flash_attention(model: Path, cases, probes, **path) -> dict:
    """How far llama.cpp's flash-attention path (or another path: Llama() arguments that
    replace flash_attn=True, n_batch=512) is from its default path, on the same inputs."""
    settings = {"n_batch": 512, "flash_attn": True, **path}
    llm = Llama(model_path=str(model), n_ctx=N_CTX, n_threads=2, logits_all=True, seed=0, verbose=False,
                **settings)
    n = agree = 0
    max_top = max_probe = widest_gap = max_early = 0.0
    greedy_mismatches = 0
    greedy_widest_gap = 0.0
    for case in cases:
        llm.reset()
        llm.eval(case["tokens"])
        scores = np.array(llm.scores[: len(case["tokens"])], dtype=np.float32)
        for position, (row, want) in enumerate(zip(scores, case["positions"])):
            top_diff = max(abs(float(row[i]) - l) for i, l in zip(want["top_ids"], want["top_logits"]))
            max_top = max(max_top, top_diff)
            if position < EARLY_POSITIONS:
                max_early = max(max_early, centered_top_diff(row, want))
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
            "max_early_logit_diff": max_early,
            "greedy_mismatches": greedy_mismatches, "greedy_widest_gap_missed": greedy_widest_gap}


def main() -> None:
    name = sys.argv[1] if len(sys.argv) > 1 else "smollm2"
    if name not in MODELS:
        sys.exit(f"usage: make_logits_golden.py [{'|'.join(MODELS)}]")
    model = CACHE / MODELS[name]["file"]
    out = REPO / "tests" / "golden" / "logits" / f"{name}.json"
    llm = Llama(model_path=str(model), n_ctx=N_CTX, n_batch=512, n_threads=2, logits_all=True,
                seed=0, verbose=False)
    n_vocab = llm.n_vocab()
    probes = [int(i) for i in np.linspace(0, n_vocab - 1, N_PROBES).round()]
    cases = []
    for prompt in MODELS[name]["prompts"]:
        tokens = llm.tokenize(prompt.encode(), add_bos=True, special=True)
        assert 64 <= len(tokens) <= N_CTX - N_CONTINUE, (len(tokens), prompt[:40])
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
    spread = spread_of_flash_attention(model, cases, probes)
    print(f"llama.cpp flash attention vs default: {spread}", file=sys.stderr)
    digest = hashlib.sha256(model.read_bytes()).hexdigest()
    golden = {"generator": {"script": "scripts/make_logits_golden.py",
                            "llama_cpp_python": llama_cpp_version,
                            "model": model.name, "model_sha256": digest,
                            "settings": f"n_ctx {N_CTX}, n_batch 512, f16 KV cache, no flash attention, no extra buffer types"},
              "probe_ids": probes, "reference_spread": spread, "cases": cases}
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w") as f:
        json.dump(golden, f, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {out} ({out.stat().st_size} bytes)", file=sys.stderr)


if __name__ == "__main__":
    main()
