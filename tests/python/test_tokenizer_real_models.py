"""`lumen tokenize` / `lumen detokenize` on the real models must agree with llama.cpp's tokenizer
on a varied corpus. The reference is tests/golden/tokenizer/real_models.json, made by
scripts/make_tokenizer_golden.py with llama-cpp-python (built from PyPI's source package).

One lumen process per case and mode (the CLI reads one text from stdin); they run a few at a time,
and each test reports every mismatching case, not just the first."""
import base64
import functools
import hashlib
import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from conftest import REAL_MODELS, real_model, run_lumen

GOLDEN = Path(__file__).resolve().parent.parent / "golden" / "tokenizer" / "real_models.json"
MODEL_FILES = {"smollm2": REAL_MODELS[0], "gemma3": REAL_MODELS[1]}
MODE_FLAGS = {
    "plain": [],
    "add_special": ["--add-special"],
    "parse_special": ["--parse-special"],
    "both": ["--add-special", "--parse-special"],
}
WORKERS = 4
MAX_REPORTED = 10


@pytest.fixture(scope="module")
def golden():
    return json.loads(GOLDEN.read_text(encoding="ascii"))


@functools.lru_cache(maxsize=None)
def file_sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def checked_model(golden, name):
    """The model file, after making sure it is the one the golden ids were made from."""
    path = real_model(MODEL_FILES[name])
    assert file_sha256(path) == golden["generator"]["models"][name], \
        f"{path} is not the file {GOLDEN.name} was generated from"
    return path


def run_all(jobs):
    """Runs `(args, stdin)` jobs through lumen, a few at a time; returns their stdouts in order."""
    def one(job):
        args, data = job
        return run_lumen(*args, input=data).stdout
    with ThreadPoolExecutor(WORKERS) as pool:
        return list(pool.map(one, jobs))


def report(mismatches, total):
    shown = "\n".join(mismatches[:MAX_REPORTED])
    more = len(mismatches) - MAX_REPORTED
    return f"{len(mismatches)} of {total} cases differ from llama.cpp:\n{shown}" + \
        (f"\n... and {more} more" if more > 0 else "")


@pytest.mark.parametrize("name", MODEL_FILES)
@pytest.mark.parametrize("mode", MODE_FLAGS)
def test_tokenize_matches_llama_cpp(golden, name, mode):
    model = checked_model(golden, name)
    cases = [c for c in golden["cases"] if mode in c[name]]
    assert cases, f"no golden cases for mode {mode}"
    outputs = run_all([(["tokenize", "-m", model, *MODE_FLAGS[mode]], c["text"].encode("utf-8"))
                       for c in cases])
    mismatches = []
    for case, out in zip(cases, outputs):
        want = case[name][mode]
        got = [int(tok) for tok in out.split()]
        if got != want:
            mismatches.append(f"  {case['text']!r}\n    lumen:     {got}\n    llama.cpp: {want}")
    assert not mismatches, report(mismatches, len(cases))


@pytest.mark.parametrize("name", MODEL_FILES)
def test_detokenize_matches_llama_cpp(golden, name):
    model = checked_model(golden, name)
    cases = golden["cases"]
    outputs = run_all([(["detokenize", "-m", model],
                        " ".join(map(str, c[name]["plain"])).encode("ascii")) for c in cases])
    mismatches = []
    for case, out in zip(cases, outputs):
        record = case[name]
        want = (base64.b64decode(record["detok_b64"]) if "detok_b64" in record
                else record["detok"].encode("utf-8"))
        if out != want:
            mismatches.append(f"  ids {record['plain']}\n    lumen:     {out!r}\n"
                              f"    llama.cpp: {want!r}")
    assert not mismatches, report(mismatches, len(cases))
