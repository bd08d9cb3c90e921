#!/usr/bin/env python3
"""Regenerates tests/golden/image/: small test images and what the reference makes of them, the
goldens tests/unit/image/image_golden_test.cc holds src/image to.

The reference is Hugging Face transformers' image processors on their PIL path (the slow
processors: CLIPImageProcessorPil, SiglipImageProcessorPil, Gemma3ImageProcessorPil), which
decode with Pillow, composite transparency onto white (convert_to_rgb), resize with Pillow,
rescale by 1/255 and normalise. For each image the golden holds:
  - the RGB pixels after convert_to_rgb (hex), which Lumen's decoder must reproduce exactly
    for lossless formats and does for JPEG too when both use libjpeg-turbo's accurate IDCT;
  - for three of them, Idefics3's image splitting (Idefics3ImageProcessorPil at a small scale):
    the grid and every tile, global image last;
  - the whole pixel tensor of each processor at a small square size (12 or 16; two images are
    smaller than that, so upscaling is exercised too), as integers in units of 1e-4 to keep the
    file small, which Lumen must match to 1e-3.

The images are made here with Pillow from a fixed seed: smooth gradients with noise (so every
resize filter's rounding shows), odd sizes, alpha, a palette with transparency, grayscale,
CMYK, progressive JPEG, lossy and lossless WebP, and a two-frame GIF (only the first frame
counts). Run with a Python that has transformers, numpy and Pillow 13 or later (no torch needed):
    python scripts/make_image_golden.py [--out tests/golden/image]

Why Pillow 13: it changed the resize's pass order (Pillow pull request 9549: the vertical pass
first when the height loses more than twice as many pixels as the width), which changes the
intermediate rounding, up to 3 levels on some pixels (0.02 after normalisation). src/image
follows Pillow 13, the current release, so the goldens must come from it.
"""
import argparse
import hashlib
import io
import json
import struct
from pathlib import Path

import numpy as np
import PIL
import transformers
from PIL import Image
from transformers import (CLIPImageProcessorPil, Gemma3ImageProcessorPil, Idefics3ImageProcessorPil,
                          SiglipImageProcessorPil)
from transformers.image_transforms import convert_to_rgb

SEED = 51


def pattern(width: int, height: int, rng: np.random.Generator, channels: int = 3) -> np.ndarray:
    """Gradients in different directions per channel plus noise: every pixel differs from its
    neighbours, so a filter that rounds differently is caught."""
    y, x = np.mgrid[0:height, 0:width].astype(np.float64)
    planes = []
    for c in range(channels):
        angle = 0.7 + 1.3 * c
        wave = 127 + 100 * np.sin((x * np.cos(angle) + y * np.sin(angle)) / (3.0 + c))
        planes.append(wave + rng.normal(0, 20, size=wave.shape))
    return np.clip(np.stack(planes, axis=-1), 0, 255).astype(np.uint8)


def encode(image: Image.Image, fmt: str, **options) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format=fmt, **options)
    return buffer.getvalue()


def gif_bytes(screen: tuple[int, int], frame_box: tuple[int, int, int, int], indices: np.ndarray,
              palette: list[tuple[int, int, int]], transparent: int | None) -> bytes:
    """A one-frame GIF89a written by hand (Pillow always writes a first frame that fills the
    screen): the frame at frame_box = (left, top, width, height) on a screen of the given size,
    four palette entries, LZW with a clear code before every pixel so every code is 3 bits."""
    out = bytearray(b"GIF89a") + struct.pack("<HH", *screen) + bytes([0x81, 0, 0])  # 4-entry palette
    for colour in palette:
        out += bytes(colour)
    if transparent is not None:
        out += bytes([0x21, 0xF9, 4, 1, 0, 0, transparent, 0])
    left, top, width, height = frame_box
    out += bytes([0x2C]) + struct.pack("<HHHH", left, top, width, height) + bytes([0, 2])
    bits, filled, data = 0, 0, bytearray()
    for code in [c for index in indices.reshape(-1) for c in (4, int(index))] + [5]:
        bits |= code << filled
        filled += 3
        while filled >= 8:
            data.append(bits & 0xFF)
            bits >>= 8
            filled -= 8
    if filled:
        data.append(bits & 0xFF)
    for at in range(0, len(data), 255):
        block = data[at:at + 255]
        out += bytes([len(block)]) + block
    return bytes(out + b"\x00\x3b")


def make_images(rng: np.random.Generator) -> dict[str, bytes]:
    images = {}
    images["rgb_37x23.png"] = encode(Image.fromarray(pattern(37, 23, rng)), "PNG")
    alpha = pattern(29, 41, rng, channels=4)
    alpha[:5, :, 3] = 0  # fully transparent rows, then graded alpha
    images["rgba_29x41.png"] = encode(Image.fromarray(alpha, "RGBA"), "PNG")
    palette = Image.fromarray(pattern(19, 17, rng)).quantize(colors=16, method=Image.Quantize.MEDIANCUT)
    images["palette_trns_19x17.png"] = encode(palette, "PNG", transparency=3)
    images["gray_21x33.png"] = encode(Image.fromarray(pattern(21, 33, rng, channels=1)[..., 0], "L"), "PNG")
    gray_alpha = pattern(26, 18, rng, channels=2)
    images["gray_alpha_26x18.png"] = encode(Image.fromarray(gray_alpha, "LA"), "PNG")
    photo = Image.fromarray(pattern(45, 31, rng))
    images["photo_45x31.jpg"] = encode(photo, "JPEG", quality=90)
    images["photo_444_31x45.jpg"] = encode(Image.fromarray(pattern(31, 45, rng)), "JPEG", quality=95, subsampling=0)
    images["progressive_40x28.jpg"] = encode(Image.fromarray(pattern(40, 28, rng)), "JPEG", quality=85,
                                             progressive=True)
    images["gray_27x19.jpg"] = encode(Image.fromarray(pattern(27, 19, rng, channels=1)[..., 0], "L"), "JPEG")
    images["cmyk_22x30.jpg"] = encode(Image.fromarray(pattern(22, 30, rng, channels=4), "CMYK"), "JPEG", quality=90)
    images["lossless_rgba_33x25.webp"] = encode(Image.fromarray(pattern(33, 25, rng, channels=4), "RGBA"), "WEBP",
                                                lossless=True)
    images["lossy_35x27.webp"] = encode(Image.fromarray(pattern(35, 27, rng)), "WEBP", quality=80)
    first = Image.fromarray(pattern(23, 29, rng)).quantize(colors=32)
    second = Image.fromarray(pattern(23, 29, rng)).quantize(colors=32)
    images["two_frames_23x29.gif"] = encode(first, "GIF", save_all=True, append_images=[second], transparency=5,
                                            duration=100)
    images["palette_20x14.png"] = encode(
        Image.fromarray(pattern(20, 14, rng)).quantize(colors=8, method=Image.Quantize.MEDIANCUT), "PNG")
    frames = [Image.fromarray(pattern(26, 21, rng), "RGB") for _ in range(2)]
    images["animated_26x21.webp"] = encode(frames[0], "WEBP", save_all=True, append_images=frames[1:], lossless=True,
                                           duration=100)
    # A first frame smaller than the screen: Pillow fills the rest with the transparent index, or
    # with index 0 when there is none.
    palette = [(200, 30, 40), (20, 180, 60), (30, 40, 220), (250, 250, 10)]
    indices = rng.integers(0, 4, size=(5, 7))
    images["offset_frame_trns_13x11.gif"] = gif_bytes((13, 11), (3, 4, 7, 5), indices, palette, transparent=2)
    images["offset_frame_13x11.gif"] = gif_bytes((13, 11), (5, 2, 7, 5), indices, palette, transparent=None)
    # Smaller than the processors' output: upscaled by every filter.
    images["tiny_9x7.png"] = encode(Image.fromarray(pattern(9, 7, rng)), "PNG")
    images["tiny_13x5.jpg"] = encode(Image.fromarray(pattern(13, 5, rng)), "JPEG", quality=92)
    return images


# (name, processor, size, resize mode, Pillow filter number): the processors Lumen's encoders
# follow. Idefics3/SmolVLM resizes with LANCZOS; the SigLIP processor with resample=1 gives it.
def processors(size: int):
    return [
        ("clip", CLIPImageProcessorPil(size={"shortest_edge": size}, crop_size={"height": size, "width": size}),
         "shortest_edge_center_crop"),
        ("siglip", SiglipImageProcessorPil(size={"height": size, "width": size}), "square"),
        ("gemma3", Gemma3ImageProcessorPil(size={"height": size, "width": size}), "square"),
        ("lanczos", SiglipImageProcessorPil(size={"height": size, "width": size}, resample=1), "square"),
    ]


# Idefics3/SmolVLM image splitting at a small scale (the real ones: 1456 or 2048, tiles of 364 to
# 512): a wide, a tall and an upscaled image, each cut into a grid plus the global image.
TILING = {"longest_edge": 32, "tile_size": 12}
TILING_IMAGES = ["rgb_37x23.png", "photo_444_31x45.jpg", "tiny_9x7.png"]


def tiling_case(data: bytes) -> dict:
    proc = Idefics3ImageProcessorPil(size={"longest_edge": TILING["longest_edge"]},
                                     max_image_size={"longest_edge": TILING["tile_size"]})
    out = proc(images=[Image.open(io.BytesIO(data))], return_tensors="np", return_row_col_info=True)
    tiles = out["pixel_values"][0]
    side = TILING["tile_size"]
    assert tiles.shape[1:] == (3, side, side), tiles.shape
    return {**TILING, "filter": int(proc.resample), "rescale_factor": float(proc.rescale_factor),
            "mean": [float(v) for v in proc.image_mean], "std": [float(v) for v in proc.image_std],
            "rows": int(out["rows"][0][0]), "cols": int(out["cols"][0][0]),
            "tiles_e4": [[int(round(float(v) * 1e4)) for v in tile.reshape(-1)] for tile in tiles]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent.parent / "tests/golden/image"))
    args = parser.parse_args()
    if int(PIL.__version__.split(".")[0]) < 13:
        parser.error(f"Pillow {PIL.__version__} resizes in another pass order; use Pillow 13 (see the docstring)")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(SEED)
    cases = []
    for index, (name, data) in enumerate(make_images(rng).items()):
        (out / name).write_bytes(data)
        rgb = convert_to_rgb(Image.open(io.BytesIO(data)), return_numpy=True)
        case = {"file": name, "sha256": hashlib.sha256(data).hexdigest(), "width": int(rgb.shape[1]),
                "height": int(rgb.shape[0]), "rgb_hex": rgb.astype(np.uint8).tobytes().hex(), "tensors": []}
        # Two sizes, so the kernels' widths vary; the tiny images are upscaled, the rest downscaled.
        size = 12 if index % 2 == 0 else 16
        for proc_name, proc, mode in processors(size):
            tensor = proc(images=Image.open(io.BytesIO(data)), return_tensors="np")["pixel_values"][0]
            assert tensor.shape == (3, size, size), tensor.shape
            case["tensors"].append({
                "processor": proc_name, "size": size, "mode": mode, "filter": int(proc.resample),
                "rescale_factor": float(proc.rescale_factor), "mean": [float(v) for v in proc.image_mean],
                "std": [float(v) for v in proc.image_std],
                "chw_e4": [int(round(float(v) * 1e4)) for v in tensor.reshape(-1)]})
        if name in TILING_IMAGES:
            case["idefics3_tiles"] = tiling_case(data)
        cases.append(case)
    golden = {"generator": "scripts/make_image_golden.py", "transformers": transformers.__version__,
              "pillow": PIL.__version__, "seed": SEED, "cases": cases}
    (out / "preprocess.json").write_text(json.dumps(golden, separators=(",", ":")) + "\n")
    print(f"{len(cases)} images, {sum(len(c['tensors']) for c in cases)} tensors -> {out}")


if __name__ == "__main__":
    main()
