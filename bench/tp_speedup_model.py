#!/usr/bin/env python3
"""Predicted decode speed of tensor parallelism over N machines (issue 21), from a GGUF's sizes.

Batch-1 decode reads every weight once per token, so a token takes its bytes over the memory
bandwidth. Under Lumen's split, each of N ranks reads 1/N of the layers' matrices, rank 0 also
reads the output head (not split: it computes the logits), and each layer costs two all-reduces
of one hidden state, each taking `latency` seconds for N ranks:

    t(N) = (layer_bytes / N + head_bytes) / bandwidth + 2 * layers * latency(N)

with latency(N) = latency_2 * log2(N) (MPI's allgather of small messages in log2(N) rounds).
Prints JSON: the bytes, and tokens/s for each N.

    bench/tp_speedup_model.py MODEL.gguf --bandwidth-gbs 50 --latency-us 15 --nodes 1 2 4 8
"""
import argparse
import json
import math

import gguf


def sizes(path):
    reader = gguf.GGUFReader(path)
    layers = head = 0
    n_layers = 0
    names = {t.name for t in reader.tensors}
    for t in reader.tensors:
        if t.name.startswith("blk."):
            layers += int(t.n_bytes)
            n_layers = max(n_layers, int(t.name.split(".")[1]) + 1)
        elif t.name == "output.weight" or (t.name == "token_embd.weight" and "output.weight" not in names):
            head += int(t.n_bytes)  # the output head (a tied model reads the embedding matrix)
    return layers, head, n_layers


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model")
    p.add_argument("--bandwidth-gbs", type=float, required=True, help="one node's memory read bandwidth, GB/s")
    p.add_argument("--latency-us", type=float, required=True, help="one all-reduce of a hidden state on 2 nodes, us")
    p.add_argument("--nodes", type=int, nargs="+", default=[1, 2, 4, 8])
    a = p.parse_args()
    layer_bytes, head_bytes, n_layers = sizes(a.model)
    bandwidth = a.bandwidth_gbs * 1e9
    rows = []
    for n in a.nodes:
        latency = 0.0 if n == 1 else a.latency_us * 1e-6 * math.log2(n)
        t = (layer_bytes / n + head_bytes) / bandwidth + 2 * n_layers * latency
        rows.append({"nodes": n, "seconds_per_token": t, "tokens_per_s": 1 / t})
    for r in rows:
        r["speedup"] = rows[0]["seconds_per_token"] / r["seconds_per_token"] if rows[0]["nodes"] == 1 else None
    print(json.dumps({"model": a.model, "layer_bytes": layer_bytes, "head_bytes": head_bytes, "layers": n_layers,
                      "bandwidth_gbs": a.bandwidth_gbs, "latency_us_2_nodes": a.latency_us, "predictions": rows},
                     indent=1))


if __name__ == "__main__":
    main()
