#!/usr/bin/env python3
"""Runs llama.cpp's llama-quantize on the `lumen quantize` test inputs and records, per output
tensor, its type and the sha256 of its bytes (the first 16 hex digits): tests/golden/quantize/<input>.json, which
tests/python/test_cli_quantize.py compares `lumen quantize` with, tensor by tensor.

    make_quantize_golden.py --llama-quantize PATH/llama-quantize [--lumen PATH/lumen]

The inputs (made here exactly as the test makes them; their tensors' sha256 are recorded too):
  - smollm2-f16: the default model dequantized to F16 by scripts/make_f16_model.py;
  - synth-f16: `lumen synth smollm2-135m --type F16 --layers 8 --seed 5` (random weights in the
    default model's shapes), which takes every type.
Each case is (input, type, extra llama-quantize flags); see CASES. llama.cpp is not built here:
give the path of a llama-quantize binary you built.
"""
import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import gguf

REPO = Path(__file__).resolve().parent.parent
GOLDEN_DIR = REPO / "tests" / "golden" / "quantize"
DEFAULT_MODEL = Path.home() / ".cache" / "lumen" / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"

SYNTH_ARGS = ["synth", "smollm2-135m", "--type", "F16", "--layers", "8", "--seed", "5"]
ALL_TYPES = ["Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q2_K", "Q3_K_S", "Q3_K_M", "Q3_K_L",
             "Q4_K_S", "Q4_K_M", "Q5_K_S", "Q5_K_M", "Q6_K", "F16", "BF16", "F32"]
# (name, type, flags). The synthetic model takes every type, and the options; the real model
# the mixes people use most (its weights, not random ones, decide the K-quant searches).
CASES = {
    "synth-f16": [(t, t, []) for t in ALL_TYPES] + [
        ("Q2_K-pure", "Q2_K", ["--pure"]),
        ("Q4_K-pure", "Q4_K_M", ["--pure"]),
        ("Q5_K_M-out-q8-embd-q4", "Q5_K_M", ["--output-tensor-type", "q8_0",
                                              "--token-embedding-type", "q4_0"]),
    ],
    "smollm2-f16": [(t, t, []) for t in ["Q4_K_M", "Q6_K"]],
}


def tensor_digests(path: Path) -> dict:
    """{name: "TYPE sha256-prefix"} in file order; 16 hex digits tell tensors apart plenty."""
    reader = gguf.GGUFReader(path)
    return {t.name: f"{t.tensor_type.name} {hashlib.sha256(t.data.tobytes()).hexdigest()[:16]}"
            for t in reader.tensors}


def made_by(name: str) -> list:
    """How the input is made: the test makes it the same way (lumen's F16 conversion of the
    default model equals make_f16_model.py's, tensor for tensor, which the test checks)."""
    if name == "synth-f16":
        return ["lumen", *SYNTH_ARGS, "--vocab", DEFAULT_MODEL.name]
    return ["make_f16_model.py", DEFAULT_MODEL.name]


def make_inputs(lumen: Path, into: Path) -> dict:
    inputs = {"smollm2-f16": into / "smollm2-f16.gguf", "synth-f16": into / "synth-f16.gguf"}
    subprocess.run([sys.executable, str(REPO / "scripts" / "make_f16_model.py"), str(DEFAULT_MODEL),
                    str(inputs["smollm2-f16"])], check=True)
    subprocess.run([str(lumen), *SYNTH_ARGS, "--vocab", str(DEFAULT_MODEL), "-o",
                    str(inputs["synth-f16"])], check=True, stdout=subprocess.DEVNULL)
    return inputs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--llama-quantize", type=Path, required=True)
    parser.add_argument("--lumen", type=Path, default=REPO / "build" / "release" / "src" / "cli" / "lumen")
    parser.add_argument("--only", help="write only this input's golden file")
    args = parser.parse_args()
    GOLDEN_DIR.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        inputs = make_inputs(args.lumen, Path(tmp))
        for name, cases in CASES.items():
            if args.only and name != args.only:
                continue
            golden = {"input": name, "made_by": made_by(name), "input_tensors": tensor_digests(inputs[name]),
                      "cases": []}
            for case, qtype, flags in cases:
                out = Path(tmp) / f"{name}-{case}.gguf"
                command = [str(args.llama_quantize), *flags, str(inputs[name]), str(out), qtype, "2"]
                subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                reader = gguf.GGUFReader(out)
                file_type = int(reader.fields["general.file_type"].contents())
                golden["cases"].append({"case": case, "type": qtype, "flags": flags,
                                        "file_type": file_type, "tensors": tensor_digests(out)})
                out.unlink()
                print(f"{name} {case}: done")
            path = GOLDEN_DIR / f"{name}.json"
            path.write_text(json.dumps(golden, indent=1) + "\n")
            print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
