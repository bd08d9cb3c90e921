#!/usr/bin/env python3
"""Classify every row of a CSV file with one batched generate call.

    python examples/classify_csv.py examples/reviews.csv --column text \
        --labels positive negative neutral > labelled.csv

Each text becomes a chat prompt asking for one label; the output is constrained to be exactly
one of the labels (structured outputs' `choice`), decoded greedily, so the answer is always a
valid label and the run is repeatable. All rows go to the engine in one call, which batches them
(continuous batching): far faster than one call per row. Writes the CSV back with a `label`
column added.
"""
import argparse
import csv
import os
import sys
import time
from pathlib import Path

import lumen


def default_model() -> str:
    cache = Path(os.environ.get("LUMEN_CACHE") or Path.home() / ".cache" / "lumen" / "models")
    return str(cache / "SmolLM2-135M-Instruct.Q4_1.gguf")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("csv", help="input CSV with a header row")
    parser.add_argument("--column", default="text", help="the column holding the text (default: text)")
    parser.add_argument("--labels", nargs="+", default=["positive", "negative", "neutral"],
                        help="the labels to choose from (at least two)")
    parser.add_argument("-m", "--model", default=default_model(), help="GGUF model (default: the default model)")
    args = parser.parse_args()

    if len(args.labels) < 2:
        sys.exit("give at least two --labels")
    with open(args.csv, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    if rows and args.column not in rows[0]:
        sys.exit(f"{args.csv} has no column {args.column!r} (it has {', '.join(rows[0])})")

    llm = lumen.LLM(model=args.model, max_model_len=2048)
    question = f"Is the sentiment of this text {', '.join(args.labels[:-1])} or {args.labels[-1]}?"
    conversations = [[{"role": "user", "content": f"{question}\n\nText: {row[args.column]}"}] for row in rows]
    # Room for the longest label (the constraint ends the output when a label is complete).
    longest = max(len(llm.get_tokenizer().encode(label, add_special_tokens=False)) for label in args.labels)
    params = lumen.SamplingParams(temperature=0, max_tokens=longest + 1,
                                  structured_outputs=lumen.StructuredOutputsParams(choice=args.labels))
    start = time.perf_counter()
    outputs = llm.chat(conversations, params)
    seconds = time.perf_counter() - start

    writer = csv.DictWriter(sys.stdout, fieldnames=[*(rows[0] if rows else [args.column]), "label"], lineterminator="\n")
    writer.writeheader()
    for row, out in zip(rows, outputs):
        writer.writerow({**row, "label": out.outputs[0].text})
    print(f"classified {len(rows)} rows in {seconds:.2f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
