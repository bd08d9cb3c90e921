#!/usr/bin/env python3
"""Plots `lumen bench serve --json` results: output throughput, p99 TTFT and p99 TPOT against
concurrency (or request rate), one line per server.

    python3 bench/plot_serve.py RESULT.json [RESULT.json ...] -o serve.png

Each file is one run; runs are grouped into lines by their `config.label` (set with
`lumen bench serve --label NAME`, else the base URL) and placed on the x axis by their
`config.max_concurrency`, or by `config.request_rate` when no concurrency cap was set.
Needs matplotlib (`pip install matplotlib`); nothing else in the repository does.
"""
import argparse
import json
from collections import defaultdict
from pathlib import Path

PANELS = [  # (title, y label, how to read the value from a result)
    ("Output throughput", "tokens/s", lambda r: r["output_throughput"]),
    ("Time to first token, p99", "ms", lambda r: r["ttft_ms"]["p99"]),
    ("Time per output token, p99", "ms", lambda r: r["tpot_ms"]["p99"]),
]


def x_value(result):
    config = result["config"]
    if config.get("max_concurrency"):
        return "concurrency", float(config["max_concurrency"])
    rate = config.get("request_rate")
    return "request rate (req/s)", float("inf") if rate in (None, "inf") else float(rate)


def load_series(paths):
    """{label: [(x, result), ...] sorted by x}, and the x axis' name."""
    series = defaultdict(list)
    axis_names = set()
    for path in paths:
        result = json.loads(Path(path).read_text())
        name, x = x_value(result)
        axis_names.add(name)
        label = result["config"].get("label") or result["config"].get("base_url", str(path))
        series[label].append((x, result))
    if len(axis_names) > 1:
        raise SystemExit("mixing runs capped by concurrency with runs paced by request rate: plot them apart")
    for points in series.values():
        points.sort(key=lambda p: p[0])
    return dict(series), axis_names.pop()


def make_plot(paths, output, title=None):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    series, axis_name = load_series(paths)
    fig, axes = plt.subplots(1, len(PANELS), figsize=(5 * len(PANELS), 4))
    for ax, (panel_title, unit, value) in zip(axes, PANELS):
        for label, points in sorted(series.items()):
            xs = [x for x, _ in points]
            ax.plot(xs, [value(r) for _, r in points], marker="o", label=label)
        ax.set_title(panel_title)
        ax.set_xlabel(axis_name)
        ax.set_ylabel(unit)
        if axis_name == "concurrency":
            ax.set_xscale("log", base=2)
            ticks = sorted({x for points in series.values() for x, _ in points})
            ax.set_xticks(ticks)
            ax.set_xticklabels([f"{t:g}" for t in ticks])
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
        ax.legend()
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(output, dpi=120)
    plt.close(fig)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", nargs="+", help="`lumen bench serve --json` result files")
    ap.add_argument("-o", "--output", default="serve.png", help="PNG to write")
    ap.add_argument("--title", help="figure title")
    args = ap.parse_args()
    make_plot(args.results, args.output, args.title)
    print(args.output)


if __name__ == "__main__":
    main()
