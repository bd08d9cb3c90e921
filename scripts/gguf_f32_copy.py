#!/usr/bin/env python3
"""A copy of a GGUF file with its f16 tensors widened to f32 (the same numbers: every f16 is an
f32), keys and tensor order unchanged.

Why: llama.cpp's CPU matrix products round the activations to f16 when the weights are f16, so
on the tiny VLM files mtmd's rows carry that rounding (about 0.01 in log-probability) and
transformers' and Lumen's (f32 activations) do not. On f32 copies mtmd computes the same numbers
at f32, which separates its precision from what it computes (make_vlm_mtmd_logits_golden.py).

    python scripts/gguf_f32_copy.py IN.gguf OUT.gguf
"""
import sys

import gguf
import numpy as np


def f32_copy(src: str, dst: str) -> None:
    reader = gguf.GGUFReader(src)
    arch = reader.fields["general.architecture"].contents()
    out = gguf.GGUFWriter(dst, arch=arch)
    for name, field in reader.fields.items():
        if name.startswith("GGUF.") or name in ("general.architecture", "general.alignment"):
            continue  # the header's own fields, and what the writer writes itself
        vtype = field.types[0]
        sub = field.types[-1] if vtype == gguf.GGUFValueType.ARRAY else None
        out.add_key_value(name, field.contents(), vtype, sub_type=sub)
    for t in reader.tensors:
        data = np.asarray(t.data)
        if t.tensor_type == gguf.GGMLQuantizationType.F16:
            data = data.astype(np.float32)
        elif t.tensor_type != gguf.GGMLQuantizationType.F32:
            raise SystemExit(f"{src}: {t.name} is {t.tensor_type.name}; only f16 and f32 are widened")
        # The reader's arrays are in the file's (reversed) order already: shape as numpy sees it.
        out.add_tensor(t.name, data)
    out.write_header_to_file()
    out.write_kv_data_to_file()
    out.write_tensors_to_file()
    out.close()


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit("usage: gguf_f32_copy.py IN.gguf OUT.gguf")
    f32_copy(sys.argv[1], sys.argv[2])
