#!/usr/bin/env python3
"""Lumen vs llama.cpp's llama-bench, side by side in one run, on the same model and threads.

    python3 bench/compare_llama_bench.py --llama-bench /path/to/llama-bench \
        --model MODEL.gguf [--model ...] [--threads 1,2] [-p 512] [-n 128] [-r 5]

Both tools use the same method (random tokens, one warm-up, then timed repetitions). The peer
binary is built by hand outside this repository; this script only runs it.

On a shared machine memory bandwidth drifts by 10-20% from minute to minute, so the two tools
are interleaved: --rounds K runs each tool K times (-r repetitions each), alternating which goes
first, and pools every repetition's tokens/s. The table gives the median and the mean ± standard
deviation of the pooled samples; the ratio is of the medians.

Also measures the machine's memory read bandwidth (numpy, large buffer) before and after, so
generation speed can be compared with its bound: weight bytes read per token / time per token
(the larger of the two measurements is used). Prints JSON (and a Markdown table with --markdown).
"""
import argparse
import json
import statistics
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


def test_key(entry):
    return (entry["n_threads"], entry["n_prompt"], entry["n_gen"])


def summary(samples):
    return {"median": round(statistics.median(samples), 2), "mean": round(statistics.mean(samples), 2),
            "stddev": round(statistics.stdev(samples), 2) if len(samples) > 1 else 0.0,
            "samples": len(samples)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--llama-bench", required=True, help="path of the peer's llama-bench binary")
    ap.add_argument("--model", action="append", required=True)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("-p", default="512")
    ap.add_argument("-n", default="128")
    ap.add_argument("-r", default="5", help="repetitions per tool and round")
    ap.add_argument("--rounds", type=int, default=3, help="alternating runs of each tool")
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()

    bandwidths = [read_bandwidth_gbs()]
    rows = []
    for model in args.model:
        common = ["-m", model, "-t", args.threads, "-p", args.p, "-n", args.n, "-r", args.r]
        tools = {"lumen": [str(LUMEN), "bench", "latency", *common, "--json"],
                 "llama_cpp": [args.llama_bench, *common, "-o", "json"]}
        samples = {"lumen": {}, "llama_cpp": {}}
        info = {}
        for round_index in range(args.rounds):
            order = ["lumen", "llama_cpp"] if round_index % 2 == 0 else ["llama_cpp", "lumen"]
            for tool in order:
                for entry in run_json(tools[tool]):
                    samples[tool].setdefault(test_key(entry), []).extend(entry["samples_ts"])
                    if tool == "lumen":
                        info[test_key(entry)] = entry
        for key, entry in info.items():
            threads, n_prompt, n_gen = key
            ours, peer = summary(samples["lumen"][key]), summary(samples["llama_cpp"][key])
            rows.append({"model": Path(model).name, "model_type": entry["model_type"],
                         "model_size": entry["model_size"],
                         "test": f"pp{n_prompt}" if n_prompt else f"tg{n_gen}", "threads": threads,
                         "lumen": ours, "llama_cpp": peer,
                         "ratio": round(ours["median"] / peer["median"], 3)})
    bandwidths.append(read_bandwidth_gbs())
    bandwidth = max(bandwidths)
    for row in rows:
        if row["test"].startswith("tg"):
            # Bytes of weights read per generated token over the measured read bandwidth.
            row["lumen_bandwidth_share"] = round(row["lumen"]["median"] * row["model_size"] / 1e9 / bandwidth, 3)
    result = {"read_bandwidth_gbs": [round(b, 2) for b in bandwidths], "rounds": args.rounds,
              "repetitions": int(args.r), "rows": rows}
    print(json.dumps(result, indent=2))
    if args.markdown:
        print(f"\nread bandwidth: {bandwidths[0]:.1f} GB/s before, {bandwidths[1]:.1f} GB/s after\n")
        print("| model | test | threads | Lumen t/s median (mean ± sd) | llama.cpp t/s median (mean ± sd) "
              "| ratio of medians | share of bandwidth bound |")
        print("|---|---|---|---|---|---|---|")
        for r in rows:
            share = r.get("lumen_bandwidth_share", "")
            o, p = r["lumen"], r["llama_cpp"]
            print(f"| {r['model_type']} | {r['test']} | {r['threads']} "
                  f"| {o['median']} ({o['mean']} ± {o['stddev']}) | {p['median']} ({p['mean']} ± {p['stddev']}) "
                  f"| {r['ratio']} | {share} |")


if __name__ == "__main__":
    sys.exit(main())
