"""IQ4_NL and IQ4_XS models end to end: `lumen quantize` writes them from the default model with
llama-quantize's choice of tensor types (tensor for tensor), and `lumen perplexity` on those bytes agrees with
llama.cpp's llama-perplexity on the same bytes (tests/golden/perplexity/llama_perplexity_iq4.json,
made by scripts/make_iq4_golden.py). The kernels' arithmetic is tested apart (tests/unit/backend,
tests/unit/cuda_host; dequantization against gguf-py in test_quant_exact.py); this is the whole
path a user's IQ4 file takes."""
import hashlib
import json
import subprocess
from collections import Counter
from pathlib import Path

import pytest
from gguf import GGUFReader

from conftest import lumen_bin, real_model

GOLDEN_DIR = Path(__file__).resolve().parent.parent / "golden" / "perplexity"
TEXT = GOLDEN_DIR / "gpl-3.0.txt"
GOLDEN = json.loads((GOLDEN_DIR / "llama_perplexity_iq4.json").read_text())
MODEL = "SmolLM2-135M-Instruct.Q4_1.gguf"


def quantize(tmp_path, qtype):
    out = tmp_path / f"smollm2-{qtype}.gguf"
    r = subprocess.run([lumen_bin(), "quantize", "--allow-requantize", str(real_model(MODEL)), str(out), qtype],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return out


def test_the_reference_was_made_from_these_files():
    assert hashlib.sha256(TEXT.read_bytes()).hexdigest() == GOLDEN["text_sha256"]
    assert hashlib.sha256(real_model(MODEL).read_bytes()).hexdigest() == GOLDEN["source_model_sha256"]


@pytest.mark.parametrize("qtype", ["IQ4_NL", "IQ4_XS"])
def test_perplexity_within_half_a_percent_of_llama_perplexity_on_the_same_file(tmp_path, qtype):
    ref = GOLDEN["files"][qtype]
    path = quantize(tmp_path, qtype)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    assert digest == ref["sha256"], (
        f"lumen quantize wrote other {qtype} bytes than the reference was measured on: if the quantizer "
        "changed on purpose, rerun scripts/make_iq4_golden.py")
    # SmolLM2's 576-wide rows are not whole 256-value super-blocks: IQ4_XS falls back to IQ4_NL
    # there, as llama-quantize does, so the IQ4_XS file exercises both formats.
    chosen = {t.name: t.tensor_type.name for t in GGUFReader(path).tensors}
    assert chosen == ref["llama_quantize_types"]
    types = Counter(chosen.values())
    assert types["IQ4_NL"] > 100
    assert (types["IQ4_XS"] > 0) == (qtype == "IQ4_XS")
    r = subprocess.run([lumen_bin(), "perplexity", "-m", str(path), "-t", "2", "-f", str(TEXT), *GOLDEN["flags"],
                        "--json"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert got["ppl"] == pytest.approx(ref["ppl"], rel=0.005)
    assert got["ppl_error"] == pytest.approx(ref["ppl_error"], rel=0.05)
