#!/usr/bin/env python3
"""ITL-aware scheduling: `lumen serve` with and without `--max-itl-ms`, under the same load.

    python3 bench/compare_itl.py [--lumen build/release/src/cli/lumen] [--max-itl-ms 40[,80...]] \
        [--concurrency 1,4,16] [--num-prompts 32] [--num-prompts-c1 8] [--input-len 512] \
        [--output-len 128] [--rounds 2] [-t 2] [--out-dir /tmp/lumen-itl-bench]

Both servers run at once on loopback (the idle one costs nothing) with the same model, threads
and context as bench/compare_serve.py's lumen; each gets a warm-up, then every round goes over
the concurrency levels and at each runs the same `lumen bench serve` workload against each mode
in turn, the order rotating from run to run, so a change in the machine's
other load falls on both. The seed changes with the level and the round (no run finds its
prompts in a prefix cache left by an earlier one) and is the same for both modes. Prints a
Markdown table of p50/p99 TTFT and ITL per mode, level and round, and writes every result JSON.
"""
import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from compare_serve import DEFAULT_MODEL, LUMEN, Server, bench, free_port, load_average  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lumen", default=str(LUMEN))
    ap.add_argument("--model", default=str(DEFAULT_MODEL))
    ap.add_argument("--max-itl-ms", default="40", help="one target, or several (comma-separated): a server each")
    ap.add_argument("--concurrency", default="1,4,16")
    ap.add_argument("--num-prompts", type=int, default=32)
    ap.add_argument("--num-prompts-c1", type=int, default=8, help="requests at concurrency 1")
    ap.add_argument("--input-len", type=int, default=512)
    ap.add_argument("--output-len", type=int, default=128)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--parallel", type=int, default=16, help="--max-num-seqs")
    ap.add_argument("--slot-ctx", type=int, default=2048, help="--max-model-len")
    ap.add_argument("-t", "--threads", type=int, default=2)
    ap.add_argument("--warmup", type=int, default=4, help="warm-up requests per server, not recorded")
    ap.add_argument("--out-dir", default="/tmp/lumen-itl-bench")
    args = ap.parse_args()
    levels = [int(c) for c in args.concurrency.split(",")]
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)

    def command(port, extra):
        return [str(args.lumen), "serve", "-m", str(args.model), "--port", str(port), "-t", str(args.threads),
                "--max-num-seqs", str(args.parallel), "--max-model-len", str(args.slot_ctx),
                "--kv-cache-memory", "4G", *extra]

    modes = {"default": []}
    for ms in args.max_itl_ms.split(","):
        modes[f"itl-{float(ms):g}ms"] = ["--max-itl-ms", f"{float(ms):g}"]
    summary = {"commands": {}, "load_average": {}, "results": []}
    servers = []
    try:
        for name, extra in modes.items():
            port = free_port()
            summary["commands"][name] = command(port, extra)
            servers.append(Server(name, summary["commands"][name], port, out / f"{name}.log"))
        for s in servers:
            bench(args, s, min(args.warmup, args.parallel), args.warmup, 999, None)
        summary["load_average"]["start"] = load_average()
        for r in range(args.rounds):
            for c in levels:
                n = args.num_prompts_c1 if c == 1 else args.num_prompts
                # The order rotates with the round and the level, so no mode always goes first.
                k = (r + levels.index(c)) % len(servers)
                order = servers[k:] + servers[:k]
                for s in order:
                    path = out / f"{s.name}-c{c}-r{r}.json"
                    res = bench(args, s, c, n, 1000 + 100 * r + c, path)
                    summary["results"].append({"mode": s.name, "concurrency": c, "round": r, "file": str(path),
                                               "ttft_ms": res["ttft_ms"], "itl_ms": res["itl_ms"],
                                               "output_throughput": res["output_throughput"]})
                summary["load_average"][f"round {r} after c={c}"] = load_average()
    finally:
        for s in servers:
            s.stop()
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    lines = ["| mode | concurrency | round | TTFT p50 ms | TTFT p99 ms | ITL p50 ms | ITL p99 ms | output tok/s |",
             "|---|---|---|---|---|---|---|---|"]
    for c in levels:
        for name in modes:
            for e in summary["results"]:
                if e["mode"] == name and e["concurrency"] == c:
                    lines.append(f"| {name} | {c} | {e['round']} | {e['ttft_ms']['p50']:.0f} | {e['ttft_ms']['p99']:.0f} "
                                 f"| {e['itl_ms']['p50']:.1f} | {e['itl_ms']['p99']:.1f} | {e['output_throughput']:.1f} |")
    table = "\n".join(lines) + "\n"
    (out / "table.md").write_text(table)
    print(table)
    print(f"load average (1, 5, 15 min): {json.dumps(summary['load_average'])}")


if __name__ == "__main__":
    main()
