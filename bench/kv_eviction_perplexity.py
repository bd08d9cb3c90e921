#!/usr/bin/env python3
"""Perplexity under KV eviction at equal budgets: the full cache, StreamingLLM, SnapKV and H2O.

Runs `lumen perplexity --forced-decode` (each window's first half the prompt, its second half fed
token by token as forced tokens, so eviction acts as in a generation) once per method and budget,
plus the one-pass perplexity over the same windows as the peer the no-eviction run must equal.
Prints one JSON line per run and writes them all with --json.

A slow measurement, not a CI test (minutes per model on two cores):
  bench/kv_eviction_perplexity.py --lumen build/release/src/cli/lumen \\
      --model ~/.cache/lumen/models/SmolLM2-135M-Instruct.Q4_1.gguf \\
      --text tests/golden/perplexity/gpl-3.0.txt --context 1024 --chunks 4 --json out.json
"""
import argparse
import json
import subprocess
import sys


def spec_of(method, budget, block_size):
    if method == "streaming":
        return f"sink:4,window:{budget - block_size}"  # the sinks' block + the window
    if method == "snapkv":
        return f"snapkv:budget={budget}"
    return f"h2o:budget={budget}"


def perplexity(a, extra):
    cmd = [a.lumen, "perplexity", "-m", a.model, "-f", a.text, "-c", str(a.context), "--chunks", str(a.chunks),
           "-t", str(a.threads), "--json", *extra]
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {out.stderr[-2000:]}")
    r = json.loads(out.stdout)
    return {"command": " ".join(cmd[1:]), "ppl": r["ppl"], "ppl_error": r["ppl_error"],
            "tokens_scored": r["tokens_scored"], "seconds": r["seconds"],
            "tokens_per_second": r["tokens_per_second"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lumen", default="build/release/src/cli/lumen")
    ap.add_argument("--model", required=True)
    ap.add_argument("--text", default="tests/golden/perplexity/gpl-3.0.txt")
    ap.add_argument("--context", type=int, default=1024)
    ap.add_argument("--chunks", type=int, default=4)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--budgets", default="128,256,512")
    ap.add_argument("--methods", default="streaming,snapkv,h2o")
    ap.add_argument("--block-size", type=int, default=16, help="the engine's KV block (StreamingLLM's sink block)")
    ap.add_argument("--json")
    a = ap.parse_args()

    rows = []

    def record(row):
        rows.append(row)
        print(json.dumps(row), flush=True)

    record({"method": "one-pass", "budget": None, **perplexity(a, [])})
    record({"method": "full", "budget": None, **perplexity(a, ["--forced-decode"])})
    for budget in (int(b) for b in a.budgets.split(",")):
        for method in a.methods.split(","):
            spec = spec_of(method, budget, a.block_size)
            record({"method": method, "budget": budget, **perplexity(a, ["--forced-decode", "--kv-eviction", spec])})
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"model": a.model, "text": a.text, "context": a.context, "chunks": a.chunks, "rows": rows}, f,
                      indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
