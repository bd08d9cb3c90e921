#!/usr/bin/env python3
"""`lumen perplexity` vs llama.cpp's llama-perplexity: the same model, text, -c and threads, the
two tools interleaved, tokens/s of each and their ratio.

    python3 bench/compare_perplexity.py --llama-perplexity /path/to/llama-perplexity \
        [--model MODEL.gguf] [--text FILE] [-c 512] [-t 2] [--rounds 3]

Speed is the whole evaluation as a user waits for it: the tokens the windows hold
(windows * -c) over the process's wall time, model loading and tokenization included (both are
well under a second for the default model; the per-tool figures without them are reported too:
Lumen's own "tokens_per_second", and llama.cpp's from the time stamps of its log lines, from
"calculating perplexity" to "Final estimate": both are the windows' evaluation and scoring). On a shared machine speed drifts from minute to minute, so the tools
alternate, round by round, and the medians are compared. Prints JSON. The peer binary is built
by hand outside this repository; this script only runs it.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LUMEN = REPO / "build" / "release" / "src" / "cli" / "lumen"
CACHE = Path(os.environ.get("LUMEN_CACHE") or Path.home() / ".cache" / "lumen" / "models")


def timed(cmd):
    start = time.perf_counter()
    result = subprocess.run(cmd, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if result.returncode != 0:
        sys.exit(f"{' '.join(map(str, cmd))} failed:\n{result.stderr[-2000:]}")
    return seconds, result.stdout, result.stderr


def run_lumen(args):
    seconds, out, _ = timed([LUMEN, "perplexity", "-m", args.model, "-f", args.text, "-c", args.c, "-t", args.t,
                             "--json"])
    report = json.loads(out)
    return {"wall_s": seconds, "tokens": report["tokens_evaluated"], "ppl": report["ppl"],
            "eval_tokens_per_s": report["tokens_per_second"]}


def run_llama(args):
    seconds, out, err = timed([args.llama_perplexity, "-m", args.model, "-f", args.text, "-c", args.c,
                               "-t", args.t])
    text = out + err
    windows = len(re.findall(r"\[\d+\]\d+\.\d+,", text))
    ppl = float(re.search(r"Final estimate: PPL = ([\d.]+)", text).group(1))
    # Its log lines carry a time stamp (minutes.seconds.milliseconds.microseconds since start):
    # the evaluation runs from "calculating perplexity" to "Final estimate".
    def stamp(marker):
        m = re.search(r"(\d+)\.(\d+)\.(\d+)\.(\d+) I " + marker, text)
        return 60 * int(m.group(1)) + int(m.group(2)) + int(m.group(3)) / 1e3 + int(m.group(4)) / 1e6 if m else None
    begin, end = stamp("perplexity: calculating perplexity over"), stamp("Final estimate")
    eval_rate = windows * int(args.c) / (end - begin) if begin is not None and end is not None else None
    return {"wall_s": seconds, "tokens": windows * int(args.c), "ppl": ppl, "eval_tokens_per_s": eval_rate}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--llama-perplexity", required=True)
    parser.add_argument("--model", default=str(CACHE / "SmolLM2-135M-Instruct.Q4_1.gguf"))
    parser.add_argument("--text", default=str(REPO / "tests" / "golden" / "perplexity" / "gpl-3.0.txt"))
    parser.add_argument("-c", default="512")
    parser.add_argument("-t", default="2")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    runs = {"lumen": [], "llama.cpp": []}
    for r in range(args.rounds):
        order = [("lumen", run_lumen), ("llama.cpp", run_llama)]
        if r % 2:
            order.reverse()
        for name, fn in order:
            runs[name].append(fn(args))
            print(f"round {r + 1} {name}: {runs[name][-1]}", file=sys.stderr)

    def summary(samples):
        rates = [s["tokens"] / s["wall_s"] for s in samples]
        evals = [s["eval_tokens_per_s"] for s in samples if s["eval_tokens_per_s"]]
        return {"tokens": samples[0]["tokens"], "ppl": samples[0]["ppl"],
                "wall_tokens_per_s": rates, "median_wall_tokens_per_s": statistics.median(rates),
                "median_eval_tokens_per_s": statistics.median(evals) if evals else None}

    lumen, llama = summary(runs["lumen"]), summary(runs["llama.cpp"])
    print(json.dumps({
        "model": Path(args.model).name, "text": Path(args.text).name, "n_ctx": int(args.c), "threads": int(args.t),
        "rounds": args.rounds, "load_average_at_end": os.getloadavg()[0],
        "lumen": lumen, "llama.cpp": llama,
        "ppl_relative_difference": lumen["ppl"] / llama["ppl"] - 1,
        "speedup_wall": lumen["median_wall_tokens_per_s"] / llama["median_wall_tokens_per_s"],
    }, indent=1))


if __name__ == "__main__":
    main()
