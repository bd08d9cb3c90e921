"""/v1/embeddings through the official openai SDK (client.embeddings.create) on SmolLM2: every
input form OpenAI documents, base64 equal to floats, unit-length vectors, batching that changes
nothing, the usage count, and a 400 naming the field for each limit. SmolLM2's file has no
pooling_type, so its vectors are the last token's final hidden state (docs/engine.md,
"Embeddings"); the tiny BERT golden checks an encoder served the same way."""
import base64
import concurrent.futures
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import openai
import pytest

from conftest import MODEL_NAME, LumenServer, model_path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
from make_tiny_embedding_models import golden_model  # noqa: E402

TEXTS = ["The cat sat on the mat.", "A dog slept on the rug.", "Quarterly revenue rose by 12 percent."]


@pytest.fixture(scope="module")
def server():
    s = LumenServer("--max-embedding-inputs", "8", "--max-embedding-input-tokens", "64",
                    "--max-embedding-request-tokens", "160")
    yield s
    assert s.stop() == 0, "".join(s.log)


def vectors(reply):
    return [np.asarray(d.embedding, dtype=np.float64) for d in reply.data]


def test_list_of_strings_one_unit_vector_each_in_order(server):
    reply = server.client().embeddings.create(model=MODEL_NAME, input=TEXTS)
    assert reply.object == "list" and reply.model == MODEL_NAME
    assert [d.index for d in reply.data] == [0, 1, 2]
    assert all(d.object == "embedding" for d in reply.data)
    vs = vectors(reply)
    assert {len(v) for v in vs} == {576}  # SmolLM2-135M's hidden width
    for v in vs:
        assert abs(np.linalg.norm(v) - 1) < 1e-5
    tokens = sum(len(server.tokenize(prompt=t)) for t in TEXTS)
    assert reply.usage.prompt_tokens == tokens and reply.usage.total_tokens == tokens
    # Distinct texts, distinct vectors (a pooled row from the wrong sequence would repeat one).
    assert max(abs(float(vs[0] @ vs[1])), abs(float(vs[0] @ vs[2]))) < 0.9999


def test_batch_equals_each_alone_and_token_ids_equal_text(server):
    client = server.client()
    together = vectors(client.embeddings.create(model=MODEL_NAME, input=TEXTS))
    for text, want in zip(TEXTS, together):
        alone = vectors(client.embeddings.create(model=MODEL_NAME, input=text))[0]
        assert np.max(np.abs(alone - want)) < 1e-5, text
        ids = server.tokenize(prompt=text)
        by_ids = vectors(client.embeddings.create(model=MODEL_NAME, input=ids))[0]
        assert np.max(np.abs(by_ids - want)) < 1e-5, text
    lists = vectors(client.embeddings.create(model=MODEL_NAME, input=[server.tokenize(prompt=t) for t in TEXTS]))
    assert max(np.max(np.abs(a - b)) for a, b in zip(lists, together)) < 1e-5


def test_base64_decodes_to_the_float_vector(server):
    client = server.client()
    floats = vectors(client.embeddings.create(model=MODEL_NAME, input=TEXTS[0], encoding_format="float"))[0]
    # The SDK decodes base64 itself when it asked for it; the raw body shows what went over the wire.
    raw = server.post("/v1/embeddings", {"model": MODEL_NAME, "input": TEXTS[0], "encoding_format": "base64"})
    assert raw.status_code == 200, raw.text
    encoded = raw.json()["data"][0]["embedding"]
    assert isinstance(encoded, str)
    assert np.array_equal(np.frombuffer(base64.b64decode(encoded), dtype="<f4"), floats.astype(np.float32))
    # Asked for base64 explicitly, the SDK hands the string over as it came; left to itself it
    # asks for base64 and decodes it (every other test here goes that way).
    sdk = client.embeddings.create(model=MODEL_NAME, input=TEXTS[0], encoding_format="base64").data[0].embedding
    assert np.array_equal(np.frombuffer(base64.b64decode(sdk), dtype="<f4"), floats.astype(np.float32))


def test_dimensions_of_the_model_pass_others_are_refused(server):
    client = server.client()
    assert len(client.embeddings.create(model=MODEL_NAME, input="x", dimensions=576).data[0].embedding) == 576
    with pytest.raises(openai.BadRequestError) as e:
        client.embeddings.create(model=MODEL_NAME, input="x", dimensions=64)
    assert e.value.body["param"] == "dimensions" and "576" in e.value.body["message"]


@pytest.mark.parametrize("body,param,words", [
    ({"input": ["x"] * 9}, "input", "at most 8"),
    ({"input": "word " * 200}, "input", "at most 64"),
    ({"input": [[1, 2], [3] * 65]}, "input", "input 1 has 65 tokens"),
    ({"input": []}, "input", "empty"),
    ({"input": ["ok", ""]}, "input", "input 1 is empty"),
    ({"input": [1, 2, 10 ** 9]}, "input", "outside"),
    ({"input": ["a", [1, 2]]}, "input", "must be"),
    ({"input": 5}, "input", "must be"),
    ({}, "input", "required"),
    ({"input": "x", "encoding_format": "int8"}, "encoding_format", "base64"),
    ({"input": "x", "model": "another-model"}, "model", ""),
])
def test_bad_requests_are_400_naming_the_field(server, body, param, words):
    r = server.post("/v1/embeddings", {"model": MODEL_NAME, **body})
    assert r.status_code in (400, 404), r.text
    error = r.json()["error"]
    assert error["param"] == param, error
    assert words in error["message"], error


def test_a_request_over_the_total_token_cap_is_a_400_naming_it(server):
    """Each input fits (64 tokens), eight inputs are allowed, but not 160 tokens in all; texts far
    over the total are refused by their bytes, before they are tokenized."""
    client = server.client()
    before = server.metrics()
    with pytest.raises(openai.BadRequestError) as e:
        client.embeddings.create(model=MODEL_NAME, input=[[1] * 60] * 3)
    assert e.value.body["param"] == "input"
    assert "180 tokens, more than the 160 tokens" in e.value.body["message"], e.value.body
    assert "--max-embedding-request-tokens" in e.value.body["message"]
    with pytest.raises(openai.BadRequestError) as e:
        client.embeddings.create(model=MODEL_NAME, input=["x" * 4000] * 3)
    assert "12000 bytes of text, far more than the 160 tokens" in e.value.body["message"], e.value.body
    # Exactly at the cap is fine.
    reply = client.embeddings.create(model=MODEL_NAME, input=[[1] * 60, [2] * 60, [3] * 40])
    assert reply.usage.prompt_tokens == 160 and len(reply.data) == 3
    after = server.metrics()
    # Refused requests are not counted as answered.
    assert after["lumen_embedding_requests_total"] - before["lumen_embedding_requests_total"] == 1
    assert after["lumen_embedding_inputs_total"] - before["lumen_embedding_inputs_total"] == 3
    assert after["lumen_embedding_tokens_total"] - before["lumen_embedding_tokens_total"] == 160


def test_metrics_count_embedding_requests_inputs_and_tokens(server):
    before = server.metrics()
    reply = server.client().embeddings.create(model=MODEL_NAME, input=TEXTS)
    after = server.metrics()
    assert after["lumen_embedding_requests_total"] - before["lumen_embedding_requests_total"] == 1
    assert after["lumen_embedding_inputs_total"] - before["lumen_embedding_inputs_total"] == len(TEXTS)
    assert after["lumen_embedding_tokens_total"] - before["lumen_embedding_tokens_total"] == reply.usage.prompt_tokens
    # Embedding tokens are not generation's prompt tokens.
    assert after["lumen_prompt_tokens_total"] == before["lumen_prompt_tokens_total"]


def test_cli_embed_gives_the_servers_vectors(server):
    """`lumen embed` runs the same engine path: its JSON is the server's, vector for vector."""
    out = subprocess.run([os.environ["LUMEN_BIN"], "embed", "-m", str(model_path()), "-t", "2", *sum([["-p", t] for t in TEXTS], [])],
                         capture_output=True, check=True, text=True)
    cli = json.loads(out.stdout)
    served = vectors(server.client().embeddings.create(model=MODEL_NAME, input=TEXTS))
    assert cli["usage"]["prompt_tokens"] == sum(len(server.tokenize(prompt=t)) for t in TEXTS)
    for entry, want in zip(cli["data"], served):
        assert np.max(np.abs(np.asarray(entry["embedding"]) - want)) < 1e-5


def test_bert_encoder_served_matches_transformers():
    """An encoder through the server: the tiny BERT golden's vectors (transformers', mean pooling),
    asked for with the SDK like any other model."""
    golden = Path(__file__).resolve().parent.parent / "golden" / "embeddings"
    cases = json.loads((golden / "tiny_bert.json").read_text(encoding="utf-8"))["cases"]
    bert = LumenServer(model=golden_model("tiny_bert"), max_model_len=64)
    try:
        reply = bert.client().embeddings.create(model="tiny_bert", input=[c["text"] for c in cases])
        assert reply.usage.prompt_tokens == sum(len(c["ids"]) for c in cases)
        for case, got in zip(cases, vectors(reply)):
            assert np.max(np.abs(got - np.asarray(case["embedding"]))) < 1e-5, case["text"]
        # It cannot generate: a completion is a 400 that says why.
        with pytest.raises(openai.BadRequestError) as e:
            bert.client().completions.create(model="tiny_bert", prompt="hello", max_tokens=2)
        assert "encoder" in e.value.body["message"]
    finally:
        assert bert.stop() == 0, "".join(bert.log)


def test_concurrent_requests_each_get_their_own_vectors(server):
    """Requests that arrive together share the engine's passes (Engine::embed batches every
    waiting request's inputs); each must still get exactly the vectors it gets alone."""
    client = server.client()
    texts = [f"{t} ({i})" for i, t in enumerate(TEXTS * 3)]
    alone = [vectors(client.embeddings.create(model=MODEL_NAME, input=[t, t[::-1]])) for t in texts]
    with concurrent.futures.ThreadPoolExecutor(len(texts)) as pool:
        together = list(pool.map(lambda t: vectors(client.embeddings.create(model=MODEL_NAME, input=[t, t[::-1]])),
                                 texts))
    for text, want, got in zip(texts, alone, together):
        assert max(np.max(np.abs(a - b)) for a, b in zip(want, got)) < 1e-5, text


def test_unknown_fields_are_refused_and_known_extras_named(server):
    r = server.post("/v1/embeddings", {"model": MODEL_NAME, "input": "x", "dimension": 576})
    assert r.status_code == 400 and r.json()["error"]["param"] == "dimension", r.text
    r = server.post("/v1/embeddings", {"model": MODEL_NAME, "input": "x", "user": "u", "truncate_prompt_tokens": 8})
    assert r.status_code == 200, r.text
    assert r.headers["X-Lumen-Ignored-Fields"] == "truncate_prompt_tokens, user"


def test_control_token_text_is_plain_text(server):
    # A client's "<|im_end|>" is the characters, never SmolLM2's end-of-turn token (id 2): it
    # takes several tokens, and its vector is not the control token's.
    client = server.client()
    text = "<|im_end|>"
    reply = client.embeddings.create(model=MODEL_NAME, input=text)
    assert reply.usage.prompt_tokens > 2
    as_text = vectors(reply)[0]
    control = vectors(client.embeddings.create(model=MODEL_NAME, input=[2]))[0]
    assert np.max(np.abs(as_text - control)) > 1e-3
