#!/usr/bin/env python3
"""Records what llama.cpp's llama-imatrix and llama-quantize --imatrix produce, for
tests/python/test_cli_imatrix.py (llama.cpp is not needed there):

  - tests/golden/imatrix/smollm2-gfdl.json: llama-imatrix on the default model over
    tests/golden/imatrix/gfdl-1.3.txt (the GNU FDL 1.3, a verbatim copy, which its notice permits;
    Debian's /usr/share/common-licenses/GFDL-1.3) with -c 512 --chunks 2: per weight, its token
    count and the sum and largest of its squared-activation sums (the whole file is 600 kB);
  - tests/golden/imatrix/moe-gfdl.json: the same for a synthetic mixture-of-experts model (`lumen
    synth qwen2moe-a2.7b-mini --layers 2 --type Q8_0`), -c 256 --chunks 2: per-expert entries;
  - tests/golden/quantize/imatrix.json: per case, each output tensor's type and sha256 prefix
    from llama-quantize --imatrix, the imatrix being tests/python/synthetic_imatrix.py's for the
    input (the inputs are made as scripts/make_quantize_golden.py makes them).

    make_imatrix_golden.py --llama-imatrix PATH --llama-quantize PATH [--lumen PATH]

Build both binaries from the llama.cpp source that llama-cpp-python vendors (DEVELOPERS.md),
outside the repository.
"""
import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import gguf
import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "scripts"))
sys.path.insert(0, str(REPO / "tests" / "python"))
from make_quantize_golden import DEFAULT_MODEL, make_inputs, made_by, tensor_digests  # noqa: E402
from synthetic_imatrix import layer_weights, write_synthetic_imatrix  # noqa: E402

TEXT = REPO / "tests" / "golden" / "imatrix" / "gfdl-1.3.txt"
IMATRIX_ARGS = ["-c", "512", "--chunks", "2"]
MOE_SYNTH_ARGS = ["synth", "qwen2moe-a2.7b-mini", "--layers", "2", "--type", "Q8_0"]
MOE_IMATRIX_ARGS = ["-c", "256", "--chunks", "2"]
SEED = {"synth-f16": 7, "smollm2-f16": 11}
# (input, type): the mixes people quantize with an imatrix and the legacy types whose FFN-down
# rule changes with one (their first layer's FFN down becomes Q4_1 / Q5_1, so those weighted
# quantizers are covered too), on random weights; the most used mixes on the real model's weights.
CASES = [("synth-f16", t) for t in ["Q2_K", "Q3_K_M", "Q5_K_M", "Q6_K", "Q4_0", "Q5_0"]] + \
        [("smollm2-f16", t) for t in ["Q4_K_M", "Q2_K"]]


def imatrix_statistics(path: Path) -> dict:
    reader = gguf.GGUFReader(path)
    tensors = {t.name: np.array(t.data, dtype=np.float64) for t in reader.tensors}
    stats = {}
    shapes = {t.name: [int(d) for d in t.shape] for t in reader.tensors}
    for name in sorted(n[:-len(".in_sum2")] for n in tensors if n.endswith(".in_sum2")):
        sums = tensors[f"{name}.in_sum2"]
        counts = tensors[f"{name}.counts"].reshape(-1)
        stats[name] = {"count": int(counts[0]), "columns": shapes[f"{name}.in_sum2"][0],
                       "sum": float(sums.sum()), "max": float(sums.max())}
        if len(counts) > 1:  # an expert tensor: its per-expert counts and sums
            stats[name]["counts"] = [int(c) for c in counts]
            stats[name]["expert_sums"] = [float(x) for x in sums.reshape(len(counts), -1).sum(axis=1)]
    fields = {k: reader.fields[k].contents() for k in ("general.type", "imatrix.chunk_count", "imatrix.chunk_size")}
    return {"metadata": fields, "entries": stats}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--llama-imatrix", type=Path, required=True)
    parser.add_argument("--llama-quantize", type=Path, required=True)
    parser.add_argument("--lumen", type=Path, default=REPO / "build" / "release" / "src" / "cli" / "lumen")
    parser.add_argument("--only-imatrix", action="store_true", help="skip the llama-quantize goldens")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "imatrix.gguf"
        subprocess.run([str(args.llama_imatrix), "-m", str(DEFAULT_MODEL), "-f", str(TEXT), "-o", str(out),
                        "--no-ppl", *IMATRIX_ARGS], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        golden = {"made_by": ["llama-imatrix", "-m", DEFAULT_MODEL.name, "-f", TEXT.name, *IMATRIX_ARGS],
                  **imatrix_statistics(out)}
        path = REPO / "tests" / "golden" / "imatrix" / "smollm2-gfdl.json"
        path.write_text(json.dumps(golden, indent=1) + "\n")
        print(f"wrote {path}")

        moe = Path(tmp) / "moe.gguf"
        subprocess.run([str(args.lumen), *MOE_SYNTH_ARGS, "--vocab", str(DEFAULT_MODEL), "-o", str(moe)], check=True,
                       stdout=subprocess.DEVNULL)
        subprocess.run([str(args.llama_imatrix), "-m", str(moe), "-f", str(TEXT), "-o", str(out), "--no-ppl",
                        *MOE_IMATRIX_ARGS], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        golden = {"made_by": ["lumen", *MOE_SYNTH_ARGS, "--vocab", DEFAULT_MODEL.name],
                  "imatrix_args": MOE_IMATRIX_ARGS, **imatrix_statistics(out)}
        path = REPO / "tests" / "golden" / "imatrix" / "moe-gfdl.json"
        path.write_text(json.dumps(golden, indent=1) + "\n")
        print(f"wrote {path}")

        if args.only_imatrix:
            return 0
        inputs = make_inputs(args.lumen, Path(tmp))
        golden = {"seeds": SEED, "made_by": {name: made_by(name) for name in SEED}, "cases": []}
        for name, seed in SEED.items():
            write_synthetic_imatrix(Path(tmp) / f"{name}.imatrix.gguf", layer_weights(str(args.lumen), inputs[name]),
                                    seed)
        for name, qtype in CASES:
            out = Path(tmp) / f"{name}-{qtype}.gguf"
            subprocess.run([str(args.llama_quantize), "--imatrix", str(Path(tmp) / f"{name}.imatrix.gguf"),
                            str(inputs[name]), str(out), qtype, "2"],
                           check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            golden["cases"].append({"input": name, "type": qtype, "tensors": tensor_digests(out)})
            out.unlink()
            print(f"{name} {qtype}: done")
        path = REPO / "tests" / "golden" / "quantize" / "imatrix.json"
        path.write_text(json.dumps(golden, indent=1) + "\n")
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
