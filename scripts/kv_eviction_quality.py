#!/usr/bin/env python3
"""Quality of KV eviction at equal KV budgets: a pass-key retrieval test.

A number (the pass key) is placed at several depths of a long filler text and asked for at the
end; each method (the full cache, StreamingLLM's sinks + window, SnapKV, H2O) answers greedily
through `lumen run`, at each budget. Prints, and writes as JSON, the accuracy per method, budget
and depth, with each run's KV memory per sequence (the positions kept times the model's K/V
bytes per position, f16) and its prompt and generation speed as `lumen run` reports them.

A slow measurement, not a CI test (minutes per model on two cores):
  scripts/kv_eviction_quality.py --lumen build/release/src/cli/lumen \
      --model ~/.cache/lumen/models/SmolLM2-135M-Instruct.Q4_1.gguf --context 2048 --json out.json
"""
import argparse
import json
import random
import re
import subprocess
import sys
import tempfile

import gguf

FILLER = ("The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again. ")


def kv_bytes_per_position(model_path):
    """K and V bytes of one position in an f16 cache, over every layer."""
    reader = gguf.GGUFReader(model_path)
    arch = bytes(reader.fields["general.architecture"].parts[-1]).decode()

    def value(key):
        field = reader.fields.get(f"{arch}.{key}")
        return None if field is None else int(field.parts[-1][0])

    layers, heads, kv_heads = value("block_count"), value("attention.head_count"), value("attention.head_count_kv")
    head_dim = value("attention.key_length") or value("embedding_length") // heads
    return layers * (kv_heads or heads) * head_dim * 2 * 2


def prompt_with_key(n_filler, depth, key, offset=0):
    """offset (0..4) starts the filler at another of its five sentences, so that trials of one cell
    differ in the tokens around the key as well as in the key."""
    sentences = FILLER.split(". ")[:-1]
    shifted = ". ".join(sentences[offset:] + sentences[:offset]) + ". "
    before = int(n_filler * depth)
    needle = f"The pass key is {key}. Remember it. {key} is the pass key. "
    return ("There is important information hidden inside a lot of irrelevant text. Find it and memorize it. "
            + shifted * before + needle + shifted * (n_filler - before) + "What is the pass key? The pass key is")


def run(lumen, model, prompt, spec, context):
    with tempfile.NamedTemporaryFile("w", suffix=".txt") as f:
        f.write(prompt)
        f.flush()
        # Every layer keeps every position (Gemma 3's sliding-window layers too): the methods
        # evict from one cache, and the full cache is the same one.
        cmd = [lumen, "run", "-m", model, "-f", f.name, "-n", "8", "--temp", "0", "-c", str(context),
               "--keep-out-of-window-kv"]
        if spec:
            cmd += ["--kv-eviction", spec]
        out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {out.stderr[-2000:]}")
    speeds = dict(re.findall(r"^(prompt|generation): .*?([\d.]+) tokens/s", out.stderr, re.M))
    tokens = re.search(r"^prompt: (\d+) tokens", out.stderr, re.M)
    return out.stdout, {k: float(v) for k, v in speeds.items()}, int(tokens.group(1)) if tokens else None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lumen", default="build/release/src/cli/lumen")
    ap.add_argument("--model", required=True)
    ap.add_argument("--context", type=int, default=2048, help="max model len; the prompt fills most of it")
    ap.add_argument("--budgets", default="128,256,512")
    ap.add_argument("--depths", default="0.1,0.3,0.5,0.7,0.9")
    ap.add_argument("--trials", type=int, default=5,
                    help="pass keys per depth (each with its own key and filler offset)")
    ap.add_argument("--methods", default="full,streaming,snapkv,h2o")
    ap.add_argument("--block-size", type=int, default=16, help="lumen run's KV block (StreamingLLM's sink block)")
    ap.add_argument("--json")
    a = ap.parse_args()

    per_position = kv_bytes_per_position(a.model)
    # About 22 tokens per filler sentence group: fill ~85% of the context.
    n_filler = int(a.context * 0.85 / 22)
    depths = [float(d) for d in a.depths.split(",")]
    budgets = [int(b) for b in a.budgets.split(",")]
    rng = random.Random(7)
    keys = {(d, t): rng.randint(10000, 99999) for d in depths for t in range(a.trials)}
    rows = []

    def spec_of(method, budget):
        if method == "full":
            return None
        if method == "streaming":
            return f"sink:4,window:{budget - a.block_size}"  # the sinks' block + the window
        if method == "snapkv":
            return f"snapkv:budget={budget}"
        return f"h2o:budget={budget}"

    for method in a.methods.split(","):
        for budget in ([None] if method == "full" else budgets):
            for depth in depths:
                hits, speeds, n_prompt = 0, [], None
                for t in range(a.trials):
                    key = keys[(depth, t)]
                    text, speed, n_prompt = run(a.lumen, a.model, prompt_with_key(n_filler, depth, key, t % 5),
                                                spec_of(method, budget), a.context)
                    hits += str(key) in text
                    speeds.append(speed)
                kept = n_prompt if budget is None else budget
                row = {"method": method, "budget": budget, "depth": depth, "hits": hits, "trials": a.trials,
                       "accuracy": hits / a.trials,
                       "prompt_tokens": n_prompt, "kv_bytes_per_sequence": kept * per_position,
                       "prompt_tok_s": sum(s.get("prompt", 0) for s in speeds) / len(speeds),
                       "generation_tok_s": sum(s.get("generation", 0) for s in speeds) / len(speeds)}
                rows.append(row)
                print(json.dumps(row), flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"model": a.model, "context": a.context, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
