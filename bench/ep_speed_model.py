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

With `--batch B` it models one decode step of B sequences instead, for plain EP and for EP with
`--data-parallel-attention` side by side. A layer's B tokens hit about E (1 - (1 - k/E)^B) distinct
experts, 1/N of them on each rank. Plain EP: every rank reads the replicated weights and all B
sequences' K/V (`--kv-bytes-per-seq`, read once per step) and moves B moved(N) bytes per MoE
layer. Data-parallel attention: each rank reads the replicated weights and B/N sequences' K/V
and moves B k (N-1)/N (8 embedding + 8) bytes per MoE layer, plus (N-1)/N of the step's logit
rows (4 vocab bytes each, `--vocab`) to rank 0; its KV memory per rank is 1/N.

    bench/ep_speed_model.py MODEL.gguf --bandwidth-gbs 50 --network-gbs 3 --latency-us 15 --nodes 1 2 4 8
    bench/ep_speed_model.py --shape 48,2048,128,8,768 --weight-bytes 0.5625 ...   (a shape, Q4_0)
    bench/ep_speed_model.py MODEL.gguf ... --batch 64 --kv-bytes-per-seq 2e7 --vocab 151936
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


def batched_rows(m, a):
    """One decode step of a.batch sequences: plain EP against EP with data-parallel attention."""
    b, k, e, emb = a.batch, m["used"], m["experts"], m["embedding"]
    one_expert_layer = m["all_expert_bytes"] / m["moe_layers"] / e
    hit = e * (1 - (1 - k / e) ** b)  # distinct experts a layer's b tokens choose, uniform routing
    rows = []
    for n in a.nodes:
        experts_read = m["moe_layers"] * hit * one_expert_layer / n
        net = lambda moved: m["moe_layers"] * (3 * a.latency_us * 1e-6 * (n - 1) + moved / (a.network_gbs * 1e9))
        ep_moved = b * (2 * k * (n - 1) / n + (n - 1)) * 4 * emb
        dp_moved = b * k * (n - 1) / n * (8 * emb + 8)
        logits = b * (n - 1) / n * 4 * a.vocab
        t_ep = (m["replicated_bytes"] + experts_read + b * a.kv_bytes_per_seq) / (a.bandwidth_gbs * 1e9) + net(ep_moved)
        t_dp = ((m["replicated_bytes"] + experts_read + b * a.kv_bytes_per_seq / n) / (a.bandwidth_gbs * 1e9)
                + net(dp_moved) + logits / (a.network_gbs * 1e9))
        rows.append({"nodes": n, "ep_tokens_per_s": round(b / t_ep, 1), "dp_attention_tokens_per_s": round(b / t_dp, 1),
                     "ep_kv_gb_per_rank": round(b * a.kv_bytes_per_seq / 1e9, 3),
                     "dp_attention_kv_gb_per_rank": round(b * a.kv_bytes_per_seq / n / 1e9, 3),
                     "ep_bytes_moved_per_moe_layer": round(ep_moved), "dp_bytes_moved_per_moe_layer": round(dp_moved)})
    return {"model": m, "batch": b, "kv_bytes_per_seq": a.kv_bytes_per_seq, "bandwidth_gbs": a.bandwidth_gbs,
            "network_gbs": a.network_gbs, "latency_us": a.latency_us, "rows": rows}


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
    p.add_argument("--batch", type=int, help="model a decode step of this many sequences (plain EP and DP attention)")
    p.add_argument("--kv-bytes-per-seq", type=float, default=0.0, help="K/V bytes one sequence reads per step")
    p.add_argument("--vocab", type=int, default=0, help="vocabulary size (logit rows sent to rank 0)")
    a = p.parse_args()
    m = from_shape(a.shape, a.weight_bytes, a.replicated_gb) if a.shape else from_gguf(a.model)
    if a.batch:
        print(json.dumps(batched_rows(m, a), indent=1))
        return
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
