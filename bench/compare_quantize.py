#!/usr/bin/env python3
"""`lumen quantize` vs llama.cpp's llama-quantize: the same F16 input, type and thread count,
the two tools alternating round by round, the wall time of each (the whole process: reading,
converting and writing the file) and their ratio, and the CPU time (user + system), which a
machine shared with other work disturbs less; also whether the two outputs are the same
file, byte for byte.

    python3 bench/compare_quantize.py --llama-quantize /path/to/llama-quantize \
        --model MODEL-F16.gguf [--type Q4_K_M] [-t 2] [--rounds 3]

An F16 model of the default model: scripts/make_f16_model.py. Prints JSON. The peer binary is
built by hand outside this repository; this script only runs it. The outputs go to a temporary
directory on the same disk as --out-dir (default: the system's temporary directory).
"""
import argparse
import filecmp
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LUMEN = REPO / "build" / "release" / "src" / "cli" / "lumen"


def timed(command: list) -> tuple:
    """(wall seconds, CPU seconds: user + system of the child)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--llama-quantize", type=Path, required=True)
    parser.add_argument("--lumen", type=Path, default=LUMEN)
    parser.add_argument("--model", type=Path, required=True)
    parser.add_argument("--type", default="Q4_K_M")
    parser.add_argument("-t", "--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out-dir", type=Path, default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.out_dir) as tmp:
        ours, theirs = Path(tmp) / "lumen.gguf", Path(tmp) / "llama.gguf"
        lumen_cmd = [str(args.lumen), "quantize", str(args.model), str(ours), args.type, "-t", str(args.threads)]
        llama_cmd = [str(args.llama_quantize), str(args.model), str(theirs), args.type, str(args.threads)]
        lumen_s, llama_s, lumen_cpu, llama_cpu, loads = [], [], [], [], []
        for _ in range(args.rounds):
            loads.append(os.getloadavg()[0])
            wall, cpu = timed(lumen_cmd)
            lumen_s.append(wall)
            lumen_cpu.append(cpu)
            wall, cpu = timed(llama_cmd)
            llama_s.append(wall)
            llama_cpu.append(cpu)
        same = filecmp.cmp(ours, theirs, shallow=False)
    result = {
        "model": str(args.model), "type": args.type, "threads": args.threads, "rounds": args.rounds,
        "lumen_seconds": lumen_s, "llama_seconds": llama_s,
        "lumen_median_s": statistics.median(lumen_s), "llama_median_s": statistics.median(llama_s),
        "speedup": statistics.median(llama_s) / statistics.median(lumen_s),
        "lumen_cpu_seconds": lumen_cpu, "llama_cpu_seconds": llama_cpu,
        "cpu_ratio": statistics.median(llama_cpu) / statistics.median(lumen_cpu),
        "identical_files": same, "load_average_1min": loads,
    }
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
