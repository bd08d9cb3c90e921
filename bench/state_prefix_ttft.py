#!/usr/bin/env python3
"""What the state prefix cache buys and costs: time to first token of a long prompt on a
state-space model (Mamba 2 at mamba2-130m's shape) and on the hybrid (granite-hybrid-350m's
shape), sent cold and again, on `lumen serve` with and without --state-prefix-cache-memory,
interleaved in one run on one machine. Prints JSON.

    python bench/state_prefix_ttft.py --lumen build/release/lumen --vocab ~/.cache/lumen/models/X.gguf
        [--tokens 1024] [--rounds 3] [--presets mamba2-130m granite-hybrid-350m]

Each round sends a new prompt (seeded words: no cache helps it) cold, then the same prompt
again, to both servers; a request is non-streaming with max_tokens 1, so its time is the
prompt's prefill and one token (plus a localhost HTTP round trip, under a millisecond).
  with:    the second send starts from the snapshot at the prompt's last full block (the hit),
           and the cold send pays the snapshots' copies and one more step (the prefill is cut
           to end on the last block boundary).
  without: both sends prefill the whole prompt (a state model adopts no cached prefix without
           a snapshot of its state).
The snapshot's size is the model's state per sequence (lumen_state_cache_bytes /
lumen_state_slots_total), read from /metrics.
"""
import argparse
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path


def start(lumen, model, extra):
    args = [lumen, "serve", "-m", str(model), "--port", "0", "--kv-cache-memory", "1G", "--max-model-len", "4096",
            "--threads", str(os.cpu_count()), *extra]
    proc = subprocess.Popen(args, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    for line in proc.stderr:
        m = re.search(r"on http://[^:]+:(\d+)", line)
        if m:
            # Drained from now on, so a full pipe never blocks the server.
            threading.Thread(target=lambda: [None for _ in proc.stderr], daemon=True).start()
            return proc, int(m.group(1))
    raise RuntimeError(f"{args} did not start")


def post(port, body):
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=600) as r:
        return json.loads(r.read())


def metrics(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=60) as r:
        out = {}
        for line in r.read().decode().splitlines():
            if line and not line.startswith("#"):
                name, value = line.rsplit(" ", 1)
                out[name] = float(value)
        return out


def model_name(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=60) as r:
        return json.loads(r.read())["data"][0]["id"]


def ttft(port, prompt):
    name = model_name(port)
    started = time.perf_counter()
    r = post(port, {"model": name, "prompt": prompt, "max_tokens": 1, "temperature": 0})
    return time.perf_counter() - started, r["usage"]["prompt_tokens"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lumen", required=True)
    ap.add_argument("--vocab", required=True, help="a GGUF whose vocabulary the synthetic models take")
    ap.add_argument("--tokens", type=int, default=1024, help="about this many prompt tokens")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--cache", default="512M", help="--state-prefix-cache-memory of the 'with' server")
    ap.add_argument("--presets", nargs="+", default=["mamba2-130m", "granite-hybrid-350m"])
    args = ap.parse_args()
    results = []
    with tempfile.TemporaryDirectory() as directory:
        for preset in args.presets:
            model = Path(directory) / f"{preset}.gguf"
            subprocess.run([args.lumen, "synth", preset, "-o", str(model), "--vocab", args.vocab, "--type", "Q8_0",
                            "--seed", "1"], check=True, stdout=subprocess.DEVNULL)
            servers = {"with": start(args.lumen, model, ["--state-prefix-cache-memory", args.cache]),
                       "without": start(args.lumen, model, [])}
            try:
                rng = random.Random(7)
                times = {k: {"cold": [], "again": []} for k in servers}
                n_tokens = 0
                for _ in range(args.rounds):
                    words = " ".join(f"w{rng.randrange(100000)}" for _ in range(args.tokens // 3))
                    for name, (_, port) in servers.items():
                        cold, n_tokens = ttft(port, words)
                        again, _ = ttft(port, words)
                        times[name]["cold"].append(cold)
                        times[name]["again"].append(again)
                m = metrics(servers["with"][1])
                snapshot = m["lumen_state_cache_bytes"] / m["lumen_state_slots_total"]
                results.append({
                    "preset": preset, "prompt_tokens": n_tokens, "rounds": args.rounds,
                    "snapshot_bytes": snapshot,
                    "ttft_s": {k: {w: statistics.median(v) for w, v in t.items()} for k, t in times.items()},
                    "hits": m["lumen_state_prefix_cache_hits_total"],
                    "hit_tokens": m["lumen_state_prefix_cache_hit_tokens_total"],
                })
            finally:
                for proc, _ in servers.values():
                    proc.terminate()
                    proc.wait()
    json.dump({"cpus": os.cpu_count(), "results": results}, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
