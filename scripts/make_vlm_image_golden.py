#!/usr/bin/env python3
"""Regenerates tests/golden/vision/gemma3_image.json: the tiny Gemma 3 projector's features (of
vlm_tiny_mmproj.py's "gemma3" file) for a real PNG file, as transformers computes them from the
file: Gemma3ImageProcessor's Pillow path (squashed to the encoder's square with bilinear, mean
and std 0.5), then Gemma3ForConditionalGeneration.get_image_features. Lumen's image encoder
(vision::MmprojImageEncoder: decode, preprocess, encode) is held to it in unit_vlm.

    /work/venvs/vlm-image/bin/python scripts/make_vlm_image_golden.py
"""
import json
import sys
from pathlib import Path

import numpy as np
import torch
import transformers
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parent))
import make_vlm_models as models  # noqa: E402
import vlm_tiny_mmproj as tiny  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
IMAGE = "tests/golden/image/rgb_37x23.png"


def main() -> None:
    from transformers import Gemma3ImageProcessor
    spec = tiny.GEMMA3
    side = spec["vision"]["image_size"]
    proc = Gemma3ImageProcessor(size={"height": side, "width": side}, resample=2, image_mean=spec["image_mean"],
                                image_std=spec["image_std"], do_pan_and_scan=False, do_convert_rgb=True)
    pixels = proc(images=[Image.open(REPO / IMAGE)], return_tensors="pt")["pixel_values"]
    model = models.gemma3_model()
    with torch.no_grad():
        feats = models.feature_rows(model.get_image_features(pixel_values=pixels)).numpy().astype(np.float64)
    golden = {
        "generator": {"script": "scripts/make_vlm_image_golden.py", "torch": torch.__version__,
                      "transformers": transformers.__version__,
                      "reference": "Gemma3ImageProcessor (Pillow) + Gemma3ForConditionalGeneration.get_image_features"},
        "mmproj": "gemma3",
        "image": IMAGE,
        "features": [[round(float(x), 7) for x in row] for row in feats],
    }
    out = tiny.GOLDEN_DIR / "gemma3_image.json"
    out.write_text("{\n" + ",\n".join(f" {json.dumps(k)}: {json.dumps(v)}" for k, v in golden.items()) + "\n}\n")
    print(f"wrote {out}: {feats.shape}")


if __name__ == "__main__":
    main()
