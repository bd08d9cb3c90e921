#!/usr/bin/env python3
"""A soak test of `lumen serve` (not in CI; scripts/soak.sh runs it): concurrent streaming
clients for a duration, some disconnecting mid-stream and some sending malformed bodies, while
the server's resident memory is sampled. Prints one JSON report and exits non-zero when a
well-formed request got a 5xx or no answer, the server died, or RSS grew more than 10% after
warm-up."""
import argparse
import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time

try:  # the openai SDK of the test venv brings one or the other
    import httpx2 as httpx
except ImportError:
    import httpx


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


MALFORMED = [b"{", b'{"prompt": ', b'{"prompt": "x", "max_tokens": -5}', b"\xff\xfe", b'[1, 2, 3]',
             b'{"messages": [{"role": "wizard"}]}', b'{"prompt": "' + b"a" * 3000 + b'"']


class Stats:
    def __init__(self):
        self.lock = threading.Lock()
        self.counts = {"ok": 0, "disconnected": 0, "malformed_4xx": 0, "malformed_other": 0,
                       "server_error": 0, "failed": 0}
        self.errors = []

    def add(self, key, error=None):
        with self.lock:
            self.counts[key] += 1
            if error and len(self.errors) < 20:
                self.errors.append(error)


def client(base, deadline, rng, stats, args):
    while time.monotonic() < deadline:
        roll = rng.random()
        try:
            if roll < args.malformed:
                r = httpx.post(base + "/v1/completions", content=rng.choice(MALFORMED),
                               headers={"Content-Type": "application/json"}, timeout=60)
                stats.add("malformed_4xx" if 400 <= r.status_code < 500 else "malformed_other",
                          None if 400 <= r.status_code < 500 else f"malformed -> {r.status_code}")
                continue
            body = {"prompt": f"Story {rng.randrange(10**6)}: once upon a time", "max_tokens": rng.randint(8, 96),
                    "temperature": 0.8, "stream": True}
            disconnect = roll < args.malformed + args.disconnect
            with httpx.stream("POST", base + "/v1/completions", json=body, timeout=120) as r:
                if r.status_code >= 500:
                    stats.add("server_error", f"{r.status_code}: {r.read()[:200]!r}")
                    continue
                if r.status_code == 429:  # queue full: back off, not a failure
                    time.sleep(0.2)
                    continue
                events = 0
                done = False
                for line in r.iter_lines():
                    if line.startswith("data: "):
                        events += 1
                        done = line == "data: [DONE]"
                        if disconnect and events >= 3:
                            break
                if disconnect:
                    stats.add("disconnected")
                elif done:
                    stats.add("ok")
                else:
                    stats.add("failed", f"stream ended without [DONE] after {events} events")
        except Exception as e:  # a well-formed request with no answer
            stats.add("failed", repr(e)[:200])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lumen", required=True)
    ap.add_argument("--model", default=None)
    ap.add_argument("--clients", type=int, default=32)
    ap.add_argument("--minutes", type=float, default=30)
    ap.add_argument("--disconnect", type=float, default=0.10)
    ap.add_argument("--malformed", type=float, default=0.05)
    ap.add_argument("--warmup-minutes", type=float, default=None)
    # The KV pool is an anonymous mapping whose pages become resident as blocks are first used,
    # and the prefix cache keeps released blocks until the pool is full: with the default budget
    # (a share of available RAM) RSS climbs for most of an hour by design. A pool small enough
    # to be filled during warm-up makes RSS after it a leak detector.
    ap.add_argument("--kv-cache-memory", default="512M")
    args = ap.parse_args()
    cmd = [args.lumen, "serve", "--port", "0", "--log-level", "quiet", "--kv-cache-memory", args.kv_cache_memory] + \
        (["-m", args.model] if args.model else [])
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
    port = None
    for line in proc.stderr:
        m = re.search(r"on http://[^:]+:(\d+)", line)
        if m:
            port = int(m.group(1))
            break
    if port is None:
        sys.exit("lumen serve did not start")
    threading.Thread(target=lambda: [None for _ in proc.stderr], daemon=True).start()
    base = f"http://127.0.0.1:{port}"
    stats = Stats()
    start = time.monotonic()
    deadline = start + args.minutes * 60
    warmup = (args.warmup_minutes if args.warmup_minutes is not None else min(5.0, args.minutes / 6)) * 60
    threads = [threading.Thread(target=client, args=(base, deadline, random.Random(i), stats, args))
               for i in range(args.clients)]
    for t in threads:
        t.start()
    samples = []
    while time.monotonic() < deadline and proc.poll() is None:
        samples.append((round(time.monotonic() - start, 1), rss_kib(proc.pid)))
        time.sleep(5)
    for t in threads:
        t.join(180)
    alive = proc.poll() is None
    after = [kib for t, kib in samples if t >= warmup]
    growth = (max(after) / min(after) - 1.0) if len(after) >= 2 else 0.0
    if alive:
        proc.send_signal(signal.SIGTERM)
        rc = proc.wait(120)
    else:
        rc = proc.returncode
    report = {"clients": args.clients, "minutes": args.minutes, "kv_cache_memory": args.kv_cache_memory,
              **stats.counts, "server_alive": alive,
              "exit_status": rc, "rss_kib_after_warmup_min": min(after) if after else None,
              "rss_kib_after_warmup_max": max(after) if after else None, "rss_growth_after_warmup": round(growth, 4),
              "errors": stats.errors, "rss_samples": samples}
    print(json.dumps(report, indent=1))
    ok = alive and rc == 0 and stats.counts["server_error"] == 0 and stats.counts["failed"] == 0 and growth <= 0.10
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
