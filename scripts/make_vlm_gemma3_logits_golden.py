#!/usr/bin/env python3
"""Regenerates tests/golden/vision/gemma3_logits.json: Hugging Face transformers' logits for the
tiny Gemma 3 (vlm_tiny_mmproj.py's "gemma3" projector, vlm_tiny_gemma3_text.py's language model)
on prompts with one and with two real images, the reference
tests/unit/vision/vlm_gemma3_logits_test.cc holds Lumen's path to: image file -> decode -> Gemma
3's bilinear squash -> SigLIP tower, pooling, norm, projection -> the features at the image's
positions between "\\n\\n<start_of_image>" and "<end_of_image>\\n\\n" -> the Gemma 3 decoder
(image rows not scaled by sqrt(embedding_length), token rows scaled).

Two references per case. Gemma3ForConditionalGeneration given the processor's token_type_ids
lets an image's positions attend to each other both ways (the mask is causal everywhere else);
without them it is causal throughout. Both are kept: "top_*" with token_type_ids (what the
processor drives), "causal_top_*" without (what a causal engine computes).

The image text is transformers' own: Gemma3Processor.replace_image_token (its
full_image_sequence) for an image without pan-and-scan crops, turned into ids with the tiny
vocabulary (control tokens and newlines only). The rest of the prompt is fixed random token ids.

Run with a Python that has torch, transformers 5, Pillow and gguf-py:
    /work/venvs/vlm-image/bin/python scripts/make_vlm_gemma3_logits_golden.py
"""
import json
import re
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import torch
import transformers
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parent))
import make_vlm_idefics3_logits_golden as idefics3_golden  # noqa: E402
import make_vlm_models as models  # noqa: E402
import vlm_tiny_gemma3_text as text  # noqa: E402
import vlm_tiny_mmproj as tiny  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
IMAGES = ["tests/golden/image/rgb_37x23.png", "tests/golden/image/palette_20x14.png"]
PROMPT_SEED = 2054
TOP = 8
BOI, EOI, SOFT = (text.TOKEN_IDS[t] for t in text.ADDED)


def build_model():
    from transformers import Gemma3Config, Gemma3ForConditionalGeneration, Gemma3TextConfig, SiglipVisionConfig
    t, spec = text.TEXT, tiny.GEMMA3
    text_config = Gemma3TextConfig(
        vocab_size=text.VOCAB_SIZE, hidden_size=t["hidden_size"], intermediate_size=t["intermediate_size"],
        num_hidden_layers=t["num_hidden_layers"], num_attention_heads=t["num_attention_heads"],
        num_key_value_heads=t["num_key_value_heads"], head_dim=t["head_dim"], rms_norm_eps=t["rms_norm_eps"],
        max_position_embeddings=t["max_position_embeddings"], query_pre_attn_scalar=t["head_dim"],
        sliding_window=t["sliding_window"], layer_types=["sliding_attention"] * t["num_hidden_layers"],
        rope_parameters={"full_attention": {"rope_type": "default", "rope_theta": t["rope_theta"]},
                         "sliding_attention": {"rope_type": "default", "rope_theta": t["rope_local_base_freq"]}},
        tie_word_embeddings=True)
    config = Gemma3Config(text_config=text_config,
                          vision_config=SiglipVisionConfig(**spec["vision"], hidden_act="gelu_pytorch_tanh",
                                                           vision_use_head=False),
                          mm_tokens_per_image=spec["mm_tokens_per_image"], boi_token_index=BOI, eoi_token_index=EOI,
                          image_token_index=SOFT, tie_word_embeddings=True)
    torch.manual_seed(0)
    model = Gemma3ForConditionalGeneration(config).eval()
    tower, projector = tiny.gemma3_weights()
    models.load_into(model.model.vision_tower, tower)
    model.model.multi_modal_projector.load_state_dict({k: torch.from_numpy(a) for k, a in projector.items()},
                                                       strict=True)
    weights = text.text_weights()
    model.model.language_model.load_state_dict(
        {k.removeprefix("model."): torch.from_numpy(a) for k, a in weights.items()}, strict=True)
    assert torch.equal(model.lm_head.weight, model.model.language_model.embed_tokens.weight), "the head is not tied"
    return model


def image_processor():
    from transformers import Gemma3ImageProcessorPil
    spec = tiny.GEMMA3
    size = spec["vision"]["image_size"]
    return Gemma3ImageProcessorPil(size={"height": size, "width": size}, resample=2, image_mean=spec["image_mean"],
                                   image_std=spec["image_std"], do_pan_and_scan=False)


def processor_text() -> str:
    """Gemma3Processor's text for one image without crops: its own __init__ sets the attributes
    replace_image_token reads (before it checks the tokenizer, which the tiny model does not
    have as a transformers object), then its own method writes the string."""
    from transformers import Gemma3Processor
    tok = SimpleNamespace(boi_token="<start_of_image>", boi_token_id=BOI, image_token="<image_soft_token>",
                          eoi_token="<end_of_image>")
    proc = object.__new__(Gemma3Processor)
    try:
        Gemma3Processor.__init__(proc, None, tok, image_seq_length=tiny.GEMMA3["mm_tokens_per_image"])
    except Exception:  # noqa: BLE001: the base class refuses the stand-in tokenizer, after the attributes are set
        pass
    return Gemma3Processor.replace_image_token(proc, {"num_crops": [0]}, 0)


def expand_ids(s: str, newlines: dict) -> list:
    specials = sorted(text.TOKEN_IDS, key=len, reverse=True)
    ids = []
    for part in re.split("(" + "|".join(map(re.escape, specials)) + ")", s):
        if part:
            ids.append(text.TOKEN_IDS[part] if part in text.TOKEN_IDS else newlines[part])
    return ids


def top(logits):
    logprobs = torch.log_softmax(logits.double(), dim=-1)
    t = torch.topk(logprobs, TOP, dim=-1)
    return t.indices.tolist(), [[round(float(x), 6) for x in row] for row in t.values]


def main() -> None:
    model = build_model()
    proc = image_processor()
    pil = [Image.open(REPO / p) for p in IMAGES]
    image_ids = expand_ids(processor_text(), idefics3_golden.newline_ids(text.llava_text.DEFAULT_VOCAB))
    rng = np.random.RandomState(PROMPT_SEED)
    cases = [{"name": "one_image", "images": [0], "pieces": [5, "img", 7]},
             {"name": "two_images", "images": [0, 1], "pieces": [3, "img", 4, "img", 3]}]
    for case in cases:
        marker_ids, ids = [], []
        for p in case.pop("pieces"):
            if p == "img":
                marker_ids.append(BOI)
                ids += image_ids
            else:
                run = [int(x) for x in rng.randint(17, 49152, size=p)]
                marker_ids += run
                ids += run
        pixels = proc(images=[pil[i] for i in case["images"]], return_tensors="pt")["pixel_values"]
        input_ids = torch.tensor([ids])
        with torch.no_grad():
            both_ways = model(input_ids=input_ids, pixel_values=pixels,
                              token_type_ids=(input_ids == SOFT).long()).logits[0]
            causal = model(input_ids=input_ids, pixel_values=pixels).logits[0]
        case["images"] = [IMAGES[i] for i in case["images"]]
        case["marker_ids"] = marker_ids
        case["ids"] = ids
        case["top_tokens"], case["top_logprobs"] = top(both_ways)
        case["causal_top_tokens"], case["causal_top_logprobs"] = top(causal)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "text.gguf"
        text.write_text_model(path, text.llava_text.DEFAULT_VOCAB)
        text_sha = text.llava_text.sha256(path)
    golden = {
        "generator": {"script": "scripts/make_vlm_gemma3_logits_golden.py", "torch": torch.__version__,
                      "transformers": transformers.__version__, "numpy": np.__version__,
                      "reference": "Gemma3ForConditionalGeneration, f32 on CPU, with token_type_ids (top_*) and "
                                   "without (causal_top_*); Gemma3ImageProcessorPil pixels; "
                                   "Gemma3Processor.replace_image_token prompt text"},
        "text_config": text.TEXT,
        "image_soft_token_id": SOFT,
        "vocab_file": text.llava_text.DEFAULT_VOCAB.name,
        "text_gguf_sha256": text_sha,
        "mmproj": "gemma3",
        "cases": cases,
    }
    out = "{\n" + ",\n".join(f" {json.dumps(k)}: {json.dumps(v)}" for k, v in golden.items()) + "\n}\n"
    text.GOLDEN.write_text(out, encoding="utf-8")
    print(f"wrote {text.GOLDEN}: text model {text_sha}")


if __name__ == "__main__":
    main()
