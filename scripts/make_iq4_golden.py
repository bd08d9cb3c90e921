#!/usr/bin/env python3
"""Regenerates tests/golden/perplexity/llama_perplexity_iq4.json: what llama.cpp's llama-perplexity
reports on the IQ4_NL and IQ4_XS files `lumen quantize` writes from the default model, the
reference tests/python/test_iq4_models.py holds `lumen perplexity` to on the same bytes.

    LLAMA_CPP_COMMIT=3f545becc python3 scripts/make_iq4_golden.py LUMEN LLAMA_PERPLEXITY LLAMA_QUANTIZE

Each file is `lumen quantize --allow-requantize` of SmolLM2-135M-Instruct Q4_1 (its Q4_1 values,
requantized). Its sha256 is stored, so a change to Lumen's quantizer shows up as "regenerate"
rather than as a perplexity difference. llama-perplexity is built by hand outside the repository
(llama.cpp CPU, Release, GGML_NATIVE=ON); it reads the files as llama.cpp reads its own IQ4 files.
llama-quantize's file of the same type (its own bytes) is stored by tensor type only: Lumen's
file must choose the same type for every tensor.
"""
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from gguf import GGUFReader

REPO = Path(__file__).resolve().parent.parent
CACHE = Path(os.environ.get("LUMEN_CACHE") or Path.home() / ".cache" / "lumen" / "models")
MODEL = CACHE / "SmolLM2-135M-Instruct.Q4_1.gguf"
TEXT = REPO / "tests" / "golden" / "perplexity" / "gpl-3.0.txt"
OUT = REPO / "tests" / "golden" / "perplexity" / "llama_perplexity_iq4.json"
TYPES = ["IQ4_NL", "IQ4_XS"]
FLAGS = ["-c", "512"]


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def main() -> int:
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    lumen, llama_perplexity, llama_quantize = sys.argv[1:4]
    # A build from a source archive prints no commit: name it in LLAMA_CPP_COMMIT.
    golden = {"text_sha256": sha256(TEXT), "source_model_sha256": sha256(MODEL), "flags": FLAGS,
              "llama_cpp": os.environ.get("LLAMA_CPP_COMMIT", "unknown"), "files": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for qtype in TYPES:
            path = Path(tmp) / f"smollm2-{qtype}.gguf"
            subprocess.run([lumen, "quantize", "--allow-requantize", str(MODEL), str(path), qtype], check=True,
                           capture_output=True)
            run = subprocess.run([llama_perplexity, "-m", str(path), "-f", str(TEXT), "-t", "2", *FLAGS],
                                 capture_output=True, text=True, check=True)
            log = run.stdout + run.stderr
            final = re.search(r"Final estimate: PPL = ([0-9.]+) \+/- ([0-9.]+)", log)
            theirs = Path(tmp) / f"llama-{qtype}.gguf"
            subprocess.run([llama_quantize, "--allow-requantize", str(MODEL), str(theirs), qtype, "2"], check=True,
                           capture_output=True)
            golden["files"][qtype] = {"sha256": sha256(path), "ppl": float(final.group(1)),
                                      "ppl_error": float(final.group(2)),
                                      "llama_quantize_types": {t.name: t.tensor_type.name
                                                               for t in GGUFReader(theirs).tensors}}
            print(qtype, golden["files"][qtype]["ppl"])
    OUT.write_text(json.dumps(golden, indent=1) + "\n")
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
