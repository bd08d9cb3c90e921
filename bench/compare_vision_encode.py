#!/usr/bin/env python3
"""Lumen's vision encoder against llama.cpp's mtmd (libmtmd through llama-cpp-python), on the same
projector file, threads and machine, interleaved in one run. Prints JSON.

    python bench/compare_vision_encode.py [--threads 2] [--rounds 3] [--repeats 3]

The file is SmolVLM-256M's vision tower at full size (SigLIP-B/16, 512x512 pixels, 12 layers,
hidden 768; pixel shuffle by 4 to 64 tokens of 576 values) with seeded random f16 weights,
written by scripts/vlm_tiny_mmproj.py's Idefics3 writer into the build tree. SmolVLM-256M's
text model is SmolLM2-135M, whose width (576) mtmd checks the projector against: the default
model in ~/.cache/lumen/models serves as that text model (its weights are not used).

What is timed is one encoder pass over one 512x512 tile: Lumen's VisionModel::encode (through
tests/tools/vision_encode_tool) and mtmd_encode_chunk on an image chunk of a 512x512 image
(mtmd's preprocessing is outside the timing; its chunk's token count shows how many tiles it
encoded, and its time is divided by that). Needs a Python with llama-cpp-python (0.3.x, which
ships libmtmd), numpy and gguf: --python.
"""
import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "scripts"))
import vlm_tiny_mmproj as tiny  # noqa: E402

SMOLVLM_256M = {
    "seed": 256, "name": "SmolVLM-256M-vision-random",
    "vision": {"hidden_size": 768, "intermediate_size": 3072, "num_hidden_layers": 12, "num_attention_heads": 12,
               "image_size": 512, "patch_size": 16, "num_channels": 3, "layer_norm_eps": 1e-6},
    "text_hidden": 576, "scale_factor": 4, "longest_edge": 512,
    "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5],
}
TEXT_MODEL = Path.home() / ".cache" / "lumen" / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"

# Runs in the llama-cpp-python interpreter: mtmd's encode of one image chunk, timed.
MTMD_SNIPPET = r"""
import ctypes, json, sys, time
import numpy as np
import llama_cpp, llama_cpp.mtmd_cpp as mtmd
mmproj, text_model, threads, repeats = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
llama_cpp.llama_backend_init()
mp = llama_cpp.llama_model_default_params()
model = llama_cpp.llama_model_load_from_file(text_model.encode(), mp)
cp = mtmd.mtmd_context_params_default()
cp.use_gpu = False
cp.n_threads = threads
cp.print_timings = False
start = time.perf_counter()
ctx = mtmd.mtmd_init_from_file(mmproj.encode(), model, cp)
load_s = time.perf_counter() - start
assert ctx, "mtmd_init_from_file failed"
rgb = np.random.RandomState(7).randint(0, 256, size=(512, 512, 3), dtype=np.uint8)
bitmap = mtmd.mtmd_bitmap_init(512, 512, rgb.ctypes.data_as(ctypes.POINTER(ctypes.c_ubyte)))
chunks = mtmd.mtmd_input_chunks_init()
text = mtmd.mtmd_input_text()
marker = mtmd.mtmd_default_marker()
text.text = marker
text.text_len = len(marker)
text.add_special = False
text.parse_special = True
bitmaps = (mtmd.mtmd_bitmap_p_ctypes * 1)(bitmap)
assert mtmd.mtmd_tokenize(ctx, chunks, ctypes.byref(text), bitmaps, 1) == 0
image = None
for i in range(mtmd.mtmd_input_chunks_size(chunks)):
    c = mtmd.mtmd_input_chunks_get(chunks, i)
    if mtmd.mtmd_input_chunk_get_type(c) == mtmd.MTMD_INPUT_CHUNK_TYPE_IMAGE:
        image = c
tokens = mtmd.mtmd_input_chunk_get_n_tokens(image)
assert mtmd.mtmd_encode_chunk(ctx, image) == 0  # warm-up
times = []
for _ in range(repeats):
    t = time.perf_counter()
    assert mtmd.mtmd_encode_chunk(ctx, image) == 0
    times.append(time.perf_counter() - t)
print(json.dumps({"load_s": load_s, "encode_s": times, "image_tokens": tokens}))
"""


def run_lumen(tool: Path, mmproj: Path, threads: int, repeats: int) -> dict:
    out = subprocess.run([str(tool), str(mmproj), str(threads), str(repeats)], check=True, capture_output=True,
                         text=True)
    return json.loads(out.stdout)


def run_mtmd(python: str, mmproj: Path, threads: int, repeats: int) -> dict:
    out = subprocess.run([python, "-c", MTMD_SNIPPET, str(mmproj), str(TEXT_MODEL), str(threads), str(repeats)],
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"mtmd run failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def summary(per_tile: list) -> dict:
    return {"median_s": statistics.median(per_tile), "mean_s": statistics.fmean(per_tile),
            "stdev_s": statistics.stdev(per_tile) if len(per_tile) > 1 else 0.0,
            "tiles_per_s": 1.0 / statistics.median(per_tile), "samples": len(per_tile)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--python", default=sys.executable, help="a Python with llama-cpp-python (libmtmd)")
    ap.add_argument("--tool", type=Path, default=REPO / "build/release/tests/tools/vision_encode_tool")
    ap.add_argument("--file", type=Path, default=REPO / "build/release/tests/generated/bench-smolvlm-256m.mmproj.gguf")
    args = ap.parse_args()
    if not args.file.exists():
        args.file.parent.mkdir(parents=True, exist_ok=True)
        tiny.write_idefics3(args.file, SMOLVLM_256M)
    lumen, peer, tokens = [], [], {}
    for r in range(args.rounds):
        order = [("lumen", "mtmd"), ("mtmd", "lumen")][r % 2]
        for who in order:
            if who == "lumen":
                res = run_lumen(args.tool, args.file, args.threads, args.repeats)
                lumen += res["encode_s"]
                tokens["lumen"] = res["image_tokens"]
            else:
                res = run_mtmd(args.python, args.file, args.threads, args.repeats)
                tiles = max(1, res["image_tokens"] // 64)
                peer += [t / tiles for t in res["encode_s"]]
                tokens["mtmd"] = res["image_tokens"]
    result = {
        "model": "SmolVLM-256M vision tower shape (idefics3), random f16 weights",
        "threads": args.threads, "image": "one 512x512 tile, 64 tokens", "image_tokens": tokens,
        "lumen": summary(lumen), "llama_cpp_mtmd": summary(peer),
        "lumen_over_mtmd_speed": statistics.median(peer) / statistics.median(lumen),
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
