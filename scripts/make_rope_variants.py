#!/usr/bin/env python3
"""Writes copies of the default model with RoPE scaling in their metadata, for the logits tests
of rope scaling at positions beyond the original context (tests/golden/logits/smollm2_*.json,
made by scripts/make_logits_golden.py from the same files).

The weights are the real model's, so the distributions are as peaked as a real model's; only
these keys are added: YaRN (factor 4 over an original context of 256, and an attention factor)
and linear scaling (factor 4). Files go to $LUMEN_CACHE/derived (default
~/.cache/lumen/models/derived) and are written only when missing (the golden files record the
sha256 of the file they were made from). Run with a Python that has gguf (scripts/setup.sh's venv); setup.sh calls it.
"""
import hashlib
import os
import sys
from pathlib import Path

import gguf
from gguf.scripts.gguf_new_metadata import MetadataDetails, copy_with_new_metadata

BASE = "SmolLM2-135M-Instruct.Q4_1.gguf"
F32 = gguf.GGUFValueType.FLOAT32
U32 = gguf.GGUFValueType.UINT32
STR = gguf.GGUFValueType.STRING
VARIANTS = {
    "yarn": {
        "llama.rope.scaling.type": MetadataDetails(STR, "yarn"),
        "llama.rope.scaling.factor": MetadataDetails(F32, 4.0),
        "llama.rope.scaling.original_context_length": MetadataDetails(U32, 256),
        "llama.rope.scaling.attn_factor": MetadataDetails(F32, 0.9),
    },
    "linear": {
        "llama.rope.scaling.type": MetadataDetails(STR, "linear"),
        "llama.rope.scaling.factor": MetadataDetails(F32, 4.0),
    },
}


def cache_dir() -> Path:
    return Path(os.environ.get("LUMEN_CACHE") or Path.home() / ".cache" / "lumen" / "models")


def variant_path(name: str) -> Path:
    return cache_dir() / "derived" / BASE.replace(".gguf", f".rope-{name}.gguf")


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def main() -> int:
    base = cache_dir() / BASE
    if not base.exists():
        print(f"make_rope_variants: {base} is missing (run scripts/fetch_models.py)", file=sys.stderr)
        return 1
    for name, metadata in VARIANTS.items():
        out = variant_path(name)
        if out.exists():
            continue
        out.parent.mkdir(parents=True, exist_ok=True)
        reader = gguf.GGUFReader(str(base), "r")
        arch = reader.get_field(gguf.Keys.General.ARCHITECTURE).contents()
        tmp = out.with_suffix(".tmp")
        writer = gguf.GGUFWriter(str(tmp), arch=arch, endianess=reader.endianess)
        copy_with_new_metadata(reader, writer, dict(metadata), [])
        tmp.rename(out)
        print(f"make_rope_variants: wrote {out} ({sha256_of(out)[:16]})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
