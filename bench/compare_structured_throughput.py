#!/usr/bin/env python3
"""Issue 18's throughput target: end-to-end output tokens/s of a running `lumen serve` at C
concurrent streams, constrained by a JSON schema vs unconstrained, interleaved rounds. Prints
JSON lines and the ratio (constrained / unconstrained).

    lumen serve -m MODEL --port 8080 &
    ~/.cache/lumen/venv/bin/python bench/compare_structured_throughput.py --base-url http://127.0.0.1:8080

Both arms generate exactly --max-tokens tokens per request (ignore_eos; the constrained arm's
schema leaves room for that many: an array of up to 64 person records), so the ratio compares
the cost per token, masks and jump-forward included. Each line also gives the mean tokens per
request of each arm, to show they match."""
import argparse
import asyncio
import json
import time

import openai

# At least 64 records: the array cannot close within max_tokens, so constrained requests are as
# long as unconstrained ones (a request that ends early would spend a larger share of its time
# in prefill and scheduling, which is not what is compared).
SCHEMA = {"type": "array", "minItems": 64, "maxItems": 64, "items": {
    "type": "object",
    "properties": {"name": {"type": "string", "maxLength": 24},
                   "age": {"type": "integer", "minimum": 0, "maximum": 120},
                   "city": {"type": "string", "maxLength": 24},
                   "member": {"type": "boolean"}},
    "required": ["name", "age", "city", "member"], "additionalProperties": False}}


async def one(client, model, max_tokens, constrained, seed):
    extra = {"response_format": {"type": "json_schema", "json_schema": {"name": "people", "schema": SCHEMA}}} \
        if constrained else {}
    r = await client.chat.completions.create(
        model=model, temperature=1.0, seed=seed, max_tokens=max_tokens,
        messages=[{"role": "user", "content": "List some people with their age and city."}],
        extra_body={"ignore_eos": True}, **extra)
    return r.usage.completion_tokens


async def arm(client, model, concurrency, requests, max_tokens, constrained):
    start = time.time()
    sem = asyncio.Semaphore(concurrency)

    async def limited(i):
        async with sem:
            return await one(client, model, max_tokens, constrained, i)
    tokens = sum(await asyncio.gather(*(limited(i) for i in range(requests))))
    return tokens / (time.time() - start), tokens / requests


async def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base-url", default="http://127.0.0.1:8080")
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--requests", type=int, default=32)
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    client = openai.AsyncOpenAI(base_url=args.base_url + "/v1", api_key="unused", timeout=600, max_retries=0)
    model = (await client.models.list()).data[0].id
    await arm(client, model, args.concurrency, args.concurrency, 16, True)  # warm the grammar caches
    plain, constrained = [], []
    for r in range(args.rounds):
        rate, per_request = await arm(client, model, args.concurrency, args.requests, args.max_tokens, False)
        plain.append(rate)
        rate_c, per_request_c = await arm(client, model, args.concurrency, args.requests, args.max_tokens, True)
        constrained.append(rate_c)
        print(json.dumps({"round": r, "unconstrained_tok_s": round(rate, 1), "json_schema_tok_s": round(rate_c, 1),
                          "tokens_per_request": [round(per_request, 1), round(per_request_c, 1)]}))
    ratio = sorted(constrained)[len(constrained) // 2] / sorted(plain)[len(plain) // 2]
    print(json.dumps({"concurrency": args.concurrency, "median_ratio": round(ratio, 3)}))


if __name__ == "__main__":
    asyncio.run(main())
