#!/usr/bin/env python3
"""Regenerates tests/golden/vision/NAME.json: what Hugging Face transformers makes of a fixed
pixel tensor with the tiny random vision-language models of scripts/vlm_tiny_mmproj.py, the
reference src/vision's encoder is held to (tests/unit/vision/vision_golden_test.cc).

For each model it
  1. builds the transformers model from its config (LlavaForConditionalGeneration: a CLIP
     vision tower, the MLP projector, a tiny Llama; Gemma3ForConditionalGeneration and
     Idefics3ForConditionalGeneration: SigLIP towers and their connectors) and loads the seeded
     weights;
  2. computes the image features of a seeded pixel tensor (the processor's pixel_values: CHW,
     already normalised) with get_image_features, and checks them against the vision tower and
     projector run by hand with the config's layer selection;
  3. converts the weights with llama.cpp's own converter (for LLaVA-1.5 its legacy
     tools/mtmd/legacy-models/convert_image_encoder_to_gguf.py, as the published LLaVA-1.5
     mmproj files were made; for the others convert_hf_to_gguf.py --mmproj), from the llama.cpp
     mirror, and checks that the file it writes
     holds the same keys and tensors as the one vlm_tiny_mmproj.py writes without torch (which
     CI regenerates); the converter's file is kept under ~/.cache/lumen/models/derived/ for the
     test that reads a converter-written file;
  4. writes the golden: config, pixels, features, versions, both files' sha256.

The reference is transformers 5 (its Idefics3 places patches at the positions llama.cpp and
the original model use; 4.57's shifts every index after the first down by one). llama.cpp's
converters read checkpoints as transformers 4.x saves them (5 dropped the "vision_model." level
of the towers' tensor names), so they run under a second Python with transformers 4.x:
    python -m venv V && V/bin/pip install torch "transformers==4.57.1" gguf numpy
    PY5/bin/python scripts/make_vlm_models.py --converter-python V/bin/python [--mirror DIR] [names...]
Both record their versions in the golden.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch
import transformers

sys.path.insert(0, str(Path(__file__).resolve().parent))
import vlm_tiny_mmproj as tiny  # noqa: E402

import gguf  # noqa: E402

MIRROR = Path("/work/.mirror/ngxson+llama.cpp/repo")
DERIVED = Path.home() / ".cache" / "lumen" / "models" / "derived"
PIXEL_SEED = 2051


def git_head(mirror: Path) -> str:
    return subprocess.run(["git", "-C", str(mirror), "rev-parse", "HEAD"], check=True, capture_output=True,
                          text=True).stdout.strip()


def extract_converter(mirror: Path, into: Path) -> None:
    """llama.cpp's converters and its gguf-py, from the bare mirror, into `into`."""
    into.mkdir(parents=True, exist_ok=True)
    paths = ["gguf-py", "convert_hf_to_gguf.py", "conversion",
             "tools/mtmd/legacy-models/convert_image_encoder_to_gguf.py"]
    archive = subprocess.run(["git", "-C", str(mirror), "archive", "HEAD", *paths], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)


def pixels(v: dict) -> np.ndarray:
    """The fixed input: normalised pixel values, CHW, seeded."""
    size = v["image_size"]
    return np.random.RandomState(PIXEL_SEED).standard_normal((v["num_channels"], size, size)).astype(np.float32)


def feature_rows(out) -> "torch.Tensor":
    """get_image_features' rows: transformers 4.x returns them (a tensor or a list of one per
    image), 5.x a model output whose pooler_output holds them."""
    feats = out if torch.is_tensor(out) or isinstance(out, (list, tuple)) else out.pooler_output
    if isinstance(feats, (list, tuple)):
        feats = torch.cat([f.reshape(-1, f.shape[-1]) for f in feats])
    return feats.reshape(-1, feats.shape[-1])


def llava_model():
    from transformers import CLIPVisionConfig, LlamaConfig, LlavaConfig, LlavaForConditionalGeneration
    v = tiny.LLAVA["vision"]
    text = LlamaConfig(hidden_size=tiny.LLAVA["text_hidden"], intermediate_size=192, num_hidden_layers=1,
                       num_attention_heads=4, num_key_value_heads=4, vocab_size=320, max_position_embeddings=256)
    config = LlavaConfig(vision_config=CLIPVisionConfig(**v), text_config=text, image_token_index=300,
                         projector_hidden_act="gelu", vision_feature_layer=tiny.LLAVA["vision_feature_layer"],
                         vision_feature_select_strategy="default")
    torch.manual_seed(0)
    model = LlavaForConditionalGeneration(config).eval()
    vision, projector = tiny.llava_weights()
    tower = model.model.vision_tower
    # transformers 5 names the tower's tensors without the "vision_model." its 4.x releases use
    prefix = "" if "vision_model.pre_layrnorm.weight" in tower.state_dict() else "vision_model."
    tower.load_state_dict({k.removeprefix(prefix): torch.from_numpy(a) for k, a in vision.items()}, strict=True)
    model.model.multi_modal_projector.load_state_dict(
        {k.split(".", 1)[1]: torch.from_numpy(a) for k, a in projector.items()}, strict=True)
    return model


def llava_features(model, px: np.ndarray) -> np.ndarray:
    x = torch.from_numpy(px)[None]
    with torch.no_grad():
        out = model.get_image_features(pixel_values=x, vision_feature_layer=tiny.LLAVA["vision_feature_layer"],
                                       vision_feature_select_strategy="default")
        feats = feature_rows(out)
        # By hand: hidden state -2 of the tower, class token dropped, then the projector.
        states = model.model.vision_tower(x, output_hidden_states=True).hidden_states
        hidden = states[tiny.LLAVA["vision_feature_layer"]]
        by_hand = model.model.multi_modal_projector(hidden[:, 1:]).reshape(-1, feats.shape[-1])
    diff = float((feats - by_hand).abs().max())
    assert diff < 1e-6, f"get_image_features and the hand-run tower disagree by {diff}"
    return feats.numpy().astype(np.float64)


def convert_llava(model, work: Path, converter: Path) -> Path:
    """The legacy LLaVA route: the vision tower as a CLIPVisionModel folder, the projector as
    llava.projector, then convert_image_encoder_to_gguf.py --clip-model-is-vision."""
    vit = work / "vit"
    model.model.vision_tower.save_pretrained(vit)
    cfg = json.loads((vit / "config.json").read_text())
    cfg["_name_or_path"] = tiny.LLAVA["name"]
    (vit / "config.json").write_text(json.dumps(cfg))
    projector = {"multi_modal_projector." + k: t.contiguous() for k, t in
                 model.model.multi_modal_projector.state_dict().items()}
    torch.save(projector, work / "llava.projector")
    env = dict(os.environ, PYTHONPATH=str(converter / "gguf-py"))
    script = converter / "tools/mtmd/legacy-models/convert_image_encoder_to_gguf.py"
    subprocess.run([sys.executable, str(script), "-m", str(vit), "--llava-projector", str(work / "llava.projector"),
                    "--output-dir", str(work / "out"), "--clip-model-is-vision",
                    "--image-mean", *map(str, tiny.LLAVA["image_mean"]),
                    "--image-std", *map(str, tiny.LLAVA["image_std"])],
                   check=True, env=env, capture_output=True)
    return work / "out" / "mmproj-model-f16.gguf"


def same_contents(a: Path, b: Path) -> None:
    """Both files hold the same keys with the same values and the same tensors (name, type,
    shape, bytes), whatever their order. The converter's general.* bookkeeping (size label,
    quantization version) is left out, general.architecture kept."""
    ra, rb = gguf.GGUFReader(str(a)), gguf.GGUFReader(str(b))

    def fields(r):
        out = {}
        for name, f in r.fields.items():
            if name.startswith("GGUF.") or (name.startswith("general.") and name != "general.architecture"):
                continue
            out[name] = [np.asarray(f.parts[i]).tobytes() for i in f.data]
        return out

    def tensors(r):
        return {t.name: (int(t.tensor_type), tuple(int(d) for d in t.shape), np.asarray(t.data).tobytes())
                for t in r.tensors}

    fa, fb = fields(ra), fields(rb)
    assert fa.keys() == fb.keys(), f"keys differ: {sorted(fa.keys() ^ fb.keys())}"
    for k in fa:
        assert fa[k] == fb[k], f"key {k} differs"
    ta, tb = tensors(ra), tensors(rb)
    assert ta.keys() == tb.keys(), f"tensors differ: {sorted(ta.keys() ^ tb.keys())}"
    for k in ta:
        assert ta[k] == tb[k], f"tensor {k} differs"


def load_into(module, weights: dict) -> None:
    """Loads weights named without the "vision_model." prefix that some transformers towers
    (SiglipVisionModel, CLIPVisionModel in 4.x) put before their tensors."""
    prefix = "vision_model." if any(k.startswith("vision_model.") for k in module.state_dict()) else ""
    module.load_state_dict({prefix + k: torch.from_numpy(a) for k, a in weights.items()}, strict=True)


def gemma3_model():
    from transformers import Gemma3Config, Gemma3ForConditionalGeneration, Gemma3TextConfig, SiglipVisionConfig
    spec = tiny.GEMMA3
    text = Gemma3TextConfig(hidden_size=spec["text_hidden"], intermediate_size=192, num_hidden_layers=1,
                            num_attention_heads=2, num_key_value_heads=1, head_dim=48, vocab_size=320)
    config = Gemma3Config(text_config=text, vision_config=SiglipVisionConfig(**spec["vision"],
                          hidden_act="gelu_pytorch_tanh", vision_use_head=False),
                          mm_tokens_per_image=spec["mm_tokens_per_image"])
    torch.manual_seed(0)
    model = Gemma3ForConditionalGeneration(config).eval()
    tower, projector = tiny.gemma3_weights()
    load_into(model.model.vision_tower, tower)
    model.model.multi_modal_projector.load_state_dict({k: torch.from_numpy(a) for k, a in projector.items()},
                                                       strict=True)
    return model


def gemma3_features(model, px: np.ndarray) -> np.ndarray:
    x = torch.from_numpy(px)[None]
    with torch.no_grad():
        feats = feature_rows(model.get_image_features(pixel_values=x))
        hidden = model.model.vision_tower(pixel_values=x).last_hidden_state
        by_hand = model.model.multi_modal_projector(hidden)
    feats, by_hand = feats.reshape(-1, feats.shape[-1]), by_hand.reshape(-1, feats.shape[-1])
    assert float((feats - by_hand).abs().max()) < 1e-6
    return feats.numpy().astype(np.float64)


def idefics3_model():
    from transformers import Idefics3Config, Idefics3ForConditionalGeneration, Idefics3VisionConfig, LlamaConfig
    spec = tiny.IDEFICS3
    text = LlamaConfig(hidden_size=spec["text_hidden"], intermediate_size=192, num_hidden_layers=1,
                       num_attention_heads=2, vocab_size=320)
    config = Idefics3Config(vision_config=Idefics3VisionConfig(**spec["vision"]), text_config=text,
                            scale_factor=spec["scale_factor"])
    torch.manual_seed(0)
    model = Idefics3ForConditionalGeneration(config).eval()
    tower, connector = tiny.idefics3_weights()
    load_into(model.model.vision_model, tower)
    model.model.connector.load_state_dict({k: torch.from_numpy(a) for k, a in connector.items()}, strict=True)
    return model


def idefics3_features(model, px: np.ndarray) -> np.ndarray:
    x = torch.from_numpy(px)[None]
    with torch.no_grad():
        # One tile (batch 1, one image): every patch real, so the patch mask is all ones.
        feats = feature_rows(model.model.get_image_features(pixel_values=x[None]))
        hidden = model.model.vision_model(pixel_values=x).last_hidden_state
        by_hand = model.model.connector(hidden)
    feats, by_hand = feats.reshape(-1, feats.shape[-1]), by_hand.reshape(-1, feats.shape[-1])
    assert float((feats - by_hand).abs().max()) < 1e-6
    return feats.numpy().astype(np.float64)


def convert_with_mmproj(model, work: Path, converter: Path, preprocessor: dict) -> Path:
    """convert_hf_to_gguf.py --mmproj on the saved transformers model, with the processor config
    the converter reads its image keys from."""
    folder = work / "hf"
    model.save_pretrained(folder)
    (folder / "preprocessor_config.json").write_text(json.dumps(preprocessor))
    out = work / "mmproj.gguf"
    env = dict(os.environ, PYTHONPATH=str(converter / "gguf-py"))
    subprocess.run([sys.executable, str(converter / "convert_hf_to_gguf.py"), str(folder), "--mmproj", "--outtype",
                    "f16", "--outfile", str(out)], check=True, env=env, capture_output=True)
    return out


def convert_gemma3(model, work: Path, converter: Path) -> Path:
    spec = tiny.GEMMA3
    return convert_with_mmproj(model, work, converter, {
        "image_seq_length": spec["mm_tokens_per_image"], "image_mean": spec["image_mean"],
        "image_std": spec["image_std"], "size": {"height": spec["vision"]["image_size"],
                                                "width": spec["vision"]["image_size"]}})


def convert_idefics3(model, work: Path, converter: Path) -> Path:
    spec = tiny.IDEFICS3
    return convert_with_mmproj(model, work, converter, {
        "image_mean": spec["image_mean"], "image_std": spec["image_std"],
        "size": {"longest_edge": spec["longest_edge"]},
        "max_image_size": {"longest_edge": spec["vision"]["image_size"]}})


CONVERTERS = {
    "llava": "tools/mtmd/legacy-models/convert_image_encoder_to_gguf.py --clip-model-is-vision --llava-projector",
    "gemma3": "convert_hf_to_gguf.py --mmproj --outtype f16",
    "idefics3": "convert_hf_to_gguf.py --mmproj --outtype f16",
}
FAMILIES = {
    "llava": (tiny.LLAVA, llava_model, llava_features, convert_llava),
    "gemma3": (tiny.GEMMA3, gemma3_model, gemma3_features, convert_gemma3),
    "idefics3": (tiny.IDEFICS3, idefics3_model, idefics3_features, convert_idefics3),
}


def golden_text(golden: dict) -> str:
    """One key per line, each value (the pixel and feature arrays included) on its line."""
    return "{\n" + ",\n".join(f" {json.dumps(k)}: {json.dumps(v)}" for k, v in golden.items()) + "\n}\n"


def convert_only(name: str, mirror: Path, out: Path) -> None:
    """The converter's half, run in the environment --converter-python names: builds the model in
    this transformers, converts it and copies the converter's file to out."""
    _, build, _, convert = FAMILIES[name]
    model = build()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        extract_converter(mirror, work / "llama.cpp")
        out.write_bytes(convert(model, work, work / "llama.cpp").read_bytes())
    print(transformers.__version__)


def make(name: str, mirror: Path, converter_python: str) -> None:
    spec, build, features, _ = FAMILIES[name]
    model = build()
    px = pixels(spec["vision"])
    feats = features(model, px)
    DERIVED.mkdir(parents=True, exist_ok=True)
    kept = DERIVED / f"vlm-{name}.mmproj.converter.gguf"
    run = subprocess.run([converter_python, __file__, "--convert-only", name, "--out", str(kept), "--mirror",
                          str(mirror)], check=True, capture_output=True, text=True)
    converter_transformers = run.stdout.strip().splitlines()[-1]
    with tempfile.TemporaryDirectory() as tmp:
        ours = Path(tmp) / "ours.gguf"
        ours_sha = tiny.write_mmproj(name, ours)
        same_contents(kept, ours)
        identical = kept.read_bytes() == ours.read_bytes()
    golden = {
        "generator": {
            "script": "scripts/make_vlm_models.py", "torch": torch.__version__,
            "transformers": transformers.__version__, "numpy": np.__version__, "gguf": gguf.__version__
            if hasattr(gguf, "__version__") else "?",
            "llama_cpp_mirror_commit": git_head(mirror),
            "converter": CONVERTERS[name],
            "converter_transformers": converter_transformers,
            "reference": f"{type(model).__name__}.get_image_features, f32 on CPU",
        },
        "config": spec,
        "mmproj_sha256": ours_sha,
        "converter_mmproj_sha256": tiny.sha256(kept),
        "converter_file_identical": identical,
        "pixel_seed": PIXEL_SEED,
        "pixels_chw": [float(x) for x in px.reshape(-1)],
        "width": int(px.shape[2]), "height": int(px.shape[1]),
        "features": [[round(float(x), 7) for x in row] for row in feats],
    }
    tiny.GOLDEN_DIR.mkdir(parents=True, exist_ok=True)
    (tiny.GOLDEN_DIR / f"{name}.json").write_text(golden_text(golden), encoding="utf-8")
    print(f"{name}: features {feats.shape}, max |x| {np.abs(feats).max():.3f}; converter file identical to ours: "
          f"{identical}; kept {kept}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mirror", type=Path, default=MIRROR, help="llama.cpp git directory (bare is fine)")
    ap.add_argument("--converter-python", default=sys.executable,
                    help="a Python whose transformers the converters read (4.x), if this one's is 5.x")
    ap.add_argument("--convert-only", help=argparse.SUPPRESS)
    ap.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("names", nargs="*", default=list(FAMILIES))
    args = ap.parse_args()
    if args.convert_only:
        convert_only(args.convert_only, args.mirror, args.out)
        return
    for name in args.names:
        make(name, args.mirror, args.converter_python)


if __name__ == "__main__":
    main()
