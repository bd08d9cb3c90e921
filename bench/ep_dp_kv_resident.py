"""Per-rank resident bytes of the KV pool under `--ep 2`, with and without --data-parallel-attention
(issue 53): 16 concurrent requests to `mpirun -np 2 lumen serve`, then each rank's resident bytes
of the KV pool's mapping (the one anonymous mapping of --kv-cache-memory's size or more) from
/proc/PID/smaps. The pool's pages become resident when first written, so this is the KV each
rank wrote. One JSON line per configuration.

    python3 bench/ep_dp_kv_resident.py LUMEN MOE_MODEL_GGUF
"""
import json
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
import urllib.request

L, MODEL = sys.argv[1], sys.argv[2]
os.environ.update({"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"})
KV = 1 << 30

def ranks(launcher):
    out = {}
    for e in os.listdir("/proc"):
        if not e.isdigit(): continue
        try:
            ppid = int(open(f"/proc/{e}/stat").read().rsplit(")", 1)[1].split()[1])
            env = open(f"/proc/{e}/environ", "rb").read().split(b"\0")
        except OSError: continue
        if ppid == launcher:
            for v in env:
                if v.startswith(b"OMPI_COMM_WORLD_RANK="): out[int(v.split(b"=")[1])] = int(e)
    return out

def kv_rss(pid):
    size = rss = None; best = 0
    for line in open(f"/proc/{pid}/smaps"):
        m = re.match(r"([0-9a-f]+)-([0-9a-f]+) ", line)
        if m: size = int(m[2], 16) - int(m[1], 16); continue
        if line.startswith("Rss:") and size is not None and size >= KV:
            best = max(best, int(line.split()[1]) * 1024)
    return best

def run(extra):
    p = subprocess.Popen(["mpirun", "-np", "2", "--oversubscribe", L, "serve", "-m", MODEL, "-t", "1",
                          "--port", "0", "--kv-cache-memory", "1G", "--ep", "2", *extra],
                         stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    port = None
    for line in p.stderr:
        m = re.search(r"on http://[^:]+:(\d+)", line)
        if m: port = int(m[1]); break
    def post(i):
        body = json.dumps({"prompt": f"Story {i}: " + "the lighthouse keeper climbed the stairs " * 60,
                           "max_tokens": 16, "temperature": 0}).encode()
        req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/completions", body, {"Content-Type": "application/json"})
        return json.load(urllib.request.urlopen(req, timeout=600))["usage"]["prompt_tokens"]
    with ThreadPoolExecutor(16) as pool:
        toks = list(pool.map(post, range(16)))
    metrics = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics").read().decode()
    rows = re.findall(r'lumen_data_parallel_attention_rows_total\{rank="(\d)"\} (\S+)', metrics)
    r = ranks(p.pid)
    res = {k: kv_rss(v) for k, v in sorted(r.items())}
    os.kill(r[0], 15); p.wait(timeout=60)
    return {"flags": extra, "prompt_tokens": sum(toks), "kv_resident_bytes_per_rank": res, "attention_rows": rows}

for extra in ([], ["--data-parallel-attention"]):
    print(json.dumps(run(extra)), flush=True)
