#!/usr/bin/env python3
"""Speculative decoding (n-gram prompt lookup) vs plain decoding, batch 1, greedy, on
input-grounded prompts: summarize, rewrite or extract a passage of a few hundred tokens.

    python3 bench/compare_spec.py [--model MODEL.gguf] [--threads 2] [-n 160] [-r 3]
        [--speculative-config '{"method": "ngram", "num_speculative_tokens": 5, ...}']

Each prompt is a chat turn (SmolLM2's ChatML markers) asking for one task on one passage; the
passages are sections of this repository's own documentation (300-800 tokens of real prose).
For each prompt, `lumen bench latency --speculative-config ... --prompt-file` generates through
the engine with and without speculation in the same process (one warm-up, then -r timed
repetitions each; greedy, so both produce the same tokens, up to -n or the model's end of
generation). Prints JSON: per prompt the tokens/s both ways, the speedup, the acceptance rate and
the mean accepted length; overall the geometric mean speedup and the pooled acceptance.

The machine may be shared: its other load moves tokens/s by 10-20% from minute to minute, so
compare the ratio (measured back to back) more than the absolute numbers.
"""
import argparse
import json
import math
import re
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LUMEN = REPO / "build" / "release" / "src" / "cli" / "lumen"

TASKS = {
    "summarize": "Summarize the following text in a few sentences.",
    "rewrite": "Rewrite the following text, keeping every fact, in plain words.",
    "extract": "Copy out, word for word, the sentences of the following text that mention tests.",
    "repeat": "Repeat the following text exactly.",
}


def passages():
    """Sections of docs/architecture.md, cut to 1400-3200 characters (about 300-800 tokens)."""
    text = (REPO / "docs" / "architecture.md").read_text()
    sections = re.split(r"\n## ", text)
    out = []
    for s in sections:
        body = re.sub(r"```.*?```", "", s, flags=re.S).strip()
        if len(body) >= 1400:
            out.append(body[:3200])
    return out[:3]


def run(lumen, model, threads, n_gen, reps, config, prompt_file):
    cmd = [str(lumen), "bench", "latency", "-p", "0", "-n", str(n_gen), "-r", str(reps), "-t", str(threads),
           "--json", "--prompt-file", prompt_file, "--speculative-config", config]
    if model:
        cmd += ["-m", model]
    rows = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    plain = next(r for r in rows if r.get("engine") and r["speculative"] is None)
    spec = next(r for r in rows if r.get("engine") and r["speculative"] is not None)
    return plain, spec


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lumen", default=str(LUMEN))
    ap.add_argument("--model", default="")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("-n", "--n-gen", type=int, default=160)
    ap.add_argument("-r", "--repetitions", type=int, default=3)
    ap.add_argument("--speculative-config",
                    default='{"method": "ngram", "num_speculative_tokens": 5, "prompt_lookup_max": 4, '
                            '"prompt_lookup_min": 2}')
    ap.add_argument("--tasks", default=",".join(TASKS))
    args = ap.parse_args()

    results = []
    drafts = draft_tokens = accepted = 0
    for p_index, passage in enumerate(passages()):
        for task in args.tasks.split(","):
            prompt = f"<|im_start|>user\n{TASKS[task]}\n\n{passage}<|im_end|>\n<|im_start|>assistant\n"
            with tempfile.NamedTemporaryFile("w", suffix=".txt") as f:
                f.write(prompt)
                f.flush()
                plain, spec = run(args.lumen, args.model, args.threads, args.n_gen, args.repetitions,
                                  args.speculative_config, f.name)
            s = spec["spec_decode"]
            drafts += s["num_drafts"]
            draft_tokens += s["num_draft_tokens"]
            accepted += s["num_accepted_tokens"]
            results.append({
                "passage": p_index, "task": task, "prompt_tokens": plain["n_prompt"],
                "generated_tokens": plain["n_gen"],
                "plain_tokens_per_s": plain["avg_ts"], "spec_tokens_per_s": spec["avg_ts"],
                "speedup": spec["avg_ts"] / plain["avg_ts"],
                "acceptance_rate": s["acceptance_rate"], "mean_accepted_length": s["mean_accepted_length"],
            })
            print(json.dumps(results[-1]), file=sys.stderr)
    speedups = [r["speedup"] for r in results]
    summary = {
        "threads": args.threads, "speculative_config": json.loads(args.speculative_config),
        "prompts": len(results),
        "geomean_speedup": math.exp(sum(math.log(x) for x in speedups) / len(speedups)),
        "min_speedup": min(speedups), "max_speedup": max(speedups),
        "acceptance_rate": accepted / draft_tokens if draft_tokens else 0.0,
        "mean_accepted_length": 1 + accepted / drafts if drafts else 1.0,
        "results": results,
    }
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
