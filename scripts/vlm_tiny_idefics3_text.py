#!/usr/bin/env python3
"""The tiny Idefics3's language model as a GGUF (a Llama, like the tiny LLaVA's: the same layout
and generator, vlm_tiny_llava_text.py, with its own seed), written from fixed seeds with gguf-py
and numpy only, so CI rebuilds it without torch; the projector beside it is vlm_tiny_mmproj.py's
"idefics3" file (its features are the 96 values this model embeds).

The vocabulary is the default model's (SmolLM2-135M-Instruct, which SmolVLM's text model also
starts from) plus the control tokens Idefics3Processor writes around an image, as SmolVLM's
tokenizer holds them: "<image>" (the image_token_id of the transformers config), then
"<fake_token_around_image>", "<global-img>" and "<row_R_col_C>" for R, C in 1..6. Its chat
template writes "<image>" for an image part (ChatML, like the tiny LLaVA's).

  python scripts/vlm_tiny_idefics3_text.py OUT_DIR [VOCAB_GGUF]
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import vlm_tiny_llava_text as llava_text  # noqa: E402

REPO = llava_text.REPO
GOLDEN = REPO / "tests" / "golden" / "vision" / "idefics3_logits.json"
FILE_NAME = "vlm-idefics3.text.gguf"
TEXT = dict(llava_text.TEXT, seed=55)
MAX_GRID = 6
ADDED = ("<image>", "<fake_token_around_image>", "<global-img>") + tuple(
    f"<row_{r}_col_{c}>" for r in range(1, MAX_GRID + 1) for c in range(1, MAX_GRID + 1))
BASE = TEXT["base_vocab_size"]
TOKEN_IDS = {t: BASE + i for i, t in enumerate(ADDED)}
IMAGE_TOKEN_ID = TOKEN_IDS["<image>"]
VOCAB_SIZE = BASE + len(ADDED)


def text_weights() -> dict:
    return llava_text.text_weights(TEXT, VOCAB_SIZE)


def write_text_model(path: Path, vocab_gguf: Path) -> None:
    llava_text.write_text_model(path, vocab_gguf, TEXT, ADDED, "tiny-idefics3-text")


def golden_text_model(folder: Path, vocab_gguf: Path = llava_text.DEFAULT_VOCAB) -> Path:
    return llava_text.golden_text_model(folder, vocab_gguf, GOLDEN, FILE_NAME, write_text_model,
                                        "scripts/make_vlm_idefics3_logits_golden.py")


def main() -> None:
    if len(sys.argv) not in (2, 3):
        raise SystemExit("usage: vlm_tiny_idefics3_text.py OUT_DIR [VOCAB_GGUF]")
    vocab = Path(sys.argv[2]) if len(sys.argv) == 3 else llava_text.DEFAULT_VOCAB
    if not vocab.exists():
        print(f"{vocab} is missing (scripts/fetch_models.py fetches it): no text model written")
        return
    print(golden_text_model(Path(sys.argv[1]), vocab))


if __name__ == "__main__":
    main()
