#!/usr/bin/env python3
"""Writes an F16 copy of a GGUF model: every tensor of two or more dimensions dequantized with
gguf-py and stored as f16, the 1-D ones (norms, biases) as f32, the metadata copied with
general.file_type set to 1 (llama.cpp's MOSTLY_F16).

The input of the `lumen quantize` golden test (tests/python/test_cli_quantize.py): no F16
model can be downloaded here, so one is made from the default model. gguf-py's dequantization
is bit-exact with ggml's and numpy rounds to f16 to nearest-even as ggml does, so the file is
the same on every machine (the golden JSON records its tensors' sha256 to prove it).

    make_f16_model.py IN.gguf OUT.gguf

Run with a Python that has gguf and numpy (scripts/setup.sh's venv).
"""
import sys

import numpy as np
import gguf
from gguf import GGMLQuantizationType as T, GGUFValueType as V

MOSTLY_F16 = 1


def copy_metadata(reader: gguf.GGUFReader, writer: gguf.GGUFWriter) -> None:
    for field in reader.fields.values():
        # GGUF.* are the header's pseudo-fields; the writer adds general.architecture itself.
        if field.name.startswith("GGUF.") or field.name in ("general.architecture", "general.file_type"):
            continue
        vtype = field.types[0]
        sub_type = field.types[-1] if vtype == V.ARRAY else None
        writer.add_key_value(field.name, field.contents(), vtype, sub_type)
    writer.add_uint32("general.file_type", MOSTLY_F16)


def f16_or_f32(tensor) -> np.ndarray:
    values = gguf.quants.dequantize(tensor.data, tensor.tensor_type)
    shape = tuple(int(d) for d in reversed(tensor.shape))  # numpy order: the row is last
    values = np.asarray(values, dtype=np.float32).reshape(shape)
    effective_dims = max((i + 1 for i, d in enumerate(tensor.shape) if d > 1), default=1)
    return values.astype(np.float16) if effective_dims >= 2 else values


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    reader = gguf.GGUFReader(sys.argv[1])
    arch = reader.fields["general.architecture"].contents()
    writer = gguf.GGUFWriter(sys.argv[2], arch)
    copy_metadata(reader, writer)
    for tensor in reader.tensors:
        writer.add_tensor(tensor.name, f16_or_f32(tensor))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
