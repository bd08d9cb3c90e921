#!/usr/bin/env python3
"""Writes a copy of a GGUF model with every quantized tensor dequantized to F32: the function the
quantized weights define, computed without 8-bit activations or any engine's rounding choices.
Used by bench/compare_rounding.py as the yardstick engines' quantized kernels are measured
against. Reads and writes with gguf-py (llama.cpp's own GGUF library, `pip install gguf`), so
nothing of Lumen's is involved in the reference.

    python3 scripts/dequantize_gguf.py MODEL.gguf OUT.f32.gguf
"""
import sys

import gguf
import numpy as np

SKIPPED_FIELDS = ("GGUF.", "general.file_type")


def copy_fields(reader: gguf.GGUFReader, writer: gguf.GGUFWriter) -> None:
    for field in reader.fields.values():
        if field.name.startswith(SKIPPED_FIELDS) or field.name == gguf.Keys.General.ARCHITECTURE:
            continue
        vtype = field.types[0]
        sub_type = field.types[-1] if vtype == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(field.name, field.contents(), vtype, sub_type=sub_type)
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)


def main() -> None:
    src, dst = sys.argv[1], sys.argv[2]
    reader = gguf.GGUFReader(src)
    arch = reader.fields[gguf.Keys.General.ARCHITECTURE].contents()
    writer = gguf.GGUFWriter(dst, arch)
    copy_fields(reader, writer)
    for t in reader.tensors:
        values = gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float32)
        # GGUF lists dimensions innermost first; numpy wants them outermost first.
        writer.add_tensor(t.name, values.reshape(tuple(int(d) for d in reversed(t.shape))))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


if __name__ == "__main__":
    main()
