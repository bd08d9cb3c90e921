#!/usr/bin/env python3
"""Per-kernel device time and DRAM bandwidth of one profiled decode step, from Nsight Compute.

Reads `ncu --csv --print-units base --metrics gpu__time_duration.sum,dram__bytes_read.sum` output
(one row per kernel and metric) and prints one JSON object: the step's kernel count, the sum of
kernel times (the step's device time if the GPU never idled) and, per kernel name, its launches,
total time, bytes read and achieved GB/s, largest total first. Compare the kernel-time sum with
the bench's ms per token: the difference is time the GPU waited for the host.

    scripts/ncu_summary.py PROFILE.csv [LABEL]
"""
import csv
import json
import sys
from collections import defaultdict


def main() -> int:
    path = sys.argv[1]
    label = sys.argv[2] if len(sys.argv) > 2 else path
    with open(path, newline="") as f:
        rows = [line for line in f if line.startswith('"')]  # ncu's own "==PROF==" lines are not CSV
    kernels = {}  # launch id -> {"name", metric: value}
    for row in csv.DictReader(rows):
        k = kernels.setdefault(row["ID"], {"name": row["Kernel Name"]})
        try:
            k[row["Metric Name"]] = float(row["Metric Value"].replace(",", ""))
        except ValueError:
            pass
    by_name = defaultdict(lambda: {"launches": 0, "ns": 0.0, "bytes": 0.0})
    for k in kernels.values():
        # The template arguments make names long; the function name is what tells kernels apart.
        name = k["name"].replace("(anonymous namespace)::", "")
        name = name.split("(")[0].split("<")[0].strip().removeprefix("void ").split("::")[-1]
        entry = by_name[name]
        entry["launches"] += 1
        entry["ns"] += k.get("gpu__time_duration.sum", 0.0)
        entry["bytes"] += k.get("dram__bytes_read.sum", 0.0)
    total_ns = sum(e["ns"] for e in by_name.values())
    table = [
        {"kernel": name, "launches": e["launches"], "us": round(e["ns"] / 1e3, 1),
         "share": round(e["ns"] / total_ns, 3) if total_ns else 0.0,
         "gb_per_s": round(e["bytes"] / e["ns"], 1) if e["ns"] else 0.0}
        for name, e in sorted(by_name.items(), key=lambda item: -item[1]["ns"])
    ]
    print(json.dumps({"check": "profile", "label": label, "kernels": len(kernels),
                      "kernel_us": round(total_ns / 1e3, 1),
                      "dram_read_mb": round(sum(e["bytes"] for e in by_name.values()) / 1e6, 1),
                      "by_kernel": table}))
    return 0 if kernels else 1


if __name__ == "__main__":
    sys.exit(main())
