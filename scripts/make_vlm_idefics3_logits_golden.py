#!/usr/bin/env python3
"""Regenerates tests/golden/vision/idefics3_logits.json: Hugging Face transformers' logits for the
tiny Idefics3 (vlm_tiny_mmproj.py's "idefics3" projector, vlm_tiny_idefics3_text.py's language
model) on prompts with one and with two real images, the reference
tests/unit/vision/vlm_idefics3_logits_test.cc holds Lumen's whole path to: image file -> decode ->
Idefics3's image splitting (tiles plus the global tile) -> vision encoder per tile -> each tile's
features at its own image tokens, between the row/column markers -> language model.

The images are files of tests/golden/image (not square: 37 x 23 is cut into 2 x 2 tiles, 13 x 5
into 1 x 2, after the longest side is resized to 64 and the tiles are 32), preprocessed by
transformers' Idefics3ImageProcessorPil (Lanczos). The prompt text of each image is
transformers' own: Idefics3Processor.replace_image_token (the method its __call__ expands each
"<image>" with) for the image's rows and columns, turned into ids with the tiny vocabulary (it is
control tokens and newlines only). The rest of the prompt is fixed random token ids of the
default model's vocabulary. The golden keeps both the prompt as the chat template writes it (one
"<image>" id per image) and as the processor expands it, and per position the top 8
log-probabilities (log-softmax of the logits).

Run with a Python that has torch, transformers 5, Pillow and gguf-py (the default model's GGUF
must be in ~/.cache/lumen/models):
    /work/venvs/vlm-image/bin/python scripts/make_vlm_idefics3_logits_golden.py
"""
import json
import re
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace

import gguf
import numpy as np
import torch
import transformers
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parent))
import make_vlm_models as models  # noqa: E402
import vlm_tiny_idefics3_text as text  # noqa: E402
import vlm_tiny_mmproj as tiny  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
IMAGES = ["tests/golden/image/rgb_37x23.png", "tests/golden/image/tiny_13x5.jpg"]
PROMPT_SEED = 2053
TOP = 8


def build_model():
    from transformers import Idefics3Config, Idefics3ForConditionalGeneration, Idefics3VisionConfig, LlamaConfig
    t, spec = text.TEXT, tiny.IDEFICS3
    text_config = LlamaConfig(hidden_size=t["hidden_size"], intermediate_size=t["intermediate_size"],
                              num_hidden_layers=t["num_hidden_layers"], num_attention_heads=t["num_attention_heads"],
                              num_key_value_heads=t["num_key_value_heads"], rms_norm_eps=t["rms_norm_eps"],
                              rope_theta=t["rope_theta"], max_position_embeddings=t["max_position_embeddings"],
                              vocab_size=text.VOCAB_SIZE, tie_word_embeddings=False)
    config = Idefics3Config(vision_config=Idefics3VisionConfig(**spec["vision"]), text_config=text_config,
                            scale_factor=spec["scale_factor"], image_token_id=text.IMAGE_TOKEN_ID,
                            tie_word_embeddings=False)
    torch.manual_seed(0)
    model = Idefics3ForConditionalGeneration(config).eval()
    tower, connector = tiny.idefics3_weights()
    models.load_into(model.model.vision_model, tower)
    model.model.connector.load_state_dict({k: torch.from_numpy(a) for k, a in connector.items()}, strict=True)
    weights = text.text_weights()
    model.model.text_model.load_state_dict(
        {k.removeprefix("model."): torch.from_numpy(a) for k, a in weights.items() if k.startswith("model.")},
        strict=True)
    model.lm_head.load_state_dict({"weight": torch.from_numpy(weights["lm_head.weight"])}, strict=True)
    return model


def image_processor():
    from transformers import Idefics3ImageProcessorPil
    spec = tiny.IDEFICS3
    return Idefics3ImageProcessorPil(size={"longest_edge": spec["longest_edge"]},
                                     max_image_size={"longest_edge": spec["vision"]["image_size"]},
                                     image_mean=spec["image_mean"], image_std=spec["image_std"], resample=1)


def tokens_per_tile() -> int:
    v = tiny.IDEFICS3["vision"]
    return (v["image_size"] // v["patch_size"]) ** 2 // tiny.IDEFICS3["scale_factor"] ** 2


def processor_text(rows: int, cols: int) -> str:
    """The text Idefics3Processor writes for an image of rows x cols tiles: its own method, on an
    object holding the attributes it reads (building the processor would need a tokenizer the
    tiny model does not have)."""
    from transformers import Idefics3Processor
    self = SimpleNamespace(fake_image_token="<fake_token_around_image>", image_token="<image>",
                           global_image_tag="<global-img>", image_seq_len=tokens_per_tile())
    return Idefics3Processor.replace_image_token(self, {"rows": [[rows]], "cols": [[cols]]}, 0)


def newline_ids(vocab_gguf: Path) -> dict:
    """Ids of "\\n" and "\\n\\n" in the byte-level vocabulary ("Ċ", and "ĊĊ" when the merges join
    two: then BPE writes a blank line as that one token)."""
    r = gguf.GGUFReader(str(vocab_gguf))
    tokens = [bytes(r.fields["tokenizer.ggml.tokens"].parts[i]).decode() for i in r.fields["tokenizer.ggml.tokens"].data]
    merges = {bytes(r.fields["tokenizer.ggml.merges"].parts[i]).decode() for i in r.fields["tokenizer.ggml.merges"].data}
    assert "Ċ Ċ" in merges
    return {"\n": tokens.index("Ċ"), "\n\n": tokens.index("ĊĊ")}


def expand_ids(s: str, newlines: dict) -> list:
    """The ids of a processor string: control tokens, and runs of one or two newlines between them."""
    specials = sorted(text.TOKEN_IDS, key=len, reverse=True)
    ids = []
    for part in re.split("(" + "|".join(map(re.escape, specials)) + ")", s):
        if not part:
            continue
        ids.append(text.TOKEN_IDS[part] if part in text.TOKEN_IDS else newlines[part])
    return ids


def main() -> None:
    model = build_model()
    proc = image_processor()
    pil = [Image.open(REPO / p) for p in IMAGES]
    grids = []
    for im in pil:
        out = proc(images=[[im]], return_tensors="pt", return_row_col_info=True)
        grids.append((int(out["rows"][0][0]), int(out["cols"][0][0])))
    newlines = newline_ids(text.llava_text.DEFAULT_VOCAB)
    rng = np.random.RandomState(PROMPT_SEED)
    cases = [{"name": "one_image", "images": [0], "pieces": [5, "img", 7]},
             {"name": "two_images", "images": [0, 1], "pieces": [3, "img", 4, "img", 3]}]
    for case in cases:
        marker_ids, ids, next_image = [], [], 0
        for p in case.pop("pieces"):
            if p == "img":
                rows, cols = grids[case["images"][next_image]]
                next_image += 1
                marker_ids.append(text.IMAGE_TOKEN_ID)
                ids += expand_ids(processor_text(rows, cols), newlines)
            else:
                run = [int(x) for x in rng.randint(17, 49152, size=p)]
                marker_ids += run
                ids += run
        batch = proc(images=[[pil[i] for i in case["images"]]], return_tensors="pt")
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([ids]), pixel_values=batch["pixel_values"],
                           pixel_attention_mask=batch["pixel_attention_mask"]).logits[0]
        logprobs = torch.log_softmax(logits.double(), dim=-1)
        top = torch.topk(logprobs, TOP, dim=-1)
        case["grids"] = [list(grids[i]) for i in case["images"]]
        case["images"] = [IMAGES[i] for i in case["images"]]
        case["marker_ids"] = marker_ids
        case["ids"] = ids
        case["top_tokens"] = top.indices.tolist()
        case["top_logprobs"] = [[round(float(x), 6) for x in row] for row in top.values]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "text.gguf"
        text.write_text_model(path, text.llava_text.DEFAULT_VOCAB)
        text_sha = text.llava_text.sha256(path)
    golden = {
        "generator": {"script": "scripts/make_vlm_idefics3_logits_golden.py", "torch": torch.__version__,
                      "transformers": transformers.__version__, "numpy": np.__version__,
                      "reference": "Idefics3ForConditionalGeneration, f32 on CPU; Idefics3ImageProcessorPil pixels; "
                                   "Idefics3Processor.replace_image_token prompt text"},
        "text_config": text.TEXT,
        "image_token_id": text.IMAGE_TOKEN_ID,
        "vocab_file": text.llava_text.DEFAULT_VOCAB.name,
        "text_gguf_sha256": text_sha,
        "mmproj": "idefics3",
        # The processor's text for grids the images do not give: an unsplit image, and 3 x 2.
        "processor_texts": [{"rows": r, "cols": c, "tokens_per_tile": tokens_per_tile(),
                             "text": processor_text(r, c)} for r, c in ((0, 0), (3, 2), (1, 4))],
        "cases": cases,
    }
    out = "{\n" + ",\n".join(f" {json.dumps(k)}: {json.dumps(v)}" for k, v in golden.items()) + "\n}\n"
    text.GOLDEN.write_text(out, encoding="utf-8")
    print(f"wrote {text.GOLDEN}: text model {text_sha}, grids {grids}")


if __name__ == "__main__":
    main()
