#!/usr/bin/env python3
"""`lumen serve` vs llama.cpp's `llama-server` under the same load, side by side in one run.

    python3 bench/compare_serve.py --llama-server /path/to/llama-server \
        [--lumen build/release/src/cli/lumen] [--model MODEL.gguf] [--concurrency 1,4,16] \
        [--num-prompts 64] [--num-prompts-c1 16] [--input-len 128] [--output-len 128] [-t 2] \
        [--out-dir /tmp/lumen-serve-bench]

Both servers run at once on loopback with the same model, threads and total context: llama-server
with -np P slots of --slot-ctx tokens each (-c P x slot-ctx), lumen with --max-num-seqs P,
--max-model-len slot-ctx and a KV pool capped at P x slot-ctx tokens. Each gets a short warm-up
(lumen repacks its weights at first use), then at every concurrency level C the same
`lumen bench serve` workload goes to one server and then the other: N requests of random token
ids, C in flight, ignore_eos, streamed. The seed changes with C (so no run finds its prompts in a
prefix cache left by an earlier one) but is the same for both servers at one C. Writes each
result JSON, a summary JSON with the machine's load average around the run, a Markdown table,
and a PNG when matplotlib is installed (bench/plot_serve.py). The peer binary is built by hand
outside this repository; this script only runs it.
"""
import argparse
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LUMEN = REPO / "build" / "release" / "src" / "cli" / "lumen"
DEFAULT_MODEL = Path.home() / ".cache" / "lumen" / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def load_average():
    return list(os.getloadavg())


class Server:
    def __init__(self, name, cmd, port, log_path):
        self.name, self.cmd, self.port = name, cmd, port
        self.base_url = f"http://127.0.0.1:{port}"
        self.log = open(log_path, "w")
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 120
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit(f"{name} exited at start (see {log_path}): {' '.join(cmd)}")
            try:
                with urllib.request.urlopen(self.base_url + "/health", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.5)
        self.stop()
        raise SystemExit(f"{name} did not become healthy (see {log_path})")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def bench(args, server, concurrency, num_prompts, seed, output):
    cmd = [str(args.lumen), "bench", "serve", "--base-url", server.base_url, "--label", server.name,
           "--num-prompts", str(num_prompts), "--max-concurrency", str(concurrency),
           "--input-len", str(args.input_len), "--output-len", str(args.output_len),
           "--seed", str(seed), "--vocab-from", str(args.model), "--json"]
    if output:
        cmd += ["--output", str(output)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"bench serve failed against {server.name}: {proc.stderr}")
    if output:
        print(f"  {server.name:12s} c={concurrency:<3d} {proc.stderr.strip()}", file=sys.stderr)
        return json.loads(Path(output).read_text())
    return json.loads(proc.stdout)


def row(r):
    return (f"| {r['config']['label']} | {r['config']['max_concurrency']} | {r['completed']}/{r['num_prompts']} "
            f"| {r['request_throughput']:.2f} | {r['output_throughput']:.1f} "
            f"| {r['ttft_ms']['p50']:.0f} | {r['ttft_ms']['p99']:.0f} "
            f"| {r['tpot_ms']['p50']:.1f} | {r['tpot_ms']['p99']:.1f} | {r['itl_ms']['p99']:.1f} |")


def markdown(results, levels):
    lines = ["| server | concurrency | completed | req/s | output tok/s | TTFT p50 ms | TTFT p99 ms "
             "| TPOT p50 ms | TPOT p99 ms | ITL p99 ms |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for c in levels:
        for name in ("lumen", "llama-server"):
            lines.append(row(results[name][c]))
    lines.append("")
    lines.append("| concurrency | lumen / llama-server output tok/s | TTFT p99 lumen vs llama-server (ms) |")
    lines.append("|---|---|---|")
    for c in levels:
        a, b = results["lumen"][c], results["llama-server"][c]
        ratio = a["output_throughput"] / b["output_throughput"] if b["output_throughput"] else float("nan")
        lines.append(f"| {c} | {ratio:.2f}x | {a['ttft_ms']['p99']:.0f} vs {b['ttft_ms']['p99']:.0f} |")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--llama-server", required=True, help="path of the peer's llama-server binary")
    ap.add_argument("--lumen", default=str(LUMEN))
    ap.add_argument("--model", default=str(DEFAULT_MODEL))
    ap.add_argument("--concurrency", default="1,4,16")
    ap.add_argument("--num-prompts", type=int, default=64)
    ap.add_argument("--num-prompts-c1", type=int, default=16, help="requests at concurrency 1")
    ap.add_argument("--input-len", type=int, default=128)
    ap.add_argument("--output-len", type=int, default=128)
    ap.add_argument("--parallel", type=int, default=16, help="llama-server slots = lumen --max-num-seqs")
    ap.add_argument("--slot-ctx", type=int, default=2048, help="context per slot / per sequence")
    ap.add_argument("-t", "--threads", type=int, default=2)
    ap.add_argument("--warmup", type=int, default=4, help="warm-up requests per server, not recorded")
    ap.add_argument("--out-dir", default="/tmp/lumen-serve-bench")
    args = ap.parse_args()
    levels = [int(c) for c in args.concurrency.split(",")]
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)

    # f16 K and V; the pool is capped at max-num-seqs x max-model-len tokens, so ask for more.
    kv_memory = "4G"
    ports = free_port(), free_port()
    lumen_cmd = [str(args.lumen), "serve", "-m", str(args.model), "--port", str(ports[0]), "-t", str(args.threads),
                 "--max-num-seqs", str(args.parallel), "--max-model-len", str(args.slot_ctx),
                 "--kv-cache-memory", kv_memory]
    peer_cmd = [args.llama_server, "-m", str(args.model), "--host", "127.0.0.1", "--port", str(ports[1]),
                "-np", str(args.parallel), "-c", str(args.parallel * args.slot_ctx), "-t", str(args.threads),
                "--no-webui"]
    summary = {"commands": {"lumen": lumen_cmd, "llama-server": peer_cmd}, "load_average": {}, "results": {}}
    servers = []
    try:
        servers.append(Server("lumen", lumen_cmd, ports[0], out / "lumen-serve.log"))
        servers.append(Server("llama-server", peer_cmd, ports[1], out / "llama-server.log"))
        for s in servers:
            bench(args, s, min(args.warmup, args.parallel), args.warmup, 999, None)
        results = {s.name: {} for s in servers}
        summary["load_average"]["start"] = load_average()
        for c in levels:
            n = args.num_prompts_c1 if c == 1 else args.num_prompts
            for s in servers:
                path = out / f"{s.name}-c{c}.json"
                results[s.name][c] = bench(args, s, c, n, 1000 + c, path)
                summary["results"].setdefault(s.name, {})[c] = str(path)
            summary["load_average"][f"after c={c}"] = load_average()
    finally:
        for s in servers:
            s.stop()
    with open(out / "lumen-serve.log") as f:
        m = re.search(r"\(context (\d+) tokens, (\d+) KV blocks\)", f.read())
        if m:
            summary["lumen_context"] = {"max_model_len": int(m.group(1)), "kv_blocks": int(m.group(2))}
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    table = markdown(results, levels)
    (out / "table.md").write_text(table)
    print(table)
    print(f"load average (1, 5, 15 min): {json.dumps(summary['load_average'])}")
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("matplotlib is not installed: no plot (pip install matplotlib)", file=sys.stderr)
        return
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from plot_serve import make_plot
    png = out / "serve.png"
    make_plot(sorted(str(p) for p in out.glob("*-c*.json")), png,
              f"{Path(args.model).stem}, {args.threads} threads, {args.input_len} in / {args.output_len} out tokens")
    print(png)


if __name__ == "__main__":
    main()
