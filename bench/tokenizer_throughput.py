#!/usr/bin/env python3
"""Encode throughput (MB/s, one thread) of `lumen tokenize` against Hugging Face `tokenizers`
(and llama.cpp) on SmolLM2's vocabulary, over ~16 MB of mixed text made by repeating the
tokenizer corpus (scripts/tokenizer_corpus.py). Not a test: prints one JSON object.

    ~/.cache/lumen/llama-venv/bin/python bench/tokenizer_throughput.py [--lumen build/release/lumen]

The HF tokenizer is assembled from the GGUF (tokens, merges, and the pre-tokenizer llama.cpp runs
for tokenizer.ggml.pre = "smollm": single digits, then the GPT-2 byte-level split) and must give
llama.cpp's ids on every corpus case before it is timed. Lumen's time is the wall time of the
process on the text minus that of the same process on empty input (model load, start-up).
"""
import argparse
import ctypes
import json
import os
import subprocess
import sys
import time
from pathlib import Path

os.environ["RAYON_NUM_THREADS"] = "1"  # before tokenizers starts its thread pool
os.environ["TOKENIZERS_PARALLELISM"] = "false"

import llama_cpp  # noqa: E402
from gguf import GGUFReader  # noqa: E402
from tokenizers import Tokenizer, decoders, models, pre_tokenizers  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "scripts"))
from tokenizer_corpus import CASES  # noqa: E402

CACHE = Path(os.environ.get("LUMEN_CACHE") or Path.home() / ".cache" / "lumen" / "models")
DEFAULT_MODEL = CACHE / "SmolLM2-135M-Instruct.Q4_1.gguf"


def string_array(reader: GGUFReader, key: str) -> list[str]:
    field = reader.fields[key]
    return [bytes(field.parts[i]).decode("utf-8") for i in field.data]


def hf_tokenizer_from_gguf(path: Path) -> Tokenizer:
    reader = GGUFReader(path)
    pre = bytes(reader.fields["tokenizer.ggml.pre"].parts[-1]).decode()
    if pre != "smollm":
        sys.exit(f"{path}: pre-tokenizer {pre!r}; this benchmark only knows 'smollm'")
    tokens = string_array(reader, "tokenizer.ggml.tokens")
    merges = [tuple(m.split(" ", 1)) for m in string_array(reader, "tokenizer.ggml.merges")]
    bpe = models.BPE(vocab={t: i for i, t in enumerate(tokens)}, merges=merges)
    tok = Tokenizer(bpe)
    # No added/special tokens: this is llama.cpp's parse_special = false, where text such as
    # "<|im_start|>" is ordinary text.
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
    ])
    tok.decoder = decoders.ByteLevel()
    return tok


def llama_cpp_ids(llm: llama_cpp.Llama, data: bytes) -> list[int]:
    # Straight to llama_tokenize with a buffer that is big enough (a token is at least one
    # byte): Llama.tokenize would tokenize a long text twice to learn its length.
    vocab = llama_cpp.llama_model_get_vocab(llm.model)
    cap = len(data) + 8
    buf = (llama_cpp.llama_token * cap)()
    n = llama_cpp.llama_tokenize(vocab, data, len(data), buf, cap, False, False)
    if n < 0:
        raise RuntimeError(f"llama_tokenize failed ({n})")
    return buf[:n]


def check_hf_agrees(hf: Tokenizer, llm: llama_cpp.Llama) -> list[str]:
    disagreements = []
    for text in CASES:
        want = llama_cpp_ids(llm, text.encode("utf-8"))
        got = hf.encode(text, add_special_tokens=False).ids
        if got != want:
            disagreements.append(f"{text!r}: hf {got} llama.cpp {want}")
    return disagreements


def best_of(runs: int, fn):
    times = []
    result = None
    for _ in range(runs):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return min(times), result


def time_lumen(lumen: str, model: Path, data: bytes, runs: int):
    def run(payload):
        proc = subprocess.run([lumen, "tokenize", "-m", str(model)], input=payload,
                              capture_output=True, check=False)
        if proc.returncode != 0:
            raise RuntimeError(f"lumen tokenize failed: {proc.stderr.decode(errors='replace')}")
        return proc.stdout
    startup, _ = best_of(runs, lambda: run(b""))
    total, out = best_of(runs, lambda: run(data))
    return max(total - startup, 1e-9), startup, [int(t) for t in out.split()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lumen", default=str(REPO / "build" / "release" / "src" / "cli" / "lumen"))
    parser.add_argument("-m", "--model", type=Path, default=DEFAULT_MODEL)
    parser.add_argument("--megabytes", type=float, default=16.0)
    parser.add_argument("--runs", type=int, default=3, help="best of N for each timing")
    args = parser.parse_args()

    hf = hf_tokenizer_from_gguf(args.model)
    llm = llama_cpp.Llama(model_path=str(args.model), vocab_only=True, verbose=False)
    disagreements = check_hf_agrees(hf, llm)
    if disagreements:
        sys.exit("HF tokenizer disagrees with llama.cpp on the corpus; not timing it:\n  "
                 + "\n  ".join(disagreements[:10]))

    unit = "\n".join(CASES) + "\n"
    text = unit * max(1, round(args.megabytes * 1e6 / len(unit.encode("utf-8"))))
    data = text.encode("utf-8")
    mb = len(data) / 1e6

    hf_s, hf_ids = best_of(args.runs, lambda: hf.encode(text, add_special_tokens=False).ids)
    # HF is much slower on one huge string than on documents of a few KB (its per-string offset
    # bookkeeping), so it is also timed on the same text as one corpus-sized document each.
    copies = text.count(unit)
    hf_doc_s, _ = best_of(args.runs, lambda: hf.encode_batch([unit] * copies,
                                                             add_special_tokens=False))
    ll_s, ll_ids = best_of(args.runs, lambda: llama_cpp_ids(llm, data))
    result = {
        "model": args.model.name,
        "input_mb": round(mb, 3),
        "tokens": len(ll_ids),
        "hf_tokenizers_mb_s": round(mb / hf_s, 2),
        "hf_tokenizers_per_document_mb_s": round(mb / hf_doc_s, 2),
        "document_bytes": len(unit.encode("utf-8")),
        "llama_cpp_mb_s": round(mb / ll_s, 2),
        "hf_matches_llama_cpp_on_bench_text": hf_ids == ll_ids,
    }
    try:
        lumen_s, startup_s, lumen_ids = time_lumen(args.lumen, args.model, data, args.runs)
        result.update({
            "lumen_mb_s": round(mb / lumen_s, 2),
            "lumen_startup_s": round(startup_s, 4),
            "lumen_matches_llama_cpp_on_bench_text": lumen_ids == ll_ids,
            "lumen_over_hf": round(hf_s / lumen_s, 3),
            "lumen_over_hf_per_document": round(hf_doc_s / lumen_s, 3),
        })
    except (OSError, RuntimeError) as err:
        result["lumen_error"] = str(err)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
