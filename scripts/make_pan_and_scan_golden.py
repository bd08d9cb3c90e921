#!/usr/bin/env python3
"""Regenerates tests/golden/image/pan_and_scan.json: transformers' Gemma3ImageProcessorPil with
do_pan_and_scan on the image goldens' files (wide, tall, nearly square, too small), the pixel
tensors of the whole image and of every crop, which unit_image's PanAndScan holds Lumen's
image::pan_and_scan_crops + preprocess to (1e-3). Small parameters (16-pixel squares, crops of
at least 4 pixels) keep the golden small; the arithmetic is the same at Gemma 3's 896 and 256.

    /work/venvs/vlm-image/bin/python scripts/make_pan_and_scan_golden.py
"""
import json
from pathlib import Path

import numpy as np
import transformers
from PIL import Image

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "tests" / "golden" / "image" / "pan_and_scan.json"
FILES = ["rgb_37x23.png", "rgba_29x41.png", "photo_45x31.jpg", "gray_21x33.png", "tiny_9x7.png", "palette_20x14.png",
         "tiny_13x5.jpg", "palette_trns_19x17.png"]
PARAMS = {"size": 16, "min_crop_size": 4, "max_num_crops": 3, "min_ratio_to_activate": 1.2}


def main() -> None:
    from transformers import Gemma3ImageProcessorPil
    p = PARAMS
    proc = Gemma3ImageProcessorPil(size={"height": p["size"], "width": p["size"]}, resample=2, image_mean=[0.5] * 3,
                                   image_std=[0.5] * 3, do_pan_and_scan=True,
                                   pan_and_scan_min_crop_size=p["min_crop_size"],
                                   pan_and_scan_max_num_crops=p["max_num_crops"],
                                   pan_and_scan_min_ratio_to_activate=p["min_ratio_to_activate"], do_convert_rgb=True)
    cases = []
    for name in FILES:
        out = proc(images=[Image.open(REPO / "tests/golden/image" / name)], return_tensors="np")
        pixels = np.asarray(out["pixel_values"], dtype=np.float64)
        cases.append({"file": name, "num_crops": int(np.asarray(out["num_crops"]).reshape(-1)[0]),
                      "pixels": [[round(float(x), 4) for x in t.reshape(-1)] for t in pixels]})
    golden = {"generator": {"script": "scripts/make_pan_and_scan_golden.py", "transformers": transformers.__version__,
                            "pillow": Image.__version__,
                            "reference": "Gemma3ImageProcessorPil, do_pan_and_scan, bilinear, mean and std 0.5"},
              "params": PARAMS, "cases": cases}
    OUT.write_text("{\n" + ",\n".join(f" {json.dumps(k)}: {json.dumps(v)}" for k, v in golden.items()) + "\n}\n")
    print(f"wrote {OUT}: " + ", ".join(f"{c['file']} {c['num_crops']} crops" for c in cases))


if __name__ == "__main__":
    main()
