#!/usr/bin/env python3
"""Regenerates tests/golden/vision/mtmd_logits.json: llama.cpp's mtmd (libmtmd through
llama-cpp-python) on the same tiny files and prompts as the transformers logits goldens
(llava_logits.json, idefics3_logits.json, gemma3_logits.json), images decoded with Pillow as the
processors do, so unit_vlm's VlmMtmdLogits holds Lumen to llama.cpp's answer too, in CI, which
has no llama-cpp-python. Besides the goldens' images, images no resize changes
(vlm_native_size_cases.py), with transformers' rows for them.

Per family and case: the golden's token ids with each image's region (LLaVA: the run of
"<image>"; Gemma 3: "<start_of_image>" to "<end_of_image>"; Idefics3: the tiles' markers and
tokens through the global tile's closing "<fake_token_around_image>") replaced by what mtmd
itself writes for the image marker (scripts/mtmd_prompt_logprobs.py), then every position's top
8 log-probabilities. Where mtmd's ids equal the processor's, position i of mtmd's rows is
position i of transformers' and Lumen's; the golden records whether they do. Also printed: the
largest difference between mtmd's and transformers' log-probabilities (tokens both rank in
their top 8), which docs/vision.md reports; --f32-copies prints the same for f32 copies of the
files without writing the golden.

    /work/venvs/vlm-image/bin/python scripts/make_vlm_mtmd_logits_golden.py \
        --python /work/venvs/mamba2/bin/python     # an interpreter with llama-cpp-python
"""
import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parent))
import vlm_tiny_gemma3_text as gemma3_text  # noqa: E402
import vlm_tiny_idefics3_text as idefics3_text  # noqa: E402
import vlm_tiny_llava_text as llava_text  # noqa: E402
import gguf_f32_copy  # noqa: E402
import vlm_native_size_cases as native  # noqa: E402
import vlm_tiny_mmproj as tiny  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
GOLDEN = REPO / "tests" / "golden" / "vision" / "mtmd_logits.json"
RUNNER = REPO / "scripts" / "mtmd_prompt_logprobs.py"
TOP = 8


def regions(family: str, ids: list, golden: dict) -> list:
    """[start, end) of each image's ids in a transformers golden's prompt."""
    out, i = [], 0
    if family == "llava":
        image = golden["image_token_id"]
        while i < len(ids):
            if ids[i] == image:
                j = i
                while j < len(ids) and ids[j] == image:
                    j += 1
                out.append([i, j])
                i = j
            else:
                i += 1
    elif family == "gemma3":
        begin, end = gemma3_text.TOKEN_IDS["<start_of_image>"], gemma3_text.TOKEN_IDS["<end_of_image>"]
        for i, t in enumerate(ids):
            if t == begin:
                out.append([i, ids.index(end, i) + 1])
    else:
        fake, glob = idefics3_text.TOKEN_IDS["<fake_token_around_image>"], idefics3_text.TOKEN_IDS["<global-img>"]
        while i < len(ids):
            if ids[i] != fake:
                i += 1
                continue
            g = ids.index(glob, i)
            j = ids.index(fake, g) + 1  # the global tile's closing marker
            # The processor's "\n\n" before a tiled image's global tile belongs to the image.
            out.append([i, j])
            i = j
    return out


def placeholder(family: str, golden: dict) -> int:
    return golden["image_soft_token_id"] if family == "gemma3" else golden["image_token_id"]


def mtmd_case(family: str, golden: dict, c: dict, images: list, python: str, files: tuple, work: Path) -> dict:
    """Case c's prompt with `images` (repo paths) through mtmd; its ids, spans and top rows."""
    ids = c["ids"]
    segments, at = [], 0
    spans = regions(family, ids, golden)
    assert len(spans) == len(images), (family, c["name"], spans)
    name = f"{family}-{c['name']}-{len(images)}-{Path(images[0]).stem}"
    for k, ((s, e), image) in enumerate(zip(spans, images)):
        rgb = work / f"{name}-{k}.npy"
        np.save(rgb, np.asarray(Image.open(REPO / image).convert("RGB")))
        segments += [{"text": ids[at:s]}, {"image": str(rgb)}]
        at = e
    segments.append({"text": ids[at:]})
    spec, out = work / f"{name}.spec.json", work / f"{name}.out.json"
    spec.write_text(json.dumps({"segments": segments, "top": TOP}))
    run = subprocess.run([python, str(RUNNER), *map(str, files), str(spec), str(out)], capture_output=True, text=True)
    if run.returncode != 0:
        raise SystemExit(f"{name}: the mtmd run failed:\n{run.stderr[-3000:]}")
    got = json.loads(out.read_text())
    mtmd_ids = list(got["ids"])
    for s, n in got["image_spans"]:
        mtmd_ids[s:s + n] = [placeholder(family, golden)] * n
    # LLaVA's goldens hold no template prompt: its marker is the image token itself, once per image.
    marker_ids = c.get("marker_ids") or [t for i, t in enumerate(ids) if not any(s < i < e for s, e in spans)]
    return {"name": c["name"], "images": images, "marker_ids": marker_ids, "ids": mtmd_ids,
            "ids_as_transformers": mtmd_ids == ids, "image_spans": got["image_spans"],
            "image_chunks_non_causal": got["image_chunks_non_causal"], "top_tokens": got["top_tokens"],
            "top_logprobs": got["top_logprobs"]}


def run_family(family: str, python: str, folder: Path, work: Path, f32: bool) -> dict:
    golden = json.loads((REPO / "tests" / "golden" / "vision" / f"{family}_logits.json").read_text())
    text_module = {"llava": llava_text, "idefics3": idefics3_text, "gemma3": gemma3_text}[family]
    files = (text_module.golden_text_model(folder), tiny.golden_mmproj(family, folder))
    shas = (tiny.sha256(files[0]), tiny.sha256(files[1]))
    if f32:
        wide = tuple(work / f"{family}-{k}.f32.gguf" for k in ("text", "mmproj"))
        for src, dst in zip(files, wide):
            gguf_f32_copy.f32_copy(str(src), str(dst))
        files = wide
    cases = []
    for c in golden["cases"]:
        case = mtmd_case(family, golden, c, c["images"], python, files, work)
        if case["ids_as_transformers"]:
            case["max_diff_vs_transformers"] = round(compare(c, case), 6)
        cases.append(case)
        if family in native.CASES:
            # The same prompt with images no resize changes on either side.
            suffix, images = native.CASES[family]
            images = images[:len(c["images"])]
            case = mtmd_case(family, golden, c, images, python, files, work)
            case["name"] = c["name"] + suffix
            ref = dict(zip(("top_tokens", "top_logprobs"), native.transformers_top(family, c["ids"], images, TOP)))
            case["transformers_top_tokens"], case["transformers_top_logprobs"] = ref["top_tokens"], ref["top_logprobs"]
            case["max_diff_vs_transformers"] = round(compare(ref, case), 6)
            cases.append(case)
    for case in cases:
        print(f"{family} {case['name']}: ids as transformers' {case['ids_as_transformers']}; image chunks "
              f"{case['image_spans']} (non-causal {case['image_chunks_non_causal']}); largest log-probability "
              f"difference from transformers {case.get('max_diff_vs_transformers')}")
    return {"text_gguf_sha256": shas[0], "mmproj_sha256": shas[1],
            "transformers_golden": f"tests/golden/vision/{family}_logits.json",
            "placeholder_id": placeholder(family, golden), "cases": cases}


def compare(ref: dict, got: dict) -> float:
    """Largest |log-probability difference| over tokens both rank in their top 8, all rows."""
    worst = 0.0
    for rt, rl, gt, gl in zip(ref["top_tokens"], ref["top_logprobs"], got["top_tokens"], got["top_logprobs"]):
        theirs = dict(zip(gt, gl))
        worst = max([worst] + [abs(v - theirs[t]) for t, v in zip(rt, rl) if t in theirs])
    return worst


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--python", required=True, help="an interpreter with llama-cpp-python (libmtmd)")
    ap.add_argument("--dir", type=Path, default=REPO / "build/release/tests/generated",
                    help="where the tiny files are (written there if missing)")
    ap.add_argument("--f32-copies", action="store_true",
                    help="run mtmd on f32 copies of the files (gguf_f32_copy.py) and only print: separates "
                         "llama.cpp's f16 activations from what it computes; the golden is not written")
    args = ap.parse_args()
    version = subprocess.run([args.python, "-c", "import llama_cpp; print(llama_cpp.__version__)"], check=True,
                             capture_output=True, text=True).stdout.strip()
    native.write_images()
    families = {}
    with tempfile.TemporaryDirectory() as tmp:
        for family in ("llava", "idefics3", "gemma3"):
            families[family] = run_family(family, args.python, args.dir, Path(tmp), args.f32_copies)
    if args.f32_copies:
        return
    golden = {"generator": {"script": "scripts/make_vlm_mtmd_logits_golden.py", "llama_cpp_python": version,
                            "reference": "libmtmd: mtmd_tokenize of the image marker, mtmd_encode_chunk, "
                                         "llama_decode of the features (non-causal where "
                                         "mtmd_decode_use_non_causal says), logits at every position; "
                                         "CPU, f32 KV cache, no flash attention"},
              "top": TOP, "families": families}
    GOLDEN.write_text(json.dumps(golden) + "\n", encoding="utf-8")
    print(f"wrote {GOLDEN}")


if __name__ == "__main__":
    main()
