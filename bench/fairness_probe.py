#!/usr/bin/env python3
"""Fairness between clients, measured against a running `lumen serve` (issue 47, item 6).

Two scenarios, each with two tenants (two --api-key values of the server):
  flood: tenant A streams --flood-requests requests of n = --flood-n (long outputs) so it holds
         every engine seat with more queued; tenant B then sends --probes 4-token requests one
         after another. Reports B's latency (p50, p99, max; a request that times out counts as
         the timeout).
  long:  tenant A sends --long-tokens-token prompts back to back (max_tokens 1); tenant B sends
         --probes short streaming requests spaced --gap s apart. Reports B's time to first
         token (p50, p99, max) beside A's long prefills, and A's own TTFT.

    lumen serve -m MODEL --api-key a --api-key b --max-model-len 4096 &
    python bench/fairness_probe.py --base-url http://127.0.0.1:8080 --keys a,b [--json]
"""
import argparse
import json
import statistics
import threading
import time

try:  # the openai SDK's HTTP client, renamed httpx2 in its newer releases (as tests/e2e/conftest.py)
    import httpx2 as httpx
except ImportError:
    import httpx


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, max(0, round(p / 100 * len(values) + 0.5) - 1))]


def summary(values):
    return {"n": len(values), "p50": round(statistics.median(values), 3), "p99": round(percentile(values, 99), 3),
            "max": round(max(values), 3)}


def stream(url, key, body, timeout, stop=None):
    """Streams a completion; returns the seconds to its first token (None if none came)."""
    t0 = time.monotonic()
    first = None
    with httpx.stream("POST", url + "/v1/completions", json={**body, "stream": True}, timeout=timeout,
                      headers={"Authorization": f"Bearer {key}"}) as r:
        r.raise_for_status()
        for line in r.iter_lines():
            if first is None and line.startswith("data: ") and line != "data: [DONE]":
                first = time.monotonic() - t0
            if stop is not None and stop.is_set():
                break
    return first


def flood(args, a, b):
    stop = threading.Event()
    started = []

    def hold(i):
        body = {"model": args.model, "prompt": f"Count slowly {i}: 1, 2, 3,", "max_tokens": args.flood_tokens,
                "ignore_eos": True, "n": args.flood_n}
        try:
            started.append(stream(args.base_url, a, body, 600, stop))
        except httpx.HTTPError:
            pass

    threads = [threading.Thread(target=hold, args=(i,), daemon=True) for i in range(args.flood_requests)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 120
    while not started and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(args.settle)
    latencies = []
    for _ in range(args.probes):
        t0 = time.monotonic()
        try:
            httpx.post(args.base_url + "/v1/completions", timeout=args.timeout,
                       json={"model": args.model, "prompt": "Hi", "max_tokens": 4, "ignore_eos": True},
                       headers={"Authorization": f"Bearer {b}"}).raise_for_status()
            latencies.append(time.monotonic() - t0)
        except httpx.TimeoutException:
            latencies.append(args.timeout)
    stop.set()
    for t in threads:
        t.join(args.timeout)
    return {"other_client_latency_s": summary(latencies)}


def long_prompts(args, a, b):
    stop = threading.Event()
    long_ttfts = []
    prompt = [1000 + (i * 7) % 5000 for i in range(args.long_tokens)]

    def loop():
        while not stop.is_set():
            long_ttfts.append(stream(args.base_url, a, {"model": args.model, "prompt": prompt, "max_tokens": 1}, 600))

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    time.sleep(args.settle)
    ttfts, probes = [], []
    for i in range(args.probes):
        def probe(i=i):
            t0 = time.monotonic()
            try:
                ttfts.append(stream(args.base_url, b, {"model": args.model, "prompt": f"Say something short {i}.",
                                                       "max_tokens": 1}, args.timeout))
            except httpx.TimeoutException:  # counted as the whole wait
                ttfts.append(time.monotonic() - t0)
        probes.append(threading.Thread(target=probe, daemon=True))
        probes[-1].start()
        time.sleep(args.gap)
    for t in probes:
        t.join(args.timeout)
    stop.set()
    thread.join(600)
    return {"short_ttft_s": summary(ttfts), "long_ttft_s": summary([t for t in long_ttfts if t is not None])}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--keys", required=True, help="two API keys, comma-separated: the flooding tenant's first")
    parser.add_argument("--model", help="the model name to send (default: the server's first)")
    parser.add_argument("--scenario", choices=["flood", "long", "both"], default="both")
    parser.add_argument("--flood-requests", type=int, default=30)
    parser.add_argument("--flood-n", type=int, default=16)
    parser.add_argument("--flood-tokens", type=int, default=256)
    parser.add_argument("--long-tokens", type=int, default=3000)
    parser.add_argument("--probes", type=int, default=20)
    parser.add_argument("--gap", type=float, default=0.5)
    parser.add_argument("--settle", type=float, default=2.0)
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    a, b = args.keys.split(",")
    if args.model is None:
        models = httpx.get(args.base_url + "/v1/models", headers={"Authorization": f"Bearer {a}"}, timeout=30)
        args.model = models.json()["data"][0]["id"]
    report = {}
    if args.scenario in ("flood", "both"):
        report["flood"] = flood(args, a, b)
    if args.scenario in ("long", "both"):
        report["long"] = long_prompts(args, a, b)
    print(json.dumps(report, indent=None if args.json else 2))


if __name__ == "__main__":
    main()
