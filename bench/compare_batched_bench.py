#!/usr/bin/env python3
"""Lumen's serving throughput vs llama.cpp's llama-batched-bench, side by side in one run.

    python3 bench/compare_batched_bench.py --llama-batched-bench /path/to/llama-batched-bench \
        [--model MODEL.gguf] [--parallel 1,32] [--input-len 128] [--output-len 128] [-t 2]

The same workload for both: P sequences of random prompt tokens of one length, each generating
the same number of tokens (no early stop), all submitted at once. llama-batched-bench prefills
all prompts in one batch, then decodes the P sequences together step by step; Lumen runs them
through its engine (`lumen bench throughput`, continuous batching, chunked prefill, paged KV).
Compared: total tokens/s ((P x input + P x output) / wall time) and output tokens/s
(P x output / wall time). The peer binary is built by hand outside this repository; this script
only runs it. Prints JSON, and a Markdown table with --markdown.
"""
import argparse
import json
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LUMEN = REPO / "build" / "release" / "src" / "cli" / "lumen"
DEFAULT_MODEL = Path.home() / ".cache" / "lumen" / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"


def lumen_run(args, parallel):
    cmd = [str(args.lumen), "bench", "throughput", "-m", str(args.model), "-t", str(args.threads),
           "--num-prompts", str(parallel), "--input-len", str(args.input_len),
           "--output-len", str(args.output_len), "--max-num-seqs", str(max(parallel, 1)),
           "--max-num-batched-tokens", str(args.max_num_batched_tokens), "--json"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out[out.index("{"):])


def peer_run(args, parallel):
    ctx = parallel * (args.input_len + args.output_len) + 16
    cmd = [args.llama_batched_bench, "-m", str(args.model), "-t", str(args.threads),
           "-tb", str(args.threads), "-c", str(ctx), "-b", "2048", "-ub", "512",
           "-npp", str(args.input_len), "-ntg", str(args.output_len), "-npl", str(parallel),
           "--output-format", "jsonl"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    for line in (out.stdout + out.stderr).splitlines():
        line = line.strip()
        if line.startswith("{") and '"speed"' in line:
            return json.loads(line)
    raise RuntimeError("no result line from llama-batched-bench")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--llama-batched-bench", required=True, help="path of the peer's binary")
    ap.add_argument("--lumen", default=str(LUMEN))
    ap.add_argument("--model", default=str(DEFAULT_MODEL))
    ap.add_argument("--parallel", default="1,32")
    ap.add_argument("--input-len", type=int, default=128)
    ap.add_argument("--output-len", type=int, default=128)
    ap.add_argument("--max-num-batched-tokens", type=int, default=512)
    ap.add_argument("-t", "--threads", type=int, default=2)
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()

    rows = []
    for parallel in [int(p) for p in args.parallel.split(",")]:
        ours = lumen_run(args, parallel)
        peer = peer_run(args, parallel)
        peer_output = parallel * args.output_len / peer["t"]
        rows.append({
            "parallel": parallel,
            "input_len": args.input_len,
            "output_len": args.output_len,
            "threads": args.threads,
            "lumen_total_tps": ours["total_tokens_per_s"],
            "lumen_output_tps": ours["output_tokens_per_s"],
            "lumen_kv_unused_in_allocated_blocks": ours["kv_unused_in_allocated_blocks"],
            "peer_total_tps": peer["speed"],
            "peer_output_tps": peer_output,
            "peer_decode_tps": peer["speed_tg"],
            "ratio_total": ours["total_tokens_per_s"] / peer["speed"],
            "ratio_output": ours["output_tokens_per_s"] / peer_output,
        })
    print(json.dumps(rows, indent=2))
    if args.markdown:
        print("\n| parallel | in/out | Lumen total t/s | llama.cpp total t/s | ratio | Lumen output t/s |"
              " llama.cpp output t/s | KV unused in allocated blocks |")
        print("|---|---|---|---|---|---|---|---|")
        for r in rows:
            print(f"| {r['parallel']} | {r['input_len']}/{r['output_len']} | {r['lumen_total_tps']:.1f} |"
                  f" {r['peer_total_tps']:.1f} | {r['ratio_total']:.2f} | {r['lumen_output_tps']:.1f} |"
                  f" {r['peer_output_tps']:.1f} | {100 * r['lumen_kv_unused_in_allocated_blocks']:.2f}% |")


if __name__ == "__main__":
    main()
