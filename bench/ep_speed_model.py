#!/usr/bin/env python3
"""Predicted batch-1 decode speed and memory of expert parallelism over N machines (issue 53).

Lumen's scheme (src/model/expert_partition.h): each of N ranks holds 1/N of every MoE layer's
routed experts and everything else whole; per MoE layer and token, each routed entry whose
expert lives on another rank sends the token's hidden row there and gets the result back, and
the owner's sum goes to the N - 1 other ranks. With k experts a token, rows of 4 * embedding
bytes and uniform routing, the bytes that cross between ranks per MoE layer per token are

    moved(N) = (2 * k * (N - 1) / N + (N - 1)) * 4 * embedding

(`lumen run --ep N` and `bench latency --ep N --json` report the measured value). A decode token
reads every replicated weight (attention, router, shared expert, embeddings, output head) and
its k experts, k / N of them on each rank when routing is balanced, and makes three all-to-alls
per MoE layer, each `latency` seconds per peer:

    t(N) = (replicated_bytes + k * expert_bytes / N) / bandwidth
           + moe_layers * (3 * latency * (N - 1) + moved(N) / network)

Memory per rank: replicated_bytes + all_expert_bytes / N. Prints JSON.

    bench/ep_speed_model.py MODEL.gguf --bandwidth-gbs 50 --network-gbs 3 --latency-us 15 --nodes 1 2 4 8
    bench/ep_speed_model.py --shape 48,2048,128,8,768 --weight-bytes 0.5625 ...   (a shape, Q4_0)
"""
import argparse
import json
import re


def from_gguf(path):
    import gguf
    reader = gguf.GGUFReader(path)
    arch = bytes(reader.fields["general.architecture"].parts[-1]).decode()
    meta = lambda key: int(reader.fields[f"{arch}.{key}"].parts[-1][0])
    experts = replicated = 0
    moe_layers = set()
    for t in reader.tensors:
        if re.search(r"ffn_(gate|up|down)_exps", t.name):
            experts += int(t.n_bytes)
            moe_layers.add(t.name.split(".")[1])
        else:
            replicated += int(t.n_bytes)
    return {"moe_layers": len(moe_layers), "embedding": meta("embedding_length"), "experts": meta("expert_count"),
            "used": meta("expert_used_count"), "all_expert_bytes": experts, "replicated_bytes": replicated}


def from_shape(text, weight_bytes, replicated_gb):
    layers, embd, experts, used, ff = (int(x) for x in text.split(","))
    expert_bytes = layers * experts * 3 * embd * ff * weight_bytes
    return {"moe_layers": layers, "embedding": embd, "experts": experts, "used": used,
            "all_expert_bytes": int(expert_bytes), "replicated_bytes": int(replicated_gb * 1e9)}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", nargs="?")
    p.add_argument("--shape", help="moe_layers,embedding,experts,used,expert_ff (instead of a model)")
    p.add_argument("--weight-bytes", type=float, default=0.5625, help="bytes per weight with --shape (Q4_0)")
    p.add_argument("--replicated-gb", type=float, default=1.0, help="the replicated weights with --shape, GB")
    p.add_argument("--bandwidth-gbs", type=float, required=True, help="one node's memory read bandwidth, GB/s")
    p.add_argument("--network-gbs", type=float, required=True, help="one node's network bandwidth, GB/s")
    p.add_argument("--latency-us", type=float, required=True, help="one all-to-all's latency per peer, us")
    p.add_argument("--nodes", type=int, nargs="+", default=[1, 2, 4, 8])
    a = p.parse_args()
    m = from_shape(a.shape, a.weight_bytes, a.replicated_gb) if a.shape else from_gguf(a.model)
    one_expert_layer = m["all_expert_bytes"] / m["moe_layers"] / m["experts"]  # one expert of one layer
    rows = []
    for n in a.nodes:
        moved = (2 * m["used"] * (n - 1) / n + (n - 1)) * 4 * m["embedding"]
        read = m["replicated_bytes"] + m["moe_layers"] * m["used"] * one_expert_layer / n
        t = read / (a.bandwidth_gbs * 1e9) + m["moe_layers"] * (
            3 * a.latency_us * 1e-6 * (n - 1) + moved / (a.network_gbs * 1e9))
        rows.append({"nodes": n, "bytes_moved_per_moe_layer_token": round(moved),
                     "memory_per_rank_gb": round((m["replicated_bytes"] + m["all_expert_bytes"] / n) / 1e9, 3),
                     "tokens_per_s": round(1 / t, 1)})
    print(json.dumps({"model": m, "bandwidth_gbs": a.bandwidth_gbs, "network_gbs": a.network_gbs,
                      "latency_us": a.latency_us, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
