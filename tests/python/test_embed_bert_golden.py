"""BERT embeddings against Hugging Face transformers: tests/golden/embeddings holds a tiny random
BertModel converted by llama.cpp's convert_hf_to_gguf.py (F32, pooling_type mean) and, for a few
texts, BertTokenizerFast's ids and the mean-pooled, L2-normalised last hidden states
(scripts/make_bert_embedding_golden.py). Lumen must tokenize to the same ids (WordPiece: lowercase,
accents, punctuation, pieces, [UNK], [CLS] ... [SEP]) and land on the same vectors: an F32 model
whose attention and norms Lumen computes in double leaves only rounding between them."""
import json
from pathlib import Path

import numpy as np
import pytest

from conftest import run_lumen

GOLDEN = Path(__file__).resolve().parent.parent / "golden" / "embeddings"
CASES = json.loads((GOLDEN / "tiny_bert.json").read_text(encoding="utf-8"))["cases"]
MODEL = GOLDEN / "tiny_bert.gguf"


@pytest.mark.parametrize("case", CASES, ids=[c["text"][:24] for c in CASES])
def test_wordpiece_ids_match_bert_tokenizer_fast(case):
    ids = [int(i) for i in run_lumen("tokenize", "-m", MODEL, "--add-special", "-p", case["text"]).stdout.split()]
    assert ids == case["ids"]


def test_mean_pooled_embeddings_match_transformers():
    args = ["embed", "-m", MODEL, "-t", "2"]
    for case in CASES:
        args += ["-p", case["text"]]
    reply = json.loads(run_lumen(*args).stdout)
    assert reply["usage"]["prompt_tokens"] == sum(len(c["ids"]) for c in CASES)
    worst = 0.0
    for case, entry in zip(CASES, reply["data"]):
        got, want = np.asarray(entry["embedding"]), np.asarray(case["embedding"])
        assert got.shape == want.shape == (64,)
        worst = max(worst, float(np.max(np.abs(got - want))))
        assert got @ want > 0.999999, case["text"]
    print(f"max |lumen - transformers| over {len(CASES)} texts: {worst:.2e}")
    assert worst < 1e-5


def test_an_encoder_refuses_to_generate():
    result = run_lumen("run", "-m", MODEL, "-p", "hello", "-n", "4", check=False)
    assert result.returncode != 0
    assert "encoder" in result.stderr.decode()
