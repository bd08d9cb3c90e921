"""Embeddings against Hugging Face transformers. scripts/make_tiny_embedding_models.py writes tiny
random models (F32 GGUF, laid out as llama.cpp's convert_hf_to_gguf.py writes them) from fixed
seeds into the build tree, held to the sha256 in tests/golden/embeddings/NAME.json, which also
holds what transformers makes of a few texts with the same weights (scripts/make_*_embedding_golden.py):
  - tiny_bert: a BertModel with an uncased WordPiece vocabulary and mean pooling
    (sentence-transformers' module files, which the converter reads into pooling_type);
    BertTokenizerFast's ids and the mean-pooled, L2-normalised last hidden states;
  - tiny_llama: a LlamaModel (grouped-query attention; the converter permutes Q and K for
    llama.cpp's rope) with a byte-level BPE vocabulary and no pooling_type; the tokenizer's ids
    and the last token's final hidden state (after the final norm), L2-normalised;
  - tiny_nomic_bert: nomic-bert (nomic-embed-text's architecture: rotary positions, fused QKV,
    SwiGLU), whose modeling code transformers does not ship: its checkpoint is written in the
    Hub layout and its reference is a torch forward pass in the script; mean pooling.
Lumen must tokenize to the same ids and land on the same vectors. The bounds are what each
model's arithmetic leaves: the encoder runs its attention and norms in double (F32 weights);
the decoder attends through the engine's f16 KV cache, whose rounding is the 1e-4 it differs by
(a wrong rope pairing, mask or norm is off by far more)."""
import hashlib
import json
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import run_lumen

GOLDEN = Path(__file__).resolve().parent.parent / "golden" / "embeddings"
sys.path.insert(0, str(GOLDEN.parents[2] / "scripts"))
import make_tiny_embedding_models as tiny  # noqa: E402
from make_tiny_embedding_models import golden_model  # noqa: E402
BOUND = {"tiny_bert": 1e-5, "tiny_llama": 1e-3, "tiny_nomic_bert": 1e-5}


def cases(model):
    return json.loads((GOLDEN / f"{model}.json").read_text(encoding="utf-8"))["cases"]


@pytest.mark.parametrize("model,case", [(m, c) for m in BOUND for c in cases(m)],
                         ids=[f"{m}-{c['text'][:20]}" for m in BOUND for c in cases(m)])
def test_token_ids_match_the_hugging_face_tokenizer(model, case):
    out = run_lumen("tokenize", "-m", golden_model(model), "--add-special", "-p", case["text"]).stdout
    assert [int(i) for i in out.split()] == case["ids"]


@pytest.mark.parametrize("model", list(BOUND))
def test_embeddings_match_transformers(model):
    args = ["embed", "-m", golden_model(model), "-t", "2"]
    for case in cases(model):
        args += ["-p", case["text"]]
    reply = json.loads(run_lumen(*args).stdout)
    assert reply["usage"]["prompt_tokens"] == sum(len(c["ids"]) for c in cases(model))
    worst = 0.0
    for case, entry in zip(cases(model), reply["data"]):
        got, want = np.asarray(entry["embedding"]), np.asarray(case["embedding"])
        assert got.shape == want.shape == (64,)
        worst = max(worst, float(np.max(np.abs(got - want))))
        assert got @ want > 0.9999, case["text"]
    print(f"{model}: max |lumen - transformers| over {len(cases(model))} texts: {worst:.2e}")
    assert worst < BOUND[model]


def test_an_encoder_refuses_to_generate():
    result = run_lumen("run", "-m", golden_model("tiny_bert"), "-p", "hello", "-n", "4", check=False)
    assert result.returncode != 0
    assert "encoder" in result.stderr.decode()


def test_a_generated_model_is_held_to_its_goldens_sha256(tmp_path, monkeypatch):
    """A damaged or stale file in the build tree is rewritten; a generator whose output drifted
    from the one the golden was made from (other weights, another gguf-py) is refused, not
    compared."""
    monkeypatch.setenv("LUMEN_GENERATED_DIR", str(tmp_path))
    want = json.loads((GOLDEN / "tiny_bert.json").read_text(encoding="utf-8"))["gguf_sha256"]
    path = golden_model("tiny_bert")
    path.write_bytes(b"GGUF damaged")
    assert hashlib.sha256(golden_model("tiny_bert").read_bytes()).hexdigest() == want
    path.unlink()
    drifted = tiny.bert_weights
    monkeypatch.setattr(tiny, "bert_weights", lambda: {k: v * 1.001 for k, v in drifted().items()})
    with pytest.raises(AssertionError, match="rerun scripts/make_bert_embedding_golden.py"):
        golden_model("tiny_bert")
    assert not path.exists() and not list(tmp_path.glob(".tiny_bert.*"))
