#!/usr/bin/env python3
"""Time to first token of one long prompt: one process against `mpirun -np N lumen serve
--context-parallel-size N`, one thread per rank, in the same run (issue 53). Prints one JSON
document: each configuration's TTFT (seconds, per repetition), the CPU seconds each process spent on it,
and the bytes ring attention moves.

    python3 bench/context_parallel_ttft.py --model ~/.cache/lumen/models/gemma-3-270m-q4_k_m.gguf \
        --tokens 16384 --ranks 2 [--baseline /path/to/older/lumen]

With --baseline, an older binary runs each configuration too, interleaved with this one (older
one process, this one process, older N ranks, this N ranks), so a before/after comparison meets
the same machine load.

The prompt is random token ids (seeded): a prefill's cost does not depend on which tokens they
are. The whole prompt is one engine step (--max-num-batched-tokens), so that context parallelism
shares all of it (a prompt cut into steps shares only its first).
"""
import argparse
import json
import os
import random
import re
import shutil
import signal
import subprocess
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}


def start(lumen, model, tokens, ranks):
    launcher = [shutil.which("mpirun"), "-np", str(ranks), "--oversubscribe", "--bind-to", "none"] if ranks > 1 else []
    parallel = ["--context-parallel-size", str(ranks)] if ranks > 1 else []
    args = [*launcher, lumen, "serve", "-m", model, "--port", "0", "-t", "1", "--max-model-len", str(tokens + 64),
            "--max-num-batched-tokens", str(tokens + 64), "--kv-cache-memory", "1G", *parallel]
    proc = subprocess.Popen(args, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
                            env=dict(os.environ, **MPI_ENV))
    log = []
    for line in proc.stderr:
        log.append(line)
        m = re.search(r"on http://[^:]+:(\d+)", line)
        if m:
            threading.Thread(target=lambda: [log.append(x) for x in proc.stderr], daemon=True).start()
            return proc, int(m.group(1)), log
    raise SystemExit("lumen serve did not start:\n" + "".join(log))


def rank_pids(proc, ranks):
    """The processes that compute: the server, or mpirun's children (the ranks)."""
    if ranks == 1:
        return [proc.pid]
    pids = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == proc.pid:
                pids.append(int(entry.name))
        except (OSError, IndexError, ValueError):
            continue
    return sorted(pids)


def cpu_seconds(pid):
    """User + system CPU time of a process so far (its threads' included)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rank0(proc, ranks):
    """The process to signal: rank 0 under mpirun (it releases the others), else the server."""
    if ranks == 1:
        return proc.pid
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            env = (entry / "environ").read_bytes()
        except (OSError, IndexError, ValueError):
            continue
        if ppid == proc.pid and b"OMPI_COMM_WORLD_RANK=0" in env:
            return int(entry.name)
    return proc.pid


def ttft(port, prompt):
    body = json.dumps({"prompt": prompt, "max_tokens": 1, "temperature": 0}).encode()
    request = urllib.request.Request(f"http://127.0.0.1:{port}/v1/completions", body,
                                     {"Content-Type": "application/json"})
    began = time.perf_counter()
    with urllib.request.urlopen(request, timeout=3600) as response:
        json.load(response)
    return time.perf_counter() - began


def model_shape(model):
    """Layers, KV heads, head width and sliding windows, read with gguf (the venv's package)."""
    from gguf import GGUFReader
    reader = GGUFReader(model)
    fields = {f.name: f.parts[f.data[0]] for f in reader.fields.values() if f.data}
    arch = bytes(fields["general.architecture"]).decode()
    get = lambda key: int(fields[f"{arch}.{key}"][0]) if f"{arch}.{key}" in fields else 0
    key_length = get("attention.key_length") or get("embedding_length") // get("attention.head_count")
    return {"architecture": arch, "layers": get("block_count"), "kv_heads": get("attention.head_count_kv"),
            "head_dim": key_length, "sliding_window": get("attention.sliding_window")}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True)
    p.add_argument("--lumen", default=str(ROOT / "build/release/src/cli/lumen"))
    p.add_argument("--tokens", type=int, default=16384)
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--repetitions", type=int, default=1)
    p.add_argument("--baseline", help="an older lumen binary to run each configuration too, interleaved")
    a = p.parse_args()
    # One prompt per repetition (a repeated prompt would be a prefix-cache hit), the same ones
    # for every configuration.
    prompts = []
    for r in range(a.repetitions):
        rng = random.Random(53 + r)
        prompts.append([rng.randrange(1000, 30000) for _ in range(a.tokens)])
    shape = model_shape(a.model)
    results = {"model": a.model, "tokens": a.tokens, "threads_per_rank": 1, "cores": os.cpu_count(),
               "shape": shape, "runs": []}
    # Ring attention moves, per layer, each rank's K and V rows to the next rank N - 1 times: every
    # rank's block reaches every other rank once. Rows travel as f16 with the default f16 cache
    # (before the f16 ring, as f32: twice these bytes).
    kv_row_bytes = 2 * shape["kv_heads"] * shape["head_dim"] * 2
    results["ring_bytes_per_layer"] = {"per_rank": (a.ranks - 1) * a.tokens // a.ranks * kv_row_bytes,
                                       "all_ranks": (a.ranks - 1) * a.tokens * kv_row_bytes}
    binaries = [("baseline", a.baseline), ("this", a.lumen)] if a.baseline else [("this", a.lumen)]
    results["load_average_before"] = os.getloadavg()
    for ranks, (label, lumen) in [(r, b) for r in (1, a.ranks) for b in binaries]:
        proc, port, log = start(lumen, a.model, a.tokens, ranks)
        try:
            pids = rank_pids(proc, ranks)
            times, cpu = [], []
            for prompt in prompts:
                before = [cpu_seconds(pid) for pid in pids]
                times.append(ttft(port, prompt))
                cpu.append([round(cpu_seconds(pid) - b, 2) for pid, b in zip(pids, before)])
        finally:
            os.kill(rank0(proc, ranks), signal.SIGTERM)
            proc.wait(timeout=120)
        # CPU seconds each process spent on the request: the work, whatever else the machine ran
        # (on a shared machine the wall time also counts waits for a core).
        results["runs"].append({"binary": label, "lumen": lumen, "ranks": ranks, "ttft_s": times,
                                "cpu_s_per_process": cpu, "load_average_after": os.getloadavg()})
    for label, _ in binaries:
        one, many = [r for r in results["runs"] if r["binary"] == label]
        results[f"speedup_{label}"] = min(one["ttft_s"]) / min(many["ttft_s"])
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
