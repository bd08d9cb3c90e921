#!/usr/bin/env python3
"""Image decode + preprocess time of src/image (bench/image_preprocess_bench) against transformers'
image processors on their PIL path (the reference the pixels match), one thread each, on the same
files in the same run. Not a test: prints one JSON object.

    python bench/compare_image_preprocess.py [--bench build/release/bench/image_preprocess_bench]

The Python needs transformers, numpy and Pillow (no torch). The images are made here: a
1280 x 960 photo-like picture (gradients and noise) as a JPEG (quality 90) and as a PNG with an
alpha channel. Each case is timed as the best of REPEATS runs of decode, then preprocess:
Pillow's Image.open + load and the processor call (which converts to RGB, resizes, rescales and
normalises), against Lumen's image::decode and image::preprocess / split_into_tiles.
"""
import argparse
import io
import json
import os
import subprocess
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import PIL  # noqa: E402
import transformers  # noqa: E402
from PIL import Image  # noqa: E402
from transformers import (CLIPImageProcessorPil, Gemma3ImageProcessorPil, Idefics3ImageProcessorPil,  # noqa: E402
                          SiglipImageProcessorPil)

REPO = Path(__file__).resolve().parent.parent
REPEATS = 10

# (name, processor, the bench's mode, size, Pillow filter): real models' settings.
CASES = [
    ("clip_336_llava", CLIPImageProcessorPil(size={"shortest_edge": 336}, crop_size={"height": 336, "width": 336}),
     "crop", 336, 3),
    ("siglip_384", SiglipImageProcessorPil(size={"height": 384, "width": 384}), "square", 384, 3),
    ("gemma3_896", Gemma3ImageProcessorPil(size={"height": 896, "width": 896}), "square", 896, 2),
    ("idefics3_1456_tiles_364", Idefics3ImageProcessorPil(size={"longest_edge": 1456},
                                                          max_image_size={"longest_edge": 364}), "tiles", 1456, 1),
]


def make_images(folder: Path) -> dict[str, Path]:
    rng = np.random.default_rng(0)
    y, x = np.mgrid[0:960, 0:1280].astype(np.float64)
    planes = [127 + 100 * np.sin((x * np.cos(a) + y * np.sin(a)) / 40.0) + rng.normal(0, 12, x.shape)
              for a in (0.3, 1.4, 2.6, 0.9)]
    rgba = np.clip(np.stack(planes, axis=-1), 0, 255).astype(np.uint8)
    paths = {"jpeg_1280x960": folder / "photo.jpg", "png_rgba_1280x960": folder / "photo.png"}
    Image.fromarray(rgba[..., :3]).save(paths["jpeg_1280x960"], quality=90)
    Image.fromarray(rgba, "RGBA").save(paths["png_rgba_1280x960"])
    return paths


def time_reference(data: bytes, processor) -> dict:
    decode, preprocess = float("inf"), float("inf")
    for _ in range(REPEATS):
        start = time.perf_counter()
        image = Image.open(io.BytesIO(data))
        image.load()
        decode = min(decode, time.perf_counter() - start)
        start = time.perf_counter()
        processor(images=image, return_tensors="np")
        preprocess = min(preprocess, time.perf_counter() - start)
    return {"decode_ms": round(decode * 1e3, 3), "preprocess_ms": round(preprocess * 1e3, 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bench", default=str(REPO / "build/release/bench/image_preprocess_bench"))
    args = parser.parse_args()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for image_name, path in make_images(Path(tmp)).items():
            data = path.read_bytes()
            for name, processor, mode, size, resample in CASES:
                out = subprocess.run([args.bench, str(path), mode, str(size), str(resample), str(REPEATS)], check=True,
                                     capture_output=True, text=True).stdout
                lumen = json.loads(out)
                reference = time_reference(data, processor)
                total_lumen = lumen["decode_ms"] + lumen["preprocess_ms"]
                total_ref = reference["decode_ms"] + reference["preprocess_ms"]
                results.append({"image": image_name, "processor": name, "lumen": lumen, "transformers_pil": reference,
                                "speedup": round(total_ref / total_lumen, 2)})
    print(json.dumps({"transformers": transformers.__version__, "pillow": PIL.__version__, "repeats": REPEATS,
                      "threads": 1, "results": results}, indent=1))


if __name__ == "__main__":
    main()
