#!/usr/bin/env python3
"""Two (or more) Lumen builds' `bench profile` of the same step, interleaved, per op.

    python3 bench/compare_profile_builds.py --build before=/path/to/lumen --build after=build/release/src/cli/lumen \
        --model MODEL.gguf [--threads 1] [--rounds 3] [-r 10] [--markdown]

Made to measure a kernel change on a shared machine: each round runs every build once, rotating
which goes first, so load that drifts from minute to minute falls on all of them alike. Per build
it pools the rounds and reports medians of the step time, each op's milliseconds and share of the
step, and the profile's two bandwidth-bound shares (weights only, and with the step's context
traffic: K/V read, recurrent state read and written). A decode step of one sequence
(--prefill 0 --decode-batch 1) unless --prefill is given. Prints JSON (and Markdown tables).
"""
import argparse
import json
import statistics
import subprocess


def profile(lumen, args):
    cmd = [lumen, "bench", "profile", "-m", args.model, "-t", str(args.threads), "--prefill", str(args.prefill),
           "--decode-batch", str(args.decode_batch), "-r", str(args.repetitions), "--json"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    run = json.loads(out[out.index("{"):])["runs"][0]
    return run["ceilings"]["read_gbps"], run["steps"][0]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", action="append", required=True, help="NAME=PATH of a lumen binary")
    p.add_argument("--model", required=True)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--prefill", type=int, default=0)
    p.add_argument("--decode-batch", type=int, default=1)
    p.add_argument("-r", "--repetitions", type=int, default=10)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--markdown", action="store_true")
    args = p.parse_args()
    builds = [b.split("=", 1) for b in args.build]
    samples = {name: [] for name, _ in builds}
    for k in range(args.rounds):
        order = builds[k % len(builds):] + builds[:k % len(builds)]
        for name, path in order:
            samples[name].append(profile(path, args))

    def med(values):
        return round(statistics.median(values), 4)

    # The step's context bytes depend on the model and step, not the build: taken from any build
    # that reports them (one from before the profiler counted them reports none), and the share
    # with context recomputed for every run alike from its own step time and read bandwidth.
    context = next((s["context_bytes"] for runs in samples.values() for _, s in runs if "context_bytes" in s), 0.0)

    def share_with_context(bw, s):
        return (s["weight_bytes"] + context) / (s["unrecorded_step_ms"] / 1e3) / 1e9 / bw

    result = {"model": args.model, "threads": args.threads, "rounds": args.rounds, "builds": {}}
    for name, runs in samples.items():
        ops = {}
        for _, step in runs:
            for op in step["ops"]:
                ops.setdefault(op["name"], {"ms": [], "share": [], "gbps": []})
                ops[op["name"]]["ms"].append(op["ms"])
                ops[op["name"]]["share"].append(op["share"])
                ops[op["name"]]["gbps"].append(op["gbps"])
        result["builds"][name] = {
            "read_gbps": med([bw for bw, _ in runs]),
            "step_ms": med([s["unrecorded_step_ms"] for _, s in runs]),
            "step_ms_all": [round(s["unrecorded_step_ms"], 3) for _, s in runs],
            "bandwidth_bound_share": med([s["bandwidth_bound_share"] for _, s in runs]),
            "bandwidth_bound_share_with_context": med([share_with_context(bw, s) for bw, s in runs]),
            "context_bytes": context,
            "weight_bytes": runs[0][1]["weight_bytes"],
            "ops": {n: {"ms": med(v["ms"]), "share": med(v["share"]), "gbps": med(v["gbps"])} for n, v in ops.items()},
        }
    print(json.dumps(result, indent=1))
    if args.markdown:
        names = list(result["builds"])
        print("\n| | " + " | ".join(names) + " |\n|---|" + "---|" * len(names))
        for key in ("read_gbps", "step_ms", "bandwidth_bound_share", "bandwidth_bound_share_with_context"):
            print(f"| {key} | " + " | ".join(str(result["builds"][n][key]) for n in names) + " |")
        for op in result["builds"][names[0]]["ops"]:
            cells = []
            for n in names:
                o = result["builds"][n]["ops"].get(op)
                cells.append(f"{o['ms']:.3f} ms ({100 * o['share']:.1f}%, {o['gbps']:.1f} GB/s)" if o else "")
            print(f"| {op} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
