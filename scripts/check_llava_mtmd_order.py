#!/usr/bin/env python3
"""Is the whole of mtmd's departure from transformers on the tiny LLaVA its CLIP graph? By hand
(not a test: it needs torch): transformers' own LLaVA (make_vlm_logits_golden.build_model) run
the way llama.cpp's clip graph runs it (tests/golden/vision/mtmd_logits.json holds mtmd's rows),
one change at a time, each step's largest log-probability difference from mtmd printed as JSON:

- "transformers": as the reference runs it (class token first, the feature layer's output
  without the class token, quick GELU in the tower);
- "class_token_last": the class token appended after the patches (so patch i gets position i,
  not i + 1), and rows 1..N kept (the first patch dropped, the class token kept);
- "one_layer_fewer": and one encoder layer fewer than the feature layer asks;
- "tanh_gelu": and the tower's and projector's GELU as ggml computes it (the tanh form).

Only the 32x32 cases are meaningful: on the resized images mtmd's resize departs as well.

    /work/venvs/vlm-image/bin/python scripts/check_llava_mtmd_order.py
"""
import json
import sys
from pathlib import Path

import torch
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parent))
import make_vlm_logits_golden as llava  # noqa: E402
import make_vlm_mtmd_logits_golden as mtmd_golden  # noqa: E402
import vlm_tiny_mmproj as tiny  # noqa: E402

REPO = Path(__file__).resolve().parent.parent


def features(model, pixels, class_last: bool, layers: int, tanh: bool):
    tower = model.model.vision_tower
    vm = getattr(tower, "vision_model", tower)  # transformers 5 flattened CLIPVisionModel
    emb = vm.embeddings
    patches = emb.patch_embedding(pixels).flatten(2).transpose(1, 2)
    cls = emb.class_embedding.expand(pixels.shape[0], 1, -1)
    x = torch.cat([patches, cls] if class_last else [cls, patches], dim=1)
    x = vm.pre_layrnorm(x + emb.position_embedding.weight[None, :x.shape[1]])
    gelu = torch.nn.GELU(approximate="tanh")
    for layer in vm.encoder.layers[:layers]:
        if tanh:
            layer.mlp.activation_fn = gelu
        out = layer(x, None)
        x = out[0] if isinstance(out, tuple) else out
    proj = model.model.multi_modal_projector
    if tanh:
        proj.act = gelu
    return proj(x[:, 1:])  # rows 1..N: without the class token (reference) or the first patch (mtmd)


def logprob_rows(model, ids, image_token, feats):
    embeds = model.get_input_embeddings()(torch.tensor([ids]))
    at = (torch.tensor(ids) == image_token).nonzero().flatten()
    embeds[0, at] = feats.reshape(-1, feats.shape[-1])
    logits = model(inputs_embeds=embeds).logits[0]
    lp = torch.log_softmax(logits.double(), dim=-1)
    t = torch.topk(lp, 8, dim=-1)
    return {"top_tokens": t.indices.tolist(), "top_logprobs": t.values.tolist()}


def main() -> None:
    golden = json.loads((REPO / "tests/golden/vision/mtmd_logits.json").read_text())["families"]["llava"]
    image_token = golden["placeholder_id"]
    n_layers = tiny.LLAVA["vision"]["num_hidden_layers"] + tiny.LLAVA["vision_feature_layer"] + 1
    steps = {"transformers": (False, n_layers, False), "class_token_last": (True, n_layers, False),
             "one_layer_fewer": (True, n_layers - 1, False), "tanh_gelu": (True, n_layers - 1, True)}
    out = {}
    for c in golden["cases"]:
        pixels = llava.processor()(images=[Image.open(REPO / p).convert("RGB") for p in c["images"]],
                                   return_tensors="pt")["pixel_values"]
        out[c["name"]] = {}
        for step, (class_last, layers, tanh) in steps.items():
            model = llava.build_model()  # afresh: the tanh step swaps modules' activations
            with torch.no_grad():
                rows = logprob_rows(model, c["ids"], image_token, features(model, pixels, class_last, layers, tanh))
            out[c["name"]][step] = round(mtmd_golden.compare(rows, c), 6)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
