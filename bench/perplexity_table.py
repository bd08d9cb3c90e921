#!/usr/bin/env python3
"""Perplexity for every pair of weight type and KV-cache type: the table issue 19 asks for, so a
user sees what each choice of `lumen quantize TYPE` and `--kv-cache-dtype` costs together.

    python3 bench/perplexity_table.py --lumen build/release/src/cli/lumen --model F16.gguf \\
        --weights F16,Q8_0,Q6_K,Q5_K_M,Q4_K_M,Q3_K_M,Q2_K --kv f16,q8_0,fp8_e4m3,q4_0 \\
        --text tests/golden/perplexity/gpl-3.0.txt -c 512 --json table.json

`--model` is quantized to each weight type with `lumen quantize` into --work (default: a
temporary directory; `--allow-requantize` is passed, so a quantized input works too, with the
warning lumen prints). `--weights` may name `same` for the input file as it is. Every run is
`lumen perplexity -c C -t T --kv-cache-dtype KV --json`; add `--no-rotation` to measure the
quantized caches without their Hadamard rotation. Prints a Markdown table (perplexity and its
change against the first weight type with the first KV type) and writes the numbers as JSON.
"""
import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def run(cmd: list) -> str:
    result = subprocess.run([str(c) for c in cmd], capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"failed: {' '.join(map(str, cmd))}\n{result.stderr}")
    return result.stdout


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lumen", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--weights", required=True, help="comma-separated lumen quantize types, or `same`")
    ap.add_argument("--kv", default="f16,q8_0,fp8_e4m3,q4_0")
    ap.add_argument("--text", required=True)
    ap.add_argument("-c", type=int, default=512)
    ap.add_argument("--chunks", type=int, default=0, help="0: the whole text")
    ap.add_argument("-t", type=int, default=2)
    ap.add_argument("--no-rotation", action="store_true")
    ap.add_argument("--work", help="where the quantized files go (kept)")
    ap.add_argument("--json", help="write the numbers here")
    args = ap.parse_args()

    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="lumen_ppl_table_"))
    work.mkdir(parents=True, exist_ok=True)
    rows = []
    for weight in args.weights.split(","):
        if weight == "same":
            path = Path(args.model)
        else:
            path = work / f"{Path(args.model).stem}.{weight}.gguf"
            if not path.exists():
                run([args.lumen, "quantize", args.model, path, weight, "--allow-requantize", "-t", args.t])
        size = path.stat().st_size
        for kv in args.kv.split(","):
            cmd = [args.lumen, "perplexity", "-m", path, "-f", args.text, "-c", args.c, "-t", args.t,
                   "--kv-cache-dtype", kv, "--json"]
            if args.chunks:
                cmd += ["--chunks", args.chunks]
            if args.no_rotation:
                cmd.append("--no-kv-cache-rotation")
            start = time.monotonic()
            got = json.loads(run(cmd))
            rows.append({"weights": weight, "file_bytes": size, "kv_cache_dtype": kv,
                         "kv_cache_rotation": got.get("kv_cache_rotation"), "ppl": got["ppl"],
                         "ppl_error": got.get("ppl_error"), "tokens_scored": got["tokens_scored"],
                         "seconds": round(time.monotonic() - start, 2)})
            print(f"{weight:8} {kv:9} {got['ppl']:.4f}", file=sys.stderr)

    kvs = args.kv.split(",")
    base = rows[0]["ppl"]
    print(f"| weights | file MiB | " + " | ".join(f"KV {kv}" for kv in kvs) + " |")
    print("|---|---|" + "---|" * len(kvs))
    for weight in args.weights.split(","):
        mine = [r for r in rows if r["weights"] == weight]
        cells = [f"{r['ppl']:.4f} ({(r['ppl'] / base - 1) * 100:+.1f}%)" for r in mine]
        print(f"| {weight} | {mine[0]['file_bytes'] / 2**20:.1f} | " + " | ".join(cells) + " |")
    if args.json:
        Path(args.json).write_text(json.dumps({"text": args.text, "n_ctx": args.c, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
