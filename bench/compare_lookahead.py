#!/usr/bin/env python3
"""Lookahead decoding vs n-gram prompt lookup vs plain decoding, batch 1, greedy.

    python3 bench/compare_lookahead.py [--model MODEL.gguf] [--threads 2] [-n 128] [-r 2]
        [--config '{"method": "lookahead", ...}' ...] [--grounded-tasks summarize] [--open N]

Two prompt sets: compare_spec.py's input-grounded ones (summarize or repeat a passage of
docs/architecture.md: prompt lookup's best case) and open-ended chat requests (a story, an
explanation, a list: nothing in the prompt to copy). For each prompt and each speculative config
(by default: n-gram as a chain and as a 3-candidate token tree, lookahead W2 N3 and W4 N4 as
chains, lookahead W4 N4 verifying up to 4 pooled n-grams as a tree; --config for others, e.g.
layer_skip with and without num_candidates), `lumen bench latency --prompt-file` times plain and
speculative generation in one process (one warm-up, then -r repetitions; greedy, so both give
the same tokens, up to -n or the model's end of generation). Plain tokens/s is the mean of the
plain runs of that prompt.

Per config it also says why it pays or not: tokens per decode step (1 + the accepted
draft tokens per step) against the cost of its step relative to a plain one (the verification
rows and the window's W * (N - 1) - 1 extra rows), which the two measured rates give:
step cost = (plain t/s / spec t/s) * tokens per step, and speedup = tokens per step / step cost.
Prints JSON lines per run and a summary table (markdown) at the end.
"""
import argparse
import json
import math
import sys
import tempfile

from compare_spec import LUMEN, TASKS, passages, run

CONFIGS = [
    '{"method": "ngram", "num_speculative_tokens": 5, "prompt_lookup_max": 4, "prompt_lookup_min": 2}',
    '{"method": "ngram", "num_speculative_tokens": 5, "prompt_lookup_max": 4, "prompt_lookup_min": 2, '
    '"num_candidates": 3}',
    '{"method": "lookahead", "window_size": 2, "ngram_size": 3, "guess_set_size": 4}',
    '{"method": "lookahead", "window_size": 4, "ngram_size": 4, "guess_set_size": 4}',
    '{"method": "lookahead", "window_size": 4, "ngram_size": 4, "guess_set_size": 4, "num_candidates": 4}',
]
OPEN_ENDED = [
    "Write a short story about a robot who learns to paint.",
    "Explain how a bicycle works.",
    "List ten fruits, one per line, with a sentence about each.",
    "Give me some tips for learning to cook at home.",
    "Describe a day in the life of a lighthouse keeper.",
    "What are the benefits of regular exercise?",
]


def chat(text):
    return f"<|im_start|>user\n{text}<|im_end|>\n<|im_start|>assistant\n"


def config_label(config):
    c = json.loads(config)
    if c["method"] == "ngram":
        name = f"ngram k{c.get('num_speculative_tokens')}"
    elif c["method"] == "layer_skip":
        name = f"layer_skip {c.get('num_layers')} k{c.get('num_speculative_tokens')}"
    elif c["method"] == "draft_model":
        name = f"draft_model k{c.get('num_speculative_tokens')}"
    else:
        name = f"lookahead W{c.get('window_size')} N{c.get('ngram_size')} G{c.get('guess_set_size')}"
    candidates = c.get("num_candidates", 1)
    return name + (f" tree of {candidates}" if candidates > 1 else " chain")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lumen", default=str(LUMEN))
    ap.add_argument("--model", default="")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("-n", "--n-gen", type=int, default=128)
    ap.add_argument("-r", "--repetitions", type=int, default=2)
    ap.add_argument("--config", action="append", help="a speculative config (repeatable; replaces the defaults)")
    ap.add_argument("--grounded-tasks", default="summarize,repeat")
    ap.add_argument("--open", type=int, default=len(OPEN_ENDED), help="how many open-ended prompts")
    args = ap.parse_args()
    configs = [(config_label(c), c) for c in (args.config or CONFIGS)]

    prompts = []
    for i, passage in enumerate(passages()):
        for task in args.grounded_tasks.split(","):
            prompts.append(("grounded", f"{task} {i}", chat(f"{TASKS[task]}\n\n{passage}")))
    for i, text in enumerate(OPEN_ENDED[:args.open]):
        prompts.append(("open-ended", f"open {i}", chat(text)))

    reps = args.repetitions
    totals = {}  # (set, config) -> sums
    for kind, name, prompt in prompts:
        with tempfile.NamedTemporaryFile("w", suffix=".txt") as f:
            f.write(prompt)
            f.flush()
            plains = []
            for label, config in configs:
                plain, spec = run(args.lumen, args.model, args.threads, args.n_gen, reps, config, f.name)
                plains.append(plain["avg_ts"])
                s = spec["spec_decode"]
                # The stats cover the warm-up and every repetition: reps + 1 generations, each
                # one prefill step that samples the first token, then decode steps.
                generated = spec["n_gen"] * (reps + 1)
                decode_tokens = generated - (reps + 1)
                decode_steps = max(1, decode_tokens - s["num_accepted_tokens"])
                row = {"set": kind, "prompt": name, "config": label, "prompt_tokens": plain["n_prompt"],
                       "generated": spec["n_gen"], "plain_ts": plain["avg_ts"], "spec_ts": spec["avg_ts"],
                       "acceptance_rate": s["acceptance_rate"], "mean_accepted_length": s["mean_accepted_length"],
                       "tokens_per_step": decode_tokens / decode_steps,
                       "drafts": s["num_drafts"], "draft_tokens": s["num_draft_tokens"],
                       "accepted": s["num_accepted_tokens"], "branch_tokens": s.get("num_branch_tokens", 0),
                       "decode_steps": decode_steps}
                print(json.dumps(row), flush=True)
                t = totals.setdefault((kind, label), {"log_speedup": 0.0, "n": 0, "spec_ts": [], "plain_ts": [],
                                                      "drafts": 0, "draft_tokens": 0, "accepted": 0,
                                                      "decode_tokens": 0, "decode_steps": 0})
                t["spec_ts"].append(spec["avg_ts"])
                t["plain_ts"].append(plain["avg_ts"])
                t["log_speedup"] += math.log(spec["avg_ts"] / plain["avg_ts"])
                t["n"] += 1
                for k in ("drafts", "draft_tokens", "accepted", "decode_steps"):
                    t[k] += row[k]
                t["decode_tokens"] += decode_tokens
    print("\n| prompts | config | plain t/s (mean) | spec t/s (mean) | speedup (geomean of per-prompt ratios) | "
          "acceptance | mean accepted length | tokens per step | step cost vs plain |")
    print("|---|---|---|---|---|---|---|---|---|")
    for (kind, label), t in totals.items():
        speedup = math.exp(t["log_speedup"] / t["n"])
        tau = t["decode_tokens"] / t["decode_steps"]
        rate = t["accepted"] / t["draft_tokens"] if t["draft_tokens"] else 0.0
        length = 1 + t["accepted"] / t["drafts"] if t["drafts"] else 1.0
        print(f"| {kind} ({t['n']}) | {label} | {sum(t['plain_ts']) / t['n']:.1f} | {sum(t['spec_ts']) / t['n']:.1f} | "
              f"{speedup:.2f}x | {rate:.2f} | {length:.2f} | {tau:.2f} | {tau / speedup:.2f}x |")


if __name__ == "__main__":
    sys.exit(main())
