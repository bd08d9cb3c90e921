#!/usr/bin/env python3
"""Lumen vs llama.cpp's llama-bench, side by side in one run, on the same model and threads.

    python3 bench/compare_llama_bench.py --llama-bench /path/to/llama-bench \
        --model MODEL.gguf [--model ...] [--threads 1,2] [-p 512] [-n 128] [-r 5]

Both tools use the same method (random tokens, one warm-up, mean and standard deviation of
tokens/s over the repetitions). The peer binary is built by hand outside this repository; this
script only runs it. Also measures the machine's memory read bandwidth (numpy, large buffer) so
generation speed can be compared with its bound: weight bytes read per token / time per token.
Prints JSON (and a Markdown table with --markdown).
"""
import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
LUMEN = REPO / "build" / "release" / "src" / "cli" / "lumen"


def read_bandwidth_gbs(seconds: float = 2.0) -> float:
    """Single-process read bandwidth: summing a 1 GiB buffer that cannot fit in any cache."""
    buf = np.ones(1 << 27, dtype=np.float64)  # 1 GiB
    buf.sum()
    best = 0.0
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        t0 = time.perf_counter()
        buf.sum()
        best = max(best, buf.nbytes / (time.perf_counter() - t0) / 1e9)
    return best


def run_json(cmd):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out[out.index("["):])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--llama-bench", required=True, help="path of the peer's llama-bench binary")
    ap.add_argument("--model", action="append", required=True)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("-p", default="512")
    ap.add_argument("-n", default="128")
    ap.add_argument("-r", default="5")
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()

    bandwidth = read_bandwidth_gbs()
    rows = []
    for model in args.model:
        common = ["-m", model, "-t", args.threads, "-p", args.p, "-n", args.n, "-r", args.r]
        ours = run_json([str(LUMEN), "bench", "latency", *common, "--json"])
        peer = run_json([args.llama_bench, *common, "-o", "json"])
        weights = Path(model).stat().st_size
        for o in ours:
            p = next(x for x in peer if x["n_threads"] == o["n_threads"] and
                     x["n_prompt"] == o["n_prompt"] and x["n_gen"] == o["n_gen"])
            test = f"pp{o['n_prompt']}" if o["n_prompt"] else f"tg{o['n_gen']}"
            row = {"model": Path(model).name, "model_type": o["model_type"], "test": test,
                   "threads": o["n_threads"], "lumen_ts": round(o["avg_ts"], 2),
                   "lumen_stddev": round(o["stddev_ts"], 2), "llama_cpp_ts": round(p["avg_ts"], 2),
                   "llama_cpp_stddev": round(p["stddev_ts"], 2),
                   "ratio": round(o["avg_ts"] / p["avg_ts"], 3)}
            if o["n_gen"]:
                # Bytes of weights read per generated token over the measured read bandwidth.
                row["lumen_bandwidth_share"] = round(o["avg_ts"] * o["model_size"] / 1e9 / bandwidth, 3)
            rows.append(row)
    result = {"read_bandwidth_gbs": round(bandwidth, 2), "rows": rows}
    print(json.dumps(result, indent=2))
    if args.markdown:
        print(f"\nread bandwidth: {bandwidth:.1f} GB/s\n")
        print("| model | test | threads | Lumen t/s | llama.cpp t/s | ratio | share of bandwidth bound |")
        print("|---|---|---|---|---|---|---|")
        for r in rows:
            share = r.get("lumen_bandwidth_share", "")
            print(f"| {r['model_type']} | {r['test']} | {r['threads']} | {r['lumen_ts']} ± {r['lumen_stddev']} "
                  f"| {r['llama_cpp_ts']} ± {r['llama_cpp_stddev']} | {r['ratio']} | {share} |")


if __name__ == "__main__":
    sys.exit(main())
