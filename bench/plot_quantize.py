#!/usr/bin/env python3
"""Plots size against perplexity for the quantization types `lumen quantize --report-text`
measured: one line per report, a point per candidate type (labelled), the unquantized input as
a dashed reference line.

    lumen quantize F16.gguf OUT.gguf Q4_K_M --report-text TEXT --report-types Q2_K,Q3_K_M,Q4_K_M \\
        --report-json plain.json
    lumen quantize F16.gguf OUT.gguf Q4_K_M --imatrix imatrix.gguf --report-text TEXT \\
        --report-types Q2_K,Q3_K_M,Q4_K_M --report-json imatrix.json
    python3 bench/plot_quantize.py plain.json:"no imatrix" imatrix.json:"imatrix" -o sizes.png

Each argument is a --report-json file, optionally followed by :LABEL (default: the file's name).
The x axis is bits per weight over the file's tensors, the y axis perplexity with its standard
error. Needs matplotlib (`pip install matplotlib` into the venv); nothing else in the repository
does, so it is not in scripts/requirements-test.txt.
"""
import argparse
import json
from pathlib import Path


def load(argument: str) -> tuple:
    path, _, label = argument.partition(":")
    report = json.loads(Path(path).read_text())
    if "candidates" not in report:
        raise SystemExit(f"{path}: no candidates (was --report-text given?)")
    return label or Path(path).stem, report["candidates"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("reports", nargs="+", help="REPORT.json[:LABEL]")
    parser.add_argument("-o", "--output", type=Path, required=True, help="PNG to write")
    parser.add_argument("--title", default="Size against perplexity")
    args = parser.parse_args()

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    reference = None
    for label, candidates in map(load, args.reports):
        points = sorted((c for c in candidates if c["type"] != "input"), key=lambda c: c["bits_per_weight"])
        reference = reference or next((c for c in candidates if c["type"] == "input"), None)
        bits = [c["bits_per_weight"] for c in points]
        line = ax.errorbar(bits, [c["ppl"] for c in points], yerr=[c["ppl_error"] for c in points], marker="o",
                           capsize=3, label=label)
        for c in points:
            ax.annotate(c["type"], (c["bits_per_weight"], c["ppl"]), textcoords="offset points", xytext=(4, 4),
                        fontsize=8, color=line[0].get_color())
    if reference is not None:
        ax.axhline(reference["ppl"], linestyle="--", color="grey",
                   label=f"unquantized input ({reference['bits_per_weight']:.0f} bpw): {reference['ppl']:.2f}")
    ax.set_xlabel("bits per weight")
    ax.set_ylabel("perplexity")
    ax.set_title(args.title)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(args.output, dpi=120)
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
