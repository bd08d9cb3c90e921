#!/usr/bin/env python3
"""Regenerates tests/golden/vision/llava_logits.json: Hugging Face transformers' logits for the
tiny LLaVA (vlm_tiny_mmproj.py's "llava" projector, vlm_tiny_llava_text.py's language model) on
prompts with one and with two real images, the reference tests/unit/vision/vlm_logits_test.cc
holds Lumen's whole path to: image file -> decode -> preprocess -> vision encoder -> features at
the image tokens -> language model.

The images are PNGs of tests/golden/image (not square, so the processor's shortest-edge resize
and centre crop matter), preprocessed by transformers' CLIPImageProcessor (Pillow, bicubic) as
LlavaProcessor would; the prompts are fixed random token ids of the default model's vocabulary
around the image tokens (16 "<image>" ids per image, as LlavaProcessor expands them). Per
position the golden keeps the top 8 log-probabilities (log-softmax of the logits).

Run with a Python that has torch, transformers 5, Pillow and gguf-py (the default model's GGUF
must be in ~/.cache/lumen/models):
    /work/venvs/vlm-image/bin/python scripts/make_vlm_logits_golden.py
"""
import json
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch
import transformers
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parent))
import vlm_tiny_llava_text as text  # noqa: E402
import vlm_tiny_mmproj as tiny  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
IMAGES = ["tests/golden/image/rgb_37x23.png", "tests/golden/image/palette_20x14.png"]
PROMPT_SEED = 2052
TOP = 8


def build_model():
    from transformers import CLIPVisionConfig, LlamaConfig, LlavaConfig, LlavaForConditionalGeneration
    t = text.TEXT
    text_config = LlamaConfig(hidden_size=t["hidden_size"], intermediate_size=t["intermediate_size"],
                              num_hidden_layers=t["num_hidden_layers"], num_attention_heads=t["num_attention_heads"],
                              num_key_value_heads=t["num_key_value_heads"], rms_norm_eps=t["rms_norm_eps"],
                              rope_theta=t["rope_theta"], max_position_embeddings=t["max_position_embeddings"],
                              vocab_size=text.VOCAB_SIZE, tie_word_embeddings=False)
    config = LlavaConfig(vision_config=CLIPVisionConfig(**tiny.LLAVA["vision"]), text_config=text_config,
                         image_token_index=text.IMAGE_TOKEN_ID, projector_hidden_act="gelu",
                         vision_feature_layer=tiny.LLAVA["vision_feature_layer"],
                         vision_feature_select_strategy="default", tie_word_embeddings=False)
    torch.manual_seed(0)
    model = LlavaForConditionalGeneration(config).eval()
    vision, projector = tiny.llava_weights()
    tower = model.model.vision_tower
    prefix = "" if "vision_model.pre_layrnorm.weight" in tower.state_dict() else "vision_model."
    tower.load_state_dict({k.removeprefix(prefix): torch.from_numpy(a) for k, a in vision.items()}, strict=True)
    model.model.multi_modal_projector.load_state_dict(
        {k.split(".", 1)[1]: torch.from_numpy(a) for k, a in projector.items()}, strict=True)
    weights = text.text_weights()
    model.model.language_model.load_state_dict(
        {k.removeprefix("model."): torch.from_numpy(a) for k, a in weights.items() if k.startswith("model.")},
        strict=True)
    model.lm_head.load_state_dict({"weight": torch.from_numpy(weights["lm_head.weight"])}, strict=True)
    return model


def processor():
    from transformers import CLIPImageProcessor
    size = tiny.LLAVA["vision"]["image_size"]
    return CLIPImageProcessor(size={"shortest_edge": size}, crop_size={"height": size, "width": size},
                              resample=3, image_mean=tiny.LLAVA["image_mean"], image_std=tiny.LLAVA["image_std"],
                              do_convert_rgb=True)


def prompt(rng, pieces) -> list:
    """Token ids: an int n is n random text ids (past the special tokens), "img" one image's ids."""
    n_img = (tiny.LLAVA["vision"]["image_size"] // tiny.LLAVA["vision"]["patch_size"]) ** 2
    ids = []
    for p in pieces:
        ids += [text.IMAGE_TOKEN_ID] * n_img if p == "img" else [int(x) for x in rng.randint(17, 49152, size=p)]
    return ids


def main() -> None:
    model = build_model()
    proc = processor()
    pixels = proc(images=[Image.open(REPO / p) for p in IMAGES], return_tensors="pt")["pixel_values"]
    rng = np.random.RandomState(PROMPT_SEED)
    cases = [{"name": "one_image", "images": [0], "ids": prompt(rng, [5, "img", 7])},
             {"name": "two_images", "images": [0, 1], "ids": prompt(rng, [3, "img", 4, "img", 3])}]
    for case in cases:
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([case["ids"]]), pixel_values=pixels[case["images"]]).logits[0]
        logprobs = torch.log_softmax(logits.double(), dim=-1)
        top = torch.topk(logprobs, TOP, dim=-1)
        case["top_tokens"] = top.indices.tolist()
        case["top_logprobs"] = [[round(float(x), 6) for x in row] for row in top.values]
        case["images"] = [IMAGES[i] for i in case["images"]]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "text.gguf"
        text.write_text_model(path, text.DEFAULT_VOCAB)
        text_sha = text.sha256(path)
    golden = {
        "generator": {"script": "scripts/make_vlm_logits_golden.py", "torch": torch.__version__,
                      "transformers": transformers.__version__, "numpy": np.__version__,
                      "reference": "LlavaForConditionalGeneration, f32 on CPU; CLIPImageProcessor (Pillow) pixels"},
        "text_config": text.TEXT,
        "image_token_id": text.IMAGE_TOKEN_ID,
        "vocab_file": text.DEFAULT_VOCAB.name,
        "vocab_sha256": text.sha256(text.DEFAULT_VOCAB),
        "text_gguf_sha256": text_sha,
        "mmproj": "llava",
        "pixel_values_sum": [round(float(pixels[i].double().sum()), 4) for i in range(len(IMAGES))],
        "cases": cases,
    }
    out = "{\n" + ",\n".join(f" {json.dumps(k)}: {json.dumps(v)}" for k, v in golden.items()) + "\n}\n"
    text.GOLDEN.write_text(out, encoding="utf-8")
    print(f"wrote {text.GOLDEN}: text model {text_sha}")


if __name__ == "__main__":
    main()
