#!/usr/bin/env python3
"""Lumen vs llama-bench peers (llama.cpp, ik_llama.cpp), side by side in one run, on the same
model and threads.

    python3 bench/compare_llama_bench.py --llama-bench /path/to/llama-bench \
        [--peer ik_llama=/path/to/ik/llama-bench ...] \
        --model MODEL.gguf [--model ...] [--threads 1,2] [-p 512] [-n 128] [-r 5]

Every tool uses the same method (random tokens, one warm-up, then timed repetitions). The peer
binaries are built by hand outside this repository; this script only runs them. --llama-bench
PATH is short for --peer llama_cpp=PATH.

On a shared machine memory bandwidth drifts by 10-20% from minute to minute, so the tools are
interleaved: --rounds K runs each tool K times (-r repetitions each), rotating which goes first,
and pools every repetition's tokens/s. The table gives the median and the mean ± standard
deviation of the pooled samples; each ratio is Lumen's median over that peer's.

Also measures the machine's memory read bandwidth (numpy, large buffer) before and after, so
generation speed can be compared with its bound: weight bytes read per token / time per token
(the larger of the two measurements is used). A second share adds the context a token moves
(bench/context_bytes.py: a Transformer's K/V reads, a Mamba 2 model's state read and written), so
a recurrent model's large state and a Transformer's cache are counted alike; empty where the
architecture's context traffic is not modelled. Prints JSON (and a Markdown table with
--markdown).
"""
import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from context_bytes import context_bytes_per_token, weight_bytes_per_token  # noqa: E402

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


def parse_peers(args) -> dict:
    peers = {}
    if args.llama_bench:
        peers["llama_cpp"] = args.llama_bench
    for spec in args.peer:
        name, sep, path = spec.partition("=")
        if not sep or not name or not path:
            sys.exit(f"--peer wants NAME=PATH, got {spec!r}")
        peers[name] = path
    if not peers:
        sys.exit("give at least one peer: --llama-bench PATH or --peer NAME=PATH")
    return peers


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--llama-bench", help="path of llama.cpp's llama-bench (peer llama_cpp)")
    ap.add_argument("--peer", action="append", default=[], help="NAME=PATH of another llama-bench")
    ap.add_argument("--model", action="append", required=True)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("-p", default="512")
    ap.add_argument("-n", default="128")
    ap.add_argument("-r", default="5", help="repetitions per tool and round")
    ap.add_argument("--rounds", type=int, default=3, help="runs of each tool, first tool rotating")
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()
    peers = parse_peers(args)

    bandwidths = [read_bandwidth_gbs()]
    rows = []
    for model in args.model:
        common = ["-m", model, "-t", args.threads, "-p", args.p, "-n", args.n, "-r", args.r]
        tools = {"lumen": [str(LUMEN), "bench", "latency", *common, "--json"]}
        tools.update({name: [path, *common, "-o", "json"] for name, path in peers.items()})
        names = list(tools)
        samples = {name: {} for name in names}
        info = {}
        for round_index in range(args.rounds):
            shift = round_index % len(names)
            for tool in names[shift:] + names[:shift]:
                for entry in run_json(tools[tool]):
                    samples[tool].setdefault(test_key(entry), []).extend(entry["samples_ts"])
                    if tool == "lumen":
                        info[test_key(entry)] = entry
        for key, entry in info.items():
            threads, n_prompt, n_gen = key
            ours = summary(samples["lumen"][key])
            row = {"model": Path(model).name, "path": model, "model_type": entry["model_type"],
                   "model_size": entry["model_size"],
                   "test": f"pp{n_prompt}" if n_prompt else f"tg{n_gen}", "threads": threads,
                   "lumen": ours, "ratios": {}}
            for name in peers:
                row[name] = summary(samples[name][key])
                row["ratios"][name] = round(ours["median"] / row[name]["median"], 3)
            rows.append(row)
    bandwidths.append(read_bandwidth_gbs())
    bandwidth = max(bandwidths)
    for row in rows:
        if row["test"].startswith("tg"):
            # Bytes of weights read per generated token (a MoE model's: its chosen experts only)
            # over the measured read bandwidth.
            weights = weight_bytes_per_token(row["path"])
            row["weight_bytes_per_token"] = weights
            row["lumen_bandwidth_share"] = round(row["lumen"]["median"] * weights / 1e9 / bandwidth, 3)
            context = context_bytes_per_token(row["path"], int(row["test"][2:]))
            if context is not None:
                row["context_bytes_per_token"] = context
                row["lumen_bandwidth_share_with_context"] = round(
                    row["lumen"]["median"] * (weights + context) / 1e9 / bandwidth, 3)
    result = {"read_bandwidth_gbs": [round(b, 2) for b in bandwidths], "rounds": args.rounds,
              "repetitions": int(args.r), "peers": peers, "rows": rows}
    print(json.dumps(result, indent=2))
    if args.markdown:
        print(f"\nread bandwidth: {bandwidths[0]:.1f} GB/s before, {bandwidths[1]:.1f} GB/s after\n")
        print("| model | test | threads | Lumen t/s median (mean ± sd) | "
              + " | ".join(f"{n} t/s median (mean ± sd)" for n in peers) + " | "
              + " | ".join(f"Lumen / {n}" for n in peers) + " | share of bandwidth bound | with context |")
        print("|---|---|---|---|" + "---|" * (2 * len(peers)) + "---|---|")
        for r in rows:
            cells = [f"{r[n]['median']} ({r[n]['mean']} ± {r[n]['stddev']})" for n in ["lumen", *peers]]
            ratios = [str(r["ratios"][n]) for n in peers]
            print(f"| {r['model_type']} | {r['test']} | {r['threads']} | " + " | ".join(cells + ratios)
                  + f" | {r.get('lumen_bandwidth_share', '')} | {r.get('lumen_bandwidth_share_with_context', '')} |")


if __name__ == "__main__":
    sys.exit(main())
