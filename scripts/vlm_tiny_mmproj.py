#!/usr/bin/env python3
"""The vision tests' tiny random projector (mmproj) files, written from fixed seeds with gguf-py and
numpy only, so that no model file is committed and CI needs no torch.

  llava     LLaVA-1.5's layout: a CLIP ViT (class token, pre-LayerNorm, quick GELU; 3 layers, of
            which the projector reads the second to last output, as vision_feature_layer -2
            says) and the two-layer MLP projector, as llama.cpp's legacy
            convert_image_encoder_to_gguf.py writes it (projector_type "mlp", f16 matrices, the
            FFN's fc1/fc2 stored under each other's names, the last layer dropped)

Each model's weights exist first in the Hugging Face layout (*_weights()); f16 matrices are drawn
already rounded to f16, so transformers' f32 run and the f16 file hold the same numbers.
scripts/make_vlm_models.py loads the same arrays into transformers, runs llama.cpp's converter
on them (and checks that its file holds the same keys and tensors as ours), and writes
tests/golden/vision/NAME.json with the features of a fixed pixel tensor and this file's sha256.
At test time golden_mmproj(NAME) writes the file into the build tree and checks that sha256.

  python scripts/vlm_tiny_mmproj.py OUT_DIR   # writes every model's file, prints sha256s
"""
import hashlib
import json
import os
import sys
import tempfile
from pathlib import Path

import gguf
import numpy as np

REPO = Path(__file__).resolve().parent.parent
GOLDEN_DIR = REPO / "tests" / "golden" / "vision"

# The tiny LLaVA: CLIP vision tower (hidden 64, 4 heads, FFN 128; FFN width differs from the
# hidden size, so the swapped fc1/fc2 names are visible in the shapes), 32x32 pixels in 8x8
# patches (16 patches + the class token), and an MLP projector onto a 96-wide text model.
LLAVA = {
    "seed": 51,
    "vision": {
        "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 3, "num_attention_heads": 4,
        "image_size": 32, "patch_size": 8, "num_channels": 3, "projection_dim": 32, "layer_norm_eps": 1e-5,
        "hidden_act": "quick_gelu",
    },
    "text_hidden": 96,
    "vision_feature_layer": -2,
    "image_mean": [0.48145466, 0.4578275, 0.40821073],
    "image_std": [0.26862954, 0.26130258, 0.27577711],
    "name": "tiny-llava-vision",
}
# SigLIP towers (patch bias, no class token, tanh GELU, post-LayerNorm) of the same size, 2 layers.
SIGLIP = {
    "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
    "image_size": 32, "patch_size": 8, "num_channels": 3, "layer_norm_eps": 1e-6,
}
# Gemma 3: the 4x4 patch grid average-pooled 2x2 into 4 tokens (mm_tokens_per_image 4, so the
# converter writes scale_factor 2), RMS-normed and projected onto a 96-wide text model.
GEMMA3 = {"seed": 52, "vision": SIGLIP, "text_hidden": 96, "mm_tokens_per_image": 4,
          "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5], "name": "Gemma3"}
# Idefics3 / SmolVLM: the grid pixel-shuffled 2x2 (4 tokens of 4 x 64 values), then one linear map.
IDEFICS3 = {"seed": 53, "vision": SIGLIP, "text_hidden": 96, "scale_factor": 2, "longest_edge": 64,
            "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5], "name": "Idefics3"}
NAMES = ("llava", "gemma3", "idefics3")


class Draw:
    """Float32 draws from numpy's legacy RandomState, whose streams numpy keeps fixed across
    versions. Spreads are wider than real inits (0.02), so attention is far from uniform and a
    wrong mask, scale, norm or layer count moves the output visibly."""

    def __init__(self, seed: int):
        self.rng = np.random.RandomState(seed)

    def normal(self, *shape, scale=0.2):
        return (self.rng.standard_normal(shape) * scale).astype(np.float32)

    def f16(self, *shape, scale=0.2):
        """A matrix the file stores in f16: drawn on f16's grid, so f32 and f16 agree exactly."""
        return self.normal(*shape, scale=scale).astype(np.float16).astype(np.float32)

    def norm(self, n):
        return (1.0 + self.rng.standard_normal(n) * 0.1).astype(np.float32)


def clip_vision_weights(d: Draw, v: dict) -> dict:
    """CLIPVisionModel's state dict (its own names), post-LayerNorm included (LLaVA never uses it)."""
    h, f, p = v["hidden_size"], v["intermediate_size"], v["patch_size"]
    n_pos = (v["image_size"] // p) ** 2 + 1
    w = {
        "vision_model.embeddings.class_embedding": d.normal(h),
        "vision_model.embeddings.patch_embedding.weight": d.f16(h, v["num_channels"], p, p, scale=0.1),
        "vision_model.embeddings.position_embedding.weight": d.f16(n_pos, h),
        "vision_model.pre_layrnorm.weight": d.norm(h),
        "vision_model.pre_layrnorm.bias": d.normal(h, scale=0.1),
    }
    for i in range(v["num_hidden_layers"]):
        pre = f"vision_model.encoder.layers.{i}."
        for proj in ("k_proj", "v_proj", "q_proj", "out_proj"):
            w[pre + f"self_attn.{proj}.weight"] = d.f16(h, h)
            w[pre + f"self_attn.{proj}.bias"] = d.normal(h, scale=0.1)
        w[pre + "layer_norm1.weight"] = d.norm(h)
        w[pre + "layer_norm1.bias"] = d.normal(h, scale=0.1)
        w[pre + "mlp.fc1.weight"] = d.f16(f, h)
        w[pre + "mlp.fc1.bias"] = d.normal(f, scale=0.1)
        w[pre + "mlp.fc2.weight"] = d.f16(h, f, scale=0.15)
        w[pre + "mlp.fc2.bias"] = d.normal(h, scale=0.1)
        w[pre + "layer_norm2.weight"] = d.norm(h)
        w[pre + "layer_norm2.bias"] = d.normal(h, scale=0.1)
    w["vision_model.post_layernorm.weight"] = d.norm(h)
    w["vision_model.post_layernorm.bias"] = d.normal(h, scale=0.1)
    return w


def siglip_weights(d: Draw, v: dict) -> dict:
    """A SigLIP tower's state dict, in the names of transformers' SiglipVisionTransformer (also
    Idefics3VisionTransformer's). The converter keeps the embeddings in f32, the layers' matrices
    in f16."""
    h, f, p = v["hidden_size"], v["intermediate_size"], v["patch_size"]
    n_pos = (v["image_size"] // p) ** 2
    w = {
        "embeddings.patch_embedding.weight": d.normal(h, v["num_channels"], p, p, scale=0.1),
        "embeddings.patch_embedding.bias": d.normal(h, scale=0.1),
        "embeddings.position_embedding.weight": d.normal(n_pos, h),
    }
    for i in range(v["num_hidden_layers"]):
        pre = f"encoder.layers.{i}."
        for proj in ("k_proj", "v_proj", "q_proj", "out_proj"):
            w[pre + f"self_attn.{proj}.weight"] = d.f16(h, h)
            w[pre + f"self_attn.{proj}.bias"] = d.normal(h, scale=0.1)
        w[pre + "layer_norm1.weight"] = d.norm(h)
        w[pre + "layer_norm1.bias"] = d.normal(h, scale=0.1)
        w[pre + "mlp.fc1.weight"] = d.f16(f, h)
        w[pre + "mlp.fc1.bias"] = d.normal(f, scale=0.1)
        w[pre + "mlp.fc2.weight"] = d.f16(h, f, scale=0.15)
        w[pre + "mlp.fc2.bias"] = d.normal(h, scale=0.1)
        w[pre + "layer_norm2.weight"] = d.norm(h)
        w[pre + "layer_norm2.bias"] = d.normal(h, scale=0.1)
    w["post_layernorm.weight"] = d.norm(h)
    w["post_layernorm.bias"] = d.normal(h, scale=0.1)
    return w


def gemma3_weights() -> tuple:
    """(tower, projector): the projector in Gemma3MultiModalProjector's names; its RMS norm
    weight as transformers holds it (the norm multiplies by 1 + weight)."""
    d = Draw(GEMMA3["seed"])
    tower = siglip_weights(d, GEMMA3["vision"])
    h, t = GEMMA3["vision"]["hidden_size"], GEMMA3["text_hidden"]
    projector = {
        "mm_input_projection_weight": d.f16(h, t, scale=0.15),
        "mm_soft_emb_norm.weight": d.normal(h, scale=0.1),
    }
    return tower, projector


def idefics3_weights(spec: dict = IDEFICS3) -> tuple:
    """(tower, connector), the connector in Idefics3Connector's names."""
    d = Draw(spec["seed"])
    tower = siglip_weights(d, spec["vision"])
    merged = spec["vision"]["hidden_size"] * spec["scale_factor"] ** 2
    return tower, {"modality_projection.proj.weight": d.f16(spec["text_hidden"], merged, scale=0.1)}


def llava_weights(spec: dict = LLAVA) -> tuple:
    """(vision tower state dict, projector state dict), in Hugging Face's names."""
    d = Draw(spec["seed"])
    vision = clip_vision_weights(d, spec["vision"])
    h, t = spec["vision"]["hidden_size"], spec["text_hidden"]
    projector = {
        "multi_modal_projector.linear_1.weight": d.f16(t, h),
        "multi_modal_projector.linear_1.bias": d.normal(t, scale=0.1),
        "multi_modal_projector.linear_2.weight": d.f16(t, t),
        "multi_modal_projector.linear_2.bias": d.normal(t, scale=0.1),
    }
    return vision, projector


def legacy_tensor_name(name: str) -> str:
    """The name llama.cpp's legacy LLaVA converter gives a tensor (fc1 becomes ffn_down and fc2
    ffn_up: the readers tell them apart by shape)."""
    if name.startswith("multi_modal_projector."):
        return name.replace("multi_modal_projector", "mm").replace("linear_1", "0").replace("linear_2", "2")
    for old, new in (("vision_model", "v"), ("encoder.layers", "blk"), ("embeddings.", ""), ("_proj", ""),
                     ("self_attn.", "attn_"), ("layer_norm", "ln"), ("mlp.fc1", "ffn_down"), ("mlp.fc2", "ffn_up"),
                     ("embedding", "embd"), ("layrnorm", "ln")):
        name = name.replace(old, new)
    return name


def write_llava(path: Path, explicit_feature_layer: int = 0, spec: dict = LLAVA) -> None:
    """The mmproj the legacy converter writes for LLAVA with --clip-model-is-vision and
    --llava-projector (f16): the same keys, tensor names, types and order. explicit_feature_layer > 0
    adds clip.vision.feature_layer (scripts/compare_vision_mtmd.py's one-layer-short run); another
    spec of the same layout gives another size (bench/compare_vlm_ttft.py's CLIP-B/16)."""
    v = spec["vision"]
    vision, projector = llava_weights(spec)
    n_layers = v["num_hidden_layers"]
    # The hidden state LLaVA reads (0 = the embeddings): the converter keeps the layers before it
    # and writes their count, without a feature_layer key (as every LLaVA-1.5 mmproj has it).
    feature_layer = n_layers + spec["vision_feature_layer"] + 1
    out = gguf.GGUFWriter(str(path), arch="clip")
    out.add_bool("clip.has_text_encoder", False)
    out.add_bool("clip.has_vision_encoder", True)
    out.add_bool("clip.has_llava_projector", True)
    out.add_file_type(1)
    out.add_name(spec["name"])
    out.add_description("image encoder for LLaVA")
    out.add_string("clip.projector_type", "mlp")
    out.add_uint32("clip.vision.image_size", v["image_size"])
    out.add_uint32("clip.vision.patch_size", v["patch_size"])
    out.add_uint32("clip.vision.embedding_length", v["hidden_size"])
    out.add_uint32("clip.vision.feed_forward_length", v["intermediate_size"])
    out.add_uint32("clip.vision.projection_dim", v["projection_dim"])
    out.add_uint32("clip.vision.attention.head_count", v["num_attention_heads"])
    out.add_float32("clip.vision.attention.layer_norm_epsilon", v["layer_norm_eps"])
    out.add_uint32("clip.vision.block_count", feature_layer)
    out.add_array("clip.vision.image_mean", spec["image_mean"])
    out.add_array("clip.vision.image_std", spec["image_std"])
    out.add_bool("clip.use_gelu", v["hidden_act"] == "gelu")
    if explicit_feature_layer > 0:
        out.add_array("clip.vision.feature_layer", [explicit_feature_layer])
    for name, data in projector.items():
        out.add_tensor(legacy_tensor_name(name), data.astype(np.float16 if data.ndim == 2 else np.float32))
    for name, data in vision.items():
        if name.startswith("vision_model.post_layernorm"):
            continue  # LLaVA reads a hidden state before it
        if ".encoder.layers." in name and int(name.split(".")[3]) >= feature_layer:
            continue  # the layers after the one LLaVA reads are dropped
        f16 = data.ndim == 4 or (data.ndim == 2 and name.endswith(".weight"))
        out.add_tensor(legacy_tensor_name(name), data.astype(np.float16 if f16 else np.float32))
    out.write_header_to_file()
    out.write_kv_data_to_file()
    out.write_tensors_to_file()
    out.close()


def siglip_tensor_name(name: str) -> str:
    """The name convert_hf_to_gguf.py gives a SigLIP tower's tensor (gguf-py's tensor map)."""
    fixed = {"embeddings.patch_embedding.weight": "v.patch_embd.weight",
             "embeddings.patch_embedding.bias": "v.patch_embd.bias",
             "embeddings.position_embedding.weight": "v.position_embd.weight",
             "post_layernorm.weight": "v.post_ln.weight", "post_layernorm.bias": "v.post_ln.bias"}
    if name in fixed:
        return fixed[name]
    _, _, layer, rest = name.split(".", 3)
    for old, new in (("self_attn.k_proj", "attn_k"), ("self_attn.v_proj", "attn_v"), ("self_attn.q_proj", "attn_q"),
                     ("self_attn.out_proj", "attn_out"), ("layer_norm1", "ln1"), ("layer_norm2", "ln2"),
                     ("mlp.fc1", "ffn_up"), ("mlp.fc2", "ffn_down")):
        rest = rest.replace(old, new)
    return f"v.blk.{layer}.{rest}"


def write_mmproj_keys(out: gguf.GGUFWriter, spec: dict, projector_type: str) -> None:
    """The keys convert_hf_to_gguf.py --mmproj writes for a SigLIP-based projector (the
    general.* bookkeeping aside)."""
    v = spec["vision"]
    out.add_type("mmproj")
    out.add_name(spec["name"])
    out.add_file_type(1)
    out.add_bool("clip.has_vision_encoder", True)
    out.add_uint32("clip.vision.projection_dim", spec["text_hidden"])
    out.add_uint32("clip.vision.image_size", v["image_size"])
    out.add_uint32("clip.vision.patch_size", v["patch_size"])
    out.add_uint32("clip.vision.embedding_length", v["hidden_size"])
    out.add_uint32("clip.vision.feed_forward_length", v["intermediate_size"])
    out.add_uint32("clip.vision.block_count", v["num_hidden_layers"])
    out.add_uint32("clip.vision.attention.head_count", v["num_attention_heads"])
    out.add_array("clip.vision.image_mean", spec["image_mean"])
    out.add_array("clip.vision.image_std", spec["image_std"])
    out.add_string("clip.projector_type", projector_type)
    out.add_float32("clip.vision.attention.layer_norm_epsilon", v["layer_norm_eps"])


def add_siglip_tensors(out: gguf.GGUFWriter, tower: dict) -> None:
    for name, data in tower.items():
        f16 = data.ndim == 2 and ".embeddings." not in "." + name
        out.add_tensor(siglip_tensor_name(name), data.astype(np.float16 if f16 else np.float32))


def finish(out: gguf.GGUFWriter) -> None:
    out.write_header_to_file()
    out.write_kv_data_to_file()
    out.write_tensors_to_file()
    out.close()


def write_gemma3(path: Path) -> None:
    """What convert_hf_to_gguf.py --mmproj writes for GEMMA3 (f16): the norm weight with its 1
    added, the projection as transformers stores it ({vision, text} rows: ggml dims {text, vision})."""
    tower, projector = gemma3_weights()
    v = GEMMA3["vision"]
    out = gguf.GGUFWriter(str(path), arch="clip")
    write_mmproj_keys(out, GEMMA3, "gemma3")
    out.add_bool("clip.use_gelu", True)
    side = v["image_size"] // v["patch_size"]
    out.add_uint32("clip.vision.projector.scale_factor", side // int(GEMMA3["mm_tokens_per_image"] ** 0.5))
    out.add_tensor("mm.input_projection.weight", projector["mm_input_projection_weight"].astype(np.float16))
    out.add_tensor("mm.soft_emb_norm.weight", projector["mm_soft_emb_norm.weight"] + np.float32(1))
    add_siglip_tensors(out, tower)
    finish(out)


def write_idefics3(path: Path, spec: dict = IDEFICS3) -> None:
    """What convert_hf_to_gguf.py --mmproj writes for IDEFICS3 (f16), or for another spec of the
    same layout (the benchmark's full-size SmolVLM tower)."""
    tower, connector = idefics3_weights(spec)
    out = gguf.GGUFWriter(str(path), arch="clip")
    write_mmproj_keys(out, spec, "idefics3")
    out.add_uint32("clip.vision.projector.scale_factor", spec["scale_factor"])
    out.add_bool("clip.use_gelu", True)
    out.add_uint32("clip.vision.preproc_image_size", spec["longest_edge"])
    out.add_tensor("mm.model.fc.weight", connector["modality_projection.proj.weight"].astype(np.float16))
    add_siglip_tensors(out, tower)
    finish(out)


WRITERS = {"llava": write_llava, "gemma3": write_gemma3, "idefics3": write_idefics3}


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def write_mmproj(name: str, path: Path) -> str:
    """Writes NAME's mmproj to path; returns its sha256."""
    WRITERS[name](path)
    return sha256(path)


def golden_mmproj(name: str, folder: Path) -> Path:
    """NAME's mmproj for a test, written into folder and held to the sha256 its golden JSON was
    made from."""
    want = json.loads((GOLDEN_DIR / f"{name}.json").read_text(encoding="utf-8"))["mmproj_sha256"]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"vlm-{name}.mmproj.gguf"
    if path.exists() and sha256(path) == want:
        return path
    # Tests may run in parallel: each writes its own file and renames it into place (atomic).
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".vlm-{name}.", suffix=".gguf")
    os.close(fd)
    got = write_mmproj(name, Path(tmp))
    if got != want:
        os.unlink(tmp)
        raise SystemExit(f"vlm-{name}.mmproj.gguf written by {Path(__file__).name} has sha256 {got}, but "
                         f"tests/golden/vision/{name}.json was made from {want}: the generator (or gguf/numpy) "
                         f"changed; rerun scripts/make_vlm_models.py")
    os.replace(tmp, path)
    return path


def main() -> None:
    if len(sys.argv) != 2:
        raise SystemExit("usage: vlm_tiny_mmproj.py OUT_DIR")
    out = Path(sys.argv[1])
    for name in NAMES:
        print(name, golden_mmproj(name, out))


if __name__ == "__main__":
    main()
