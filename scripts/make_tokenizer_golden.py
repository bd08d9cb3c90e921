#!/usr/bin/env python3
"""Regenerates tests/golden/tokenizer/real_models.json: llama.cpp's tokenization (through
llama-cpp-python, built from PyPI's source package) of scripts/tokenizer_corpus.py on the real
models, which test_tokenizer_real_models.py compares `lumen tokenize` / `lumen detokenize` with.

    ~/.cache/lumen/llama-venv/bin/python scripts/make_tokenizer_golden.py [--smollm2 P] [--gemma3 P]

The reference venv lives outside the repo (llama.cpp is compiled from the sdist, ~12 min on two
cores; the optional parts are skipped):

    python3 -m venv ~/.cache/lumen/llama-venv
    CMAKE_ARGS="-DGGML_NATIVE=ON -DLLAVA_BUILD=OFF" CMAKE_BUILD_PARALLEL_LEVEL=2 \\
        ~/.cache/lumen/llama-venv/bin/pip install --no-binary llama-cpp-python \\
        llama-cpp-python==0.3.36 tokenizers==0.23.3 gguf==0.19.0

Per case and model the file holds the ids for each mode ("plain": add_special and parse_special
off; for SPECIAL_MODE_CASES also "add_special", "parse_special", "both") and "detok": llama.cpp's
detokenization of the plain ids, as text, or base64 under "detok_b64" when it is not valid UTF-8.
"""
import argparse
import base64
import ctypes
import hashlib
import json
import os
import sys
from pathlib import Path

import llama_cpp

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tokenizer_corpus import CASES, SPECIAL_MODE_CASES  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
CACHE = Path(os.environ.get("LUMEN_CACHE") or Path.home() / ".cache" / "lumen" / "models")
MODELS = {
    "smollm2": CACHE / "SmolLM2-135M-Instruct.Q4_1.gguf",
    "gemma3": CACHE / "gemma-3-270m-q4_k_m.gguf",
}
MODES = {  # name -> (add_special, parse_special)
    "plain": (False, False),
    "add_special": (True, False),
    "parse_special": (False, True),
    "both": (True, True),
}


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def detokenize(llm: llama_cpp.Llama, ids: list[int]) -> bytes:
    # llama.cpp's own llama_detokenize, not Llama.detokenize: the wrapper reads each piece into
    # a 32-byte buffer and would cut longer pieces. remove_special / unparse_special are off,
    # as in Llama.detokenize's defaults (there are no control tokens in plain-mode ids anyway).
    vocab = llama_cpp.llama_model_get_vocab(llm.model)
    tokens = (llama_cpp.llama_token * max(len(ids), 1))(*ids)
    size = 64 + 64 * len(ids)
    while True:
        buf = ctypes.create_string_buffer(size)
        n = llama_cpp.llama_detokenize(vocab, tokens, len(ids), buf, size, False, False)
        if n >= 0:
            return buf.raw[:n]
        size = -n


def model_record(llm: llama_cpp.Llama, text: str) -> dict:
    data = text.encode("utf-8")
    modes = MODES if text in SPECIAL_MODE_CASES else {"plain": MODES["plain"]}
    record = {name: llm.tokenize(data, add_bos=add, special=parse)
              for name, (add, parse) in modes.items()}
    decoded = detokenize(llm, record["plain"])
    try:
        record["detok"] = decoded.decode("utf-8")
    except UnicodeDecodeError:
        record["detok_b64"] = base64.b64encode(decoded).decode("ascii")
    return record


def write_compact(path: Path, doc: dict) -> None:
    # One case per line keeps the file small and its diffs readable.
    lines = ['{"generator": ' + json.dumps(doc["generator"], sort_keys=True) + ",", ' "cases": [']
    cases = [json.dumps(c, ensure_ascii=True, separators=(",", ":")) for c in doc["cases"]]
    lines.append(",\n".join("  " + c for c in cases))
    lines.append(" ]}")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="ascii")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name, default in MODELS.items():
        parser.add_argument(f"--{name}", type=Path, default=default, help=f"GGUF (default {default})")
    parser.add_argument("-o", "--output", type=Path,
                        default=REPO / "tests" / "golden" / "tokenizer" / "real_models.json")
    args = parser.parse_args()

    paths = {name: getattr(args, name) for name in MODELS}
    llms = {name: llama_cpp.Llama(model_path=str(p), vocab_only=True, verbose=False)
            for name, p in paths.items()}
    cases = []
    for text in CASES:
        case = {"text": text}
        for name, llm in llms.items():
            case[name] = model_record(llm, text)
        cases.append(case)
    doc = {
        "generator": {
            "llama_cpp_python": llama_cpp.__version__,
            "models": {name: sha256(p) for name, p in paths.items()},
            "script": "scripts/make_tokenizer_golden.py",
        },
        "cases": cases,
    }
    write_compact(args.output, doc)
    print(f"wrote {args.output}: {len(cases)} cases, {args.output.stat().st_size} bytes")


if __name__ == "__main__":
    main()
