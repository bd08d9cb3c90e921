#!/usr/bin/env python3
"""Images that neither mtmd nor the processors change in resizing, for the mtmd logits golden
(make_vlm_mtmd_logits_golden.py), and transformers' answer for them.

The transformers goldens' images (37x23, 20x14) are resized by the processor (Pillow, with its
antialiasing filters) and by mtmd (its own bilinear/bicubic, no antialiasing) differently, so
on them mtmd's logits depart from transformers' for a reason that is preprocessing, not the
model. At 32x32 the resize is the identity on both sides (LLaVA: shortest edge 32 and a 32x32
crop; Gemma 3: 32x32), so there the families' models are compared alone. The two PNGs are
written from fixed seeds; the prompts are the transformers goldens' (an image takes as many
positions at 32x32 as at any size for these two families).
"""
import sys
from pathlib import Path

import numpy as np
import torch
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parent))

REPO = Path(__file__).resolve().parent.parent
NOISE = ["tests/golden/vision/noise_32x32_a.png", "tests/golden/vision/noise_32x32_b.png"]
SEEDS = [3201, 3202]
# Idefics3 resizes every image on both sides (to its longest edge, 64, even upwards, and the
# global tile down to 32), so no size avoids the filters; one colour survives any normalised
# filter, so uniform images of the transformers golden's sizes (the same tiles, the same ids)
# reach both encoders alike: the tiles' layout, positions and connector are compared, the
# tower's view of detail is not.
UNIFORM = [("tests/golden/vision/uniform_37x23.png", (37, 23), (200, 40, 90)),
           ("tests/golden/vision/uniform_13x5.png", (13, 5), (30, 160, 220))]
CASES = {"llava": ("_32x32", NOISE), "gemma3": ("_32x32", NOISE), "idefics3": ("_uniform", [u[0] for u in UNIFORM])}


def write_images() -> None:
    for path, seed in zip(NOISE, SEEDS):
        # Smooth noise (a random 8x8 grid upsampled), so neighbouring pixels are related as in a photo.
        coarse = np.random.RandomState(seed).randint(0, 256, size=(8, 8, 3)).astype(np.uint8)
        Image.fromarray(coarse).resize((32, 32), Image.BICUBIC).save(REPO / path, optimize=False)
    for path, size, colour in UNIFORM:
        Image.new("RGB", size, colour).save(REPO / path, optimize=False)


def transformers_top(family: str, ids: list, images: list, top: int):
    """Every position's top log-probabilities from the family's transformers model (the golden
    scripts' own builders and processors)."""
    pil = [Image.open(REPO / p).convert("RGB") for p in images]
    input_ids = torch.tensor([ids])
    with torch.no_grad():
        if family == "idefics3":
            import make_vlm_idefics3_logits_golden as g
            batch = g.image_processor()(images=[pil], return_tensors="pt")
            logits = g.build_model()(input_ids=input_ids, pixel_values=batch["pixel_values"],
                                     pixel_attention_mask=batch["pixel_attention_mask"]).logits[0]
        elif family == "llava":
            import make_vlm_logits_golden as g
            pixels = g.processor()(images=pil, return_tensors="pt")["pixel_values"]
            logits = g.build_model()(input_ids=input_ids, pixel_values=pixels).logits[0]
        else:
            import make_vlm_gemma3_logits_golden as g
            pixels = g.image_processor()(images=pil, return_tensors="pt")["pixel_values"]
            logits = g.build_model()(input_ids=input_ids, pixel_values=pixels,
                                     token_type_ids=(input_ids == g.SOFT).long()).logits[0]
    logprobs = torch.log_softmax(logits.double(), dim=-1)
    t = torch.topk(logprobs, top, dim=-1)
    return t.indices.tolist(), [[round(float(x), 6) for x in row] for row in t.values]
