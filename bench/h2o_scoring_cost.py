#!/usr/bin/env python3
"""What H2O's prompt scoring adds to a prefill: `lumen run` on one long prompt with no eviction,
and with `--kv-eviction h2o:budget=B` where B holds the whole prompt (nothing is evicted, so only
the scoring differs), for one or two lumen binaries (a baseline's and this build's), rounds
alternated so the peers share the machine's load. Prints and writes JSON: prefill seconds per
run, and H2O's extra prefill seconds over the no-eviction run of the same round; the same in
CPU seconds of the whole process, which a busy machine disturbs less.

  bench/h2o_scoring_cost.py --lumen build/release/src/cli/lumen --baseline /tmp/lumen-main \\
      --model ~/.cache/lumen/models/SmolLM2-135M-Instruct.Q4_1.gguf --tokens 1024,4096 --json out.json
"""
import argparse
import json
import re
import resource
import subprocess
import sys
import tempfile

# A plain filler text: its token count per repetition is about 20 on both models' tokenizers.
FILLER = ("The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again. ")


def prefill_seconds(lumen, model, prompt_file, context, spec):
    """The prefill's wall seconds as lumen run reports them, the prompt's tokens, and the whole
    process's CPU seconds (user + system): on a machine shared with other jobs the CPU time
    still counts the work done, where the wall time counts the waiting too."""
    cmd = [lumen, "run", "-m", model, "-f", prompt_file, "-n", "4", "--temp", "0", "-c", str(context),
           "--keep-out-of-window-kv"]
    if spec:
        cmd += ["--kv-eviction", spec]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {out.stderr[-2000:]}")
    m = re.search(r"^prompt: (\d+) tokens in ([\d.]+) s", out.stderr, re.M)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return int(m.group(1)), float(m.group(2)), round(cpu, 2)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lumen", required=True)
    ap.add_argument("--baseline", help="another lumen binary whose H2O scoring runs beside --lumen's")
    ap.add_argument("--model", required=True)
    ap.add_argument("--tokens", default="1024,4096", help="prompt lengths (approximate)")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--json")
    a = ap.parse_args()
    rows = []
    for target in (int(t) for t in a.tokens.split(",")):
        context = 2 * target + 64
        with tempfile.NamedTemporaryFile("w", suffix=".txt") as f:
            f.write(FILLER * int(target * 0.95 / 20))
            f.flush()
            for r in range(a.rounds):
                n, none_s, none_cpu = prefill_seconds(a.lumen, a.model, f.name, context, None)
                row = {"model": a.model, "round": r, "prompt_tokens": n, "none_s": none_s, "none_cpu_s": none_cpu}
                binaries = [("h2o", a.lumen)] + ([("h2o_baseline", a.baseline)] if a.baseline else [])
                for name, lumen in binaries:
                    _, s, cpu = prefill_seconds(lumen, a.model, f.name, context, f"h2o:budget={context}")
                    row[f"{name}_s"] = s
                    row[f"{name}_extra_s"] = round(s - none_s, 3)
                    row[f"{name}_cpu_s"] = cpu
                    row[f"{name}_extra_cpu_s"] = round(cpu - none_cpu, 2)
                rows.append(row)
                print(json.dumps(row), flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
