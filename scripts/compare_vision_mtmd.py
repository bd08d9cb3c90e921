#!/usr/bin/env python3
"""The tiny vision goldens' files through llama.cpp's mtmd (libmtmd via llama-cpp-python) and
through Lumen's encoder, on the same 32x32 RGB image, against each other and (for reference)
how each differs from a one-layer-short Lumen run. Prints JSON; not a test (CI has no
llama-cpp-python).

    PY_WITH_LLAMA_CPP=... python scripts/compare_vision_mtmd.py --python $PY_WITH_LLAMA_CPP

mtmd needs a text model whose width matches the projector's output (96 here): a one-layer
random llama of that width is written beside the files, with the default model's tokenizer
(mtmd tokenizes the prompt around the image marker). The image is 32x32, the encoders' own
size, so mtmd's resize is the identity and both see (u8 / 255 - mean) / std; Idefics3 is left
out (mtmd splits even a small image into tiles plus an overview at preproc_image_size).
"""
import argparse
import json
import subprocess
import sys
from pathlib import Path

import gguf
import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "scripts"))
import vlm_tiny_mmproj as tiny  # noqa: E402

DEFAULT_MODEL = Path.home() / ".cache" / "lumen" / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"

# Runs under the llama-cpp-python interpreter: mtmd's features for the image, to a raw f32 file.
MTMD = r"""
import ctypes, sys
import numpy as np
import llama_cpp, llama_cpp.mtmd_cpp as mtmd
mmproj, text_model, image_file, out_file = sys.argv[1:5]
rgb = np.load(image_file)
llama_cpp.llama_backend_init()
model = llama_cpp.llama_model_load_from_file(text_model.encode(), llama_cpp.llama_model_default_params())
cp = mtmd.mtmd_context_params_default()
cp.use_gpu = False
cp.n_threads = 1
ctx = mtmd.mtmd_init_from_file(mmproj.encode(), model, cp)
assert ctx
h, w, _ = rgb.shape
bitmap = mtmd.mtmd_bitmap_init(w, h, rgb.ctypes.data_as(ctypes.POINTER(ctypes.c_ubyte)))
chunks = mtmd.mtmd_input_chunks_init()
text = mtmd.mtmd_input_text()
marker = mtmd.mtmd_default_marker()
text.text = marker
text.text_len = len(marker)
text.add_special = False
text.parse_special = True
assert mtmd.mtmd_tokenize(ctx, chunks, ctypes.byref(text), (mtmd.mtmd_bitmap_p_ctypes * 1)(bitmap), 1) == 0
for i in range(mtmd.mtmd_input_chunks_size(chunks)):
    c = mtmd.mtmd_input_chunks_get(chunks, i)
    if mtmd.mtmd_input_chunk_get_type(c) == mtmd.MTMD_INPUT_CHUNK_TYPE_IMAGE:
        image = c
n = mtmd.mtmd_input_chunk_get_n_tokens(image)
assert mtmd.mtmd_encode_chunk(ctx, image) == 0
embd = mtmd.mtmd_get_output_embd(ctx)
width = llama_cpp.llama_model_n_embd(model)
np.ctypeslib.as_array(embd, shape=(n * width,)).astype(np.float32).tofile(out_file)
"""


def tiny_text_model(path: Path, width: int) -> None:
    """A one-layer random llama of the given width with the default model's tokenizer."""
    src = gguf.GGUFReader(str(DEFAULT_MODEL))
    out = gguf.GGUFWriter(str(path), arch="llama")
    for name, field in src.fields.items():
        if not name.startswith("tokenizer."):
            continue
        vtype = field.types[0]
        sub = field.types[-1] if vtype == gguf.GGUFValueType.ARRAY else None
        out.add_key_value(name, field.contents(), vtype, sub_type=sub)
    vocab = len(src.fields["tokenizer.ggml.tokens"].data)
    out.add_context_length(256)
    out.add_embedding_length(width)
    out.add_block_count(1)
    out.add_feed_forward_length(2 * width)
    out.add_head_count(2)
    out.add_head_count_kv(2)
    out.add_layer_norm_rms_eps(1e-5)
    out.add_rope_dimension_count(width // 2)
    out.add_vocab_size(vocab)
    rng = np.random.RandomState(1)
    mats = {"token_embd.weight": (vocab, width), "blk.0.attn_q.weight": (width, width),
            "blk.0.attn_k.weight": (width, width), "blk.0.attn_v.weight": (width, width),
            "blk.0.attn_output.weight": (width, width), "blk.0.ffn_gate.weight": (2 * width, width),
            "blk.0.ffn_up.weight": (2 * width, width), "blk.0.ffn_down.weight": (width, 2 * width)}
    for name, shape in mats.items():
        out.add_tensor(name, (rng.standard_normal(shape) * 0.02).astype(np.float16))
    for name in ("output_norm.weight", "blk.0.attn_norm.weight", "blk.0.ffn_norm.weight"):
        out.add_tensor(name, np.ones(width, dtype=np.float32))
    out.write_header_to_file()
    out.write_kv_data_to_file()
    out.write_tensors_to_file()
    out.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--python", required=True, help="a Python with llama-cpp-python (libmtmd)")
    ap.add_argument("--tool", type=Path, default=REPO / "build/release/tests/tools/vision_encode_tool")
    ap.add_argument("--dir", type=Path, default=REPO / "build/release/tests/generated")
    args = ap.parse_args()
    text = args.dir / "vlm-text-96.gguf"
    tiny_text_model(text, 96)
    results = {}
    for name, spec in (("llava", tiny.LLAVA), ("gemma3", tiny.GEMMA3)):
        mmproj = tiny.golden_mmproj(name, args.dir)
        size = spec["vision"]["image_size"]
        rgb = np.random.RandomState(11).randint(0, 256, size=(size, size, 3), dtype=np.uint8)
        np.save(args.dir / "vlm-image.npy", rgb)
        mean, std = np.asarray(spec["image_mean"], np.float32), np.asarray(spec["image_std"], np.float32)
        chw = ((rgb.astype(np.float32) / 255.0 - mean) / std).transpose(2, 0, 1).astype(np.float32)
        chw.tofile(args.dir / "vlm-pixels.f32")
        subprocess.run([args.python, "-c", MTMD, str(mmproj), str(text), str(args.dir / "vlm-image.npy"),
                        str(args.dir / "vlm-mtmd.f32")], check=True, capture_output=True)
        subprocess.run([str(args.tool), str(mmproj), "1", "0", str(args.dir / "vlm-pixels.f32"),
                        str(args.dir / "vlm-lumen.f32")], check=True, capture_output=True)
        mtmd = np.fromfile(args.dir / "vlm-mtmd.f32", dtype=np.float32)
        lumen = np.fromfile(args.dir / "vlm-lumen.f32", dtype=np.float32)
        entry = {"values": int(lumen.size), "mtmd_values": int(mtmd.size)}
        if mtmd.size == lumen.size:
            entry["max_abs_diff_over_max_abs"] = float(np.abs(mtmd - lumen).max() / np.abs(lumen).max())
        if name == "llava":
            # llama.cpp's graph runs one layer fewer than the file holds (its issue 25817):
            # Lumen made to do the same (feature_layer 1 of 2) should land on mtmd's features.
            short = args.dir / "vlm-llava.one-layer-short.gguf"
            tiny.write_llava(short, explicit_feature_layer=1)
            subprocess.run([str(args.tool), str(short), "1", "0", str(args.dir / "vlm-pixels.f32"),
                            str(args.dir / "vlm-lumen-short.f32")], check=True, capture_output=True)
            lumen_short = np.fromfile(args.dir / "vlm-lumen-short.f32", dtype=np.float32)
            entry["one_layer_short_vs_mtmd"] = float(np.abs(mtmd - lumen_short).max() / np.abs(lumen_short).max())
        results[name] = entry
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
