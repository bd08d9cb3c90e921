"""A synthetic importance matrix in llama.cpp's imatrix GGUF format, for a given model's layer
weights: the same bytes on every machine, so llama-quantize --imatrix's output recorded once
(scripts/make_imatrix_golden.py) can be compared with `lumen quantize --imatrix` anywhere.

Real imatrices span many orders of magnitude from column to column (a few columns carry most of
the activation energy); here each column's mean square is (1 + k/1024) * 2^e with e in
[-12, 12], drawn from integers so every value is an exact binary fraction."""
import json
import subprocess

import gguf
import numpy as np

TOKENS = 1024  # the count every entry records


def layer_weights(lumen: str, model) -> list:
    """(name, columns) of every 2-D blk.* weight, from `lumen inspect --json`."""
    out = subprocess.run([lumen, "inspect", str(model), "--json"], check=True, capture_output=True).stdout
    return [(t["name"], t["shape"][0]) for t in json.loads(out)["tensors"]
            if t["name"].startswith("blk.") and len(t["shape"]) == 2]


def write_synthetic_imatrix(path, weights: list, seed: int, widen: str = "") -> None:
    """Writes the imatrix for `weights`; `widen` names one entry given one column too many (a
    mismatched file, for the error tests)."""
    rng = np.random.default_rng(seed)
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_string("general.type", "imatrix")
    writer.add_array("imatrix.datasets", ["synthetic"])
    writer.add_uint32("imatrix.chunk_count", TOKENS // 512)
    writer.add_uint32("imatrix.chunk_size", 512)
    for name, columns in sorted(weights):
        columns += 1 if name == widen else 0
        exponent = rng.integers(-12, 13, size=columns)
        mantissa = 1.0 + rng.integers(0, 1024, size=columns) / 1024.0
        sums = (mantissa * np.exp2(exponent.astype(np.float64)) * TOKENS).astype(np.float32)
        writer.add_tensor(f"{name}.in_sum2", sums)
        writer.add_tensor(f"{name}.counts", np.array([TOKENS], dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
