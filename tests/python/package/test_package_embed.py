"""LLM.embed: the vectors /v1/embeddings and `lumen embed` give (one engine path), in vLLM's
shape, for text and token-id prompts; and a BERT's, against transformers' golden."""
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

import lumen

TEXTS = ["The cat sat on the mat.", "Quarterly revenue rose by 12 percent."]
GOLDEN = Path(__file__).resolve().parents[2] / "golden" / "embeddings"
sys.path.insert(0, str(GOLDEN.parents[2] / "scripts"))
from make_tiny_embedding_models import golden_model  # noqa: E402


def largest_difference(a, b):
    assert len(a) == len(b)
    return max(abs(x - y) for x, y in zip(a, b))


def test_embed_matches_the_cli_and_token_ids(llm, model_path, lumen_bin):
    outputs = llm.embed(TEXTS)
    assert [o.prompt for o in outputs] == TEXTS
    cli = json.loads(subprocess.run([lumen_bin, "embed", "-m", str(model_path), "-t", "2",
                                     *sum([["-p", t] for t in TEXTS], [])],
                                    capture_output=True, check=True, text=True).stdout)
    for out, entry in zip(outputs, cli["data"]):
        got = out.outputs.embedding
        assert abs(math.sqrt(sum(x * x for x in got)) - 1) < 1e-5
        assert largest_difference(got, entry["embedding"]) < 1e-5
        by_ids = llm.embed({"prompt_token_ids": out.prompt_token_ids})[0]
        assert largest_difference(by_ids.outputs.embedding, got) < 1e-5


def test_embed_refuses_an_empty_prompt(llm):
    with pytest.raises(TypeError):
        llm.embed([[]])


def test_bert_embed_matches_transformers():
    cases = json.loads((GOLDEN / "tiny_bert.json").read_text(encoding="utf-8"))["cases"]
    bert = lumen.LLM(model=golden_model("tiny_bert"), max_model_len=64, kv_cache_memory_bytes=16 << 20)
    outputs = bert.embed([c["text"] for c in cases])
    for case, out in zip(cases, outputs):
        assert out.prompt_token_ids == case["ids"]
        assert largest_difference(out.outputs.embedding, case["embedding"]) < 1e-5
