#!/usr/bin/env python3
"""Issue 18's acceptance check, too slow for CI: 200 sampled completions (temperature 1) per JSON
schema of tests/e2e/structured_schemas.py through a running `lumen serve`, each validated with
the `jsonschema` package (draft 2020-12 format checker). Prints one JSON line per schema and a
summary; exits 1 if any completed reply fails to validate.

    lumen serve -m MODEL --port 8080 &
    ~/.cache/lumen/venv/bin/python scripts/check_structured_output.py --base-url http://127.0.0.1:8080

Replies cut short by max_tokens are counted (they are prefixes, not validated)."""
import argparse
import json
import sys
import time
from pathlib import Path

import jsonschema
import openai

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "e2e"))
from structured_schemas import SCHEMAS  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base-url", default="http://127.0.0.1:8080")
    ap.add_argument("--samples", type=int, default=200)
    ap.add_argument("--batch", type=int, default=16, help="n per request")
    ap.add_argument("--max-tokens", type=int, default=300)
    args = ap.parse_args()
    client = openai.OpenAI(base_url=args.base_url + "/v1", api_key="unused", timeout=600, max_retries=0)
    model = client.models.list().data[0].id
    checker = jsonschema.FormatChecker()
    failures = 0
    for name, schema in SCHEMAS.items():
        valid = invalid = cut = 0
        start = time.time()
        seed = 0
        while valid + invalid + cut < args.samples:
            n = min(args.batch, args.samples - valid - invalid - cut)
            r = client.chat.completions.create(
                model=model, n=n, temperature=1.0, max_tokens=args.max_tokens, seed=seed,
                messages=[{"role": "user", "content": f"Write one example of a {name} as JSON."}],
                response_format={"type": "json_schema", "json_schema": {"name": name, "schema": schema}})
            seed += n
            for c in r.choices:
                if c.finish_reason == "length":
                    cut += 1
                    continue
                try:
                    jsonschema.validate(json.loads(c.message.content), schema, format_checker=checker)
                    valid += 1
                except (ValueError, jsonschema.ValidationError) as e:
                    invalid += 1
                    print(f"INVALID {name}: {c.message.content!r}: {e}", file=sys.stderr)
        failures += invalid
        print(json.dumps({"schema": name, "valid": valid, "invalid": invalid, "cut_by_max_tokens": cut,
                          "seconds": round(time.time() - start, 1)}))
    print(json.dumps({"schemas": len(SCHEMAS), "invalid_total": failures}))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
