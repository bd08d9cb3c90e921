#!/usr/bin/env python3
"""Does AWQ-style activation-aware scaling help Lumen's Q4 types? The experiment behind the
"SmoothQuant / AWQ" line of BENCHMARKS.md, kept so it can be re-run on another model.

AWQ (Lin et al. 2023) protects the input channels that carry large activations: a weight column
j is multiplied by s_j = mean(x_j^2)^(alpha/2) before quantizing (its rounding error shrinks
relative to the weight), and the activation is divided by s_j, which costs nothing when the
division folds into the RMSNorm weight in front of the matmul. Here that is done for the
matrices that read a norm's output: attn_q/k/v after attn_norm, ffn_gate/up after ffn_norm.
Activation statistics come from an importance matrix (`lumen imatrix`, llama.cpp's format:
`<tensor>.in_sum2` and `.counts`); s is normalized to a geometric mean of 1 per layer. The
scaled model's quantization with an imatrix gets the scaled activations' statistics (in_sum2
divided by s^2), so both arms weight the rounding by what the model will actually see.

    lumen imatrix -m F16.gguf -f calibration.txt -o imatrix.gguf
    python3 bench/awq_scaling.py --lumen build/release/src/cli/lumen --model F16.gguf \\
        --imatrix imatrix.gguf --text eval.txt --type Q4_0 --alpha 0.25,0.5 --work DIR

For every alpha it writes DIR/awq-ALPHA.gguf (an F16 copy with the scales folded in; the
function the model computes is the same up to f16 rounding), quantizes it to --type with and
without the imatrix, and prints the perplexity of each next to the unscaled file's.
"""
import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

import gguf
import numpy as np


def lumen(binary: str, *args) -> str:
    result = subprocess.run([binary, *map(str, args)], capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"lumen {' '.join(map(str, args))} failed:\n{result.stderr}")
    return result.stdout


def read_imatrix(path: Path) -> dict:
    """Mean squared activation per input channel, by weight name."""
    reader = gguf.GGUFReader(str(path))
    tensors = {t.name: np.array(t.data, dtype=np.float64) for t in reader.tensors}
    means = {}
    for name, sums in tensors.items():
        if name.endswith(".in_sum2"):
            weight = name[: -len(".in_sum2")]
            count = float(tensors[weight + ".counts"].reshape(-1)[0])
            means[weight] = sums.reshape(-1) / max(count, 1.0)
    return means


def write_scaled(model: Path, imatrix_path: Path, imatrix: dict, alpha: float, out: Path, out_imatrix: Path) -> None:
    """The scaled F16 model, and the importance matrix of its activations (divided by s)."""
    shutil.copyfile(model, out)
    shutil.copyfile(imatrix_path, out_imatrix)
    reader = gguf.GGUFReader(str(out), "r+")
    tensors = {t.name: t for t in reader.tensors}
    im_reader = gguf.GGUFReader(str(out_imatrix), "r+")
    im_tensors = {t.name: t for t in im_reader.tensors}
    groups = [("attn_norm", ("attn_q", "attn_k", "attn_v")), ("ffn_norm", ("ffn_gate", "ffn_up"))]
    layer = 0
    while f"blk.{layer}.attn_norm.weight" in tensors:
        for norm, matrices in groups:
            first = f"blk.{layer}.{matrices[0]}.weight"
            if first not in imatrix:
                raise SystemExit(f"the importance matrix has no {first}")
            mean_sq = np.maximum(imatrix[first], 1e-12)
            s = mean_sq ** (alpha / 2)
            s /= np.exp(np.mean(np.log(s)))  # geometric mean 1: the weights keep their scale
            norm_t = tensors[f"blk.{layer}.{norm}.weight"]
            if norm_t.tensor_type != gguf.GGMLQuantizationType.F32:
                raise SystemExit(f"{norm_t.name} is not F32")
            norm_t.data[:] = (norm_t.data / s).astype(np.float32)
            for m in matrices:
                w = tensors[f"blk.{layer}.{m}.weight"]
                if w.tensor_type != gguf.GGMLQuantizationType.F16:
                    raise SystemExit(f"{w.name} is not F16 (give an F16 model)")
                w.data[:] = (w.data.astype(np.float32) * s[np.newaxis, :].astype(np.float32)).astype(np.float16)
                sums = im_tensors[f"blk.{layer}.{m}.weight.in_sum2"]
                sums.data[:] = (sums.data.reshape(-1) / (s * s)).astype(sums.data.dtype).reshape(sums.data.shape)
        layer += 1
    reader.data.flush()
    im_reader.data.flush()


def perplexity(binary: str, model: Path, text: str, ctx: int, threads: int) -> float:
    out = lumen(binary, "perplexity", "-m", model, "-f", text, "-c", ctx, "-t", threads, "--json")
    return json.loads(out)["ppl"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lumen", required=True)
    ap.add_argument("--model", required=True, type=Path, help="an F16 GGUF")
    ap.add_argument("--imatrix", required=True, type=Path)
    ap.add_argument("--text", required=True)
    ap.add_argument("--type", default="Q4_0")
    ap.add_argument("--alpha", default="0.25,0.5")
    ap.add_argument("-c", type=int, default=512)
    ap.add_argument("-t", type=int, default=2)
    ap.add_argument("--work", required=True, type=Path)
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    imatrix = read_imatrix(args.imatrix)

    def quantized_ppl(f16: Path, tag: str, imatrix_path: Path) -> tuple:
        results = []
        for with_imatrix in (False, True):
            out = args.work / f"{tag}.{args.type}{'.imatrix' if with_imatrix else ''}.gguf"
            extra = ["--imatrix", imatrix_path] if with_imatrix else []
            lumen(args.lumen, "quantize", f16, out, args.type, *extra, "-t", args.t)
            results.append(perplexity(args.lumen, out, args.text, args.c, args.t))
        return tuple(results)

    print(f"| model | F16 PPL | {args.type} | {args.type} with imatrix |")
    print("|---|---|---|---|")
    base = quantized_ppl(args.model, "plain", args.imatrix)
    print(f"| unscaled | {perplexity(args.lumen, args.model, args.text, args.c, args.t):.4f} | "
          f"{base[0]:.4f} | {base[1]:.4f} |", flush=True)
    for alpha in (float(a) for a in args.alpha.split(",")):
        scaled, scaled_imatrix = args.work / f"awq-{alpha}.gguf", args.work / f"awq-{alpha}.imatrix.gguf"
        write_scaled(args.model, args.imatrix, imatrix, alpha, scaled, scaled_imatrix)
        q = quantized_ppl(scaled, f"awq-{alpha}", scaled_imatrix)
        print(f"| alpha {alpha} | {perplexity(args.lumen, scaled, args.text, args.c, args.t):.4f} | "
              f"{q[0]:.4f} ({(q[0] / base[0] - 1) * 100:+.1f}%) | {q[1]:.4f} ({(q[1] / base[1] - 1) * 100:+.1f}%) |",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
