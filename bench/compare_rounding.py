#!/usr/bin/env python3
"""How far each engine's quantized kernels put a model from the function its weights define.

    python3 bench/compare_rounding.py --llama-perplexity /path/to/llama-perplexity \
        [--peer ik_llama=/path/to/ik/llama-perplexity] [--model MODEL.gguf] [--text FILE] \
        [-c 512] [--chunks 8] [-t 2]

The yardstick: the model with every tensor dequantized to F32 (scripts/dequantize_gguf.py, with
gguf-py), run by llama.cpp's llama-perplexity, which then multiplies f32 weights by f32
activations: no 8-bit activation codes and no engine's summation order. Its log-probabilities
over the text are the KL-divergence base (`--kl-divergence-base`). Then each engine runs the
quantized model over the same windows against that base: llama.cpp, any --peer, and Lumen at
each instruction-set level this CPU has (LUMEN_ISA: with AVX-512 VNNI, Q4_0/Q4_1 matmuls sum
each block as one exact integer; at avx2 they round as llama.cpp's x86 kernels do). Prints JSON:
per engine the perplexity, mean KLD from the f32 function and how often its top token is the
f32 function's. Engines that only round differently should land within each other's error bars.
The peer binaries are built by hand outside this repository; this script only runs them.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LUMEN = REPO / "build" / "release" / "src" / "cli" / "lumen"
CACHE = Path(os.environ.get("LUMEN_CACHE") or Path.home() / ".cache" / "lumen" / "models")


def run(cmd, env=None, stdout_only=False):
    result = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env=env)
    if result.returncode != 0:
        sys.exit(f"{' '.join(map(str, cmd))} failed:\n{result.stderr[-2000:]}")
    return result.stdout if stdout_only else result.stdout + result.stderr


def llama_kld(binary, args, base):
    text = run([binary, "-m", args.model, "-f", args.text, "-c", args.c, "--chunks", args.chunks, "-t", args.t,
                "--kl-divergence-base", base, "--kl-divergence"])
    number = r"([-\d.e+]+)"
    ppl = re.search(r"Mean PPL\(Q\)\s*:\s*" + number + r"\s*±\s*" + number, text)
    kld = re.search(r"Mean\s+KLD:\s*" + number + r"\s*±\s*" + number, text)
    top = re.search(r"Same top p:\s*" + number + r"\s*±\s*" + number, text)
    if not (ppl and kld and top):
        sys.exit(f"could not read {binary}'s KL-divergence report:\n{text[-3000:]}")
    return {"ppl": [float(ppl[1]), float(ppl[2])], "kld": [float(kld[1]), float(kld[2])],
            "same_top_percent": [float(top[1]), float(top[2])]}


def lumen_kld(args, base, isa):
    env = dict(os.environ, LUMEN_ISA=isa)
    # The windows are the base file's (its tokens and context), as with llama-perplexity.
    k = json.loads(run([args.lumen, "perplexity", "-m", args.model, "-t", args.t, "--kl-divergence-base", base,
                        "--kl-divergence", "--json"], env=env, stdout_only=True))
    return {"ppl": [k["ppl"]["value"], k["ppl"]["error"]], "kld": [k["kld"]["value"], k["kld"]["error"]],
            "same_top_percent": [100 * k["same_top"]["value"], 100 * k["same_top"]["error"]]}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--llama-perplexity", required=True)
    parser.add_argument("--peer", action="append", default=[], help="NAME=PATH of another llama-perplexity")
    parser.add_argument("--lumen", default=str(LUMEN))
    parser.add_argument("--model", default=str(CACHE / "SmolLM2-135M-Instruct.Q4_1.gguf"))
    parser.add_argument("--text", default=str(REPO / "tests" / "golden" / "perplexity" / "gpl-3.0.txt"))
    parser.add_argument("-c", default="512")
    parser.add_argument("--chunks", default="8")
    parser.add_argument("-t", default="2")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        f32 = Path(tmp) / "model.f32.gguf"
        base = Path(tmp) / "f32.kld"
        run([sys.executable, REPO / "scripts" / "dequantize_gguf.py", args.model, f32])
        run([args.llama_perplexity, "-m", f32, "-f", args.text, "-c", args.c, "--chunks", args.chunks, "-t", args.t,
             "--kl-divergence-base", base])
        engines = {"llama.cpp": llama_kld(args.llama_perplexity, args, base)}
        for peer in args.peer:
            name, path = peer.split("=", 1)
            engines[name] = llama_kld(path, args, base)
        for isa in ("avx512", "avx2"):
            engines[f"lumen (LUMEN_ISA={isa})"] = lumen_kld(args, base, isa)
    print(json.dumps({"model": Path(args.model).name, "text": Path(args.text).name, "ctx": int(args.c),
                      "chunks": int(args.chunks), "reference": "the model dequantized to F32, run by llama.cpp",
                      "engines": engines}, indent=1))


if __name__ == "__main__":
    main()
