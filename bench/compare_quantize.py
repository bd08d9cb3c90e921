#!/usr/bin/env python3
"""`lumen quantize` vs llama.cpp's llama-quantize: the same F16 input, type and thread count,
the two tools alternating round by round, the wall time of each (the whole process: reading,
converting and writing the file) and their ratio; also whether the two outputs are the same
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
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LUMEN = REPO / "build" / "release" / "src" / "cli" / "lumen"


def timed(command: list) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


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
        lumen_s, llama_s, loads = [], [], []
        for _ in range(args.rounds):
            loads.append(os.getloadavg()[0])
            lumen_s.append(timed(lumen_cmd))
            llama_s.append(timed(llama_cmd))
        same = filecmp.cmp(ours, theirs, shallow=False)
    result = {
        "model": str(args.model), "type": args.type, "threads": args.threads, "rounds": args.rounds,
        "lumen_seconds": lumen_s, "llama_seconds": llama_s,
        "lumen_median_s": statistics.median(lumen_s), "llama_median_s": statistics.median(llama_s),
        "speedup": statistics.median(llama_s) / statistics.median(lumen_s),
        "identical_files": same, "load_average_1min": loads,
    }
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
