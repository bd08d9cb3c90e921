"""AsyncEngine.embed: LLM.embed's vectors, awaited on an asyncio loop while the engine's own thread
runs the passes between generation steps; refused inputs raise at once; a BERT's vectors match
transformers' golden."""
import asyncio
import json
import sys
from pathlib import Path

import pytest

import lumen
from conftest import ENGINE_OPTIONS, greedy

TEXTS = ["The cat sat on the mat.", "Quarterly revenue rose by 12 percent.", "a"]
GOLDEN = Path(__file__).resolve().parents[2] / "golden" / "embeddings"
sys.path.insert(0, str(GOLDEN.parents[2] / "scripts"))
from make_tiny_embedding_models import golden_model  # noqa: E402


def largest_difference(a, b):
    assert len(a) == len(b)
    return max(abs(x - y) for x, y in zip(a, b))


@pytest.fixture(scope="module")
def engine(model_path):
    engine = lumen.AsyncEngine(model=model_path, **ENGINE_OPTIONS)
    yield engine
    engine.shutdown()


def test_async_embed_equals_llm_embed_for_text_and_token_ids(engine, llm):
    want = llm.embed(TEXTS)

    async def main():
        by_text = await engine.embed(TEXTS)
        by_ids = await engine.embed([{"prompt_token_ids": o.prompt_token_ids} for o in want])
        one = await engine.embed(TEXTS[0])
        return by_text, by_ids, one

    by_text, by_ids, one = asyncio.run(main())
    assert [o.prompt for o in by_text] == TEXTS
    for w, a, b in zip(want, by_text, by_ids):
        assert a.prompt_token_ids == w.prompt_token_ids
        assert largest_difference(a.outputs.embedding, w.outputs.embedding) < 1e-5
        assert largest_difference(b.outputs.embedding, w.outputs.embedding) < 1e-5
    assert len(one) == 1 and largest_difference(one[0].outputs.embedding, want[0].outputs.embedding) < 1e-5


def test_embeddings_while_a_stream_runs_leave_both_right(engine, llm):
    """Embeddings and a stream share the loop thread: the stream's text is its greedy text, each
    concurrent embed call gets its own vectors, asked for while the stream is under way."""
    params = greedy(48)
    expected = llm.generate(["Once upon a time"], params)[0].outputs[0].text
    want = llm.embed(TEXTS)

    async def main():
        chunks = []

        async def stream():
            async for out in engine.generate("Once upon a time", params):
                chunks.append(out)
            return chunks[-1].outputs[0].text

        task = asyncio.create_task(stream())
        while not chunks:  # the stream has started before the embeddings are asked for
            await asyncio.sleep(0.005)
        vectors = await asyncio.gather(*(engine.embed([t, t]) for t in TEXTS))
        during = len(chunks)
        return await task, vectors, during

    text, vectors, during = asyncio.run(main())
    assert text == expected
    assert during >= 1
    for w, pair in zip(want, vectors):
        for out in pair:
            assert largest_difference(out.outputs.embedding, w.outputs.embedding) < 1e-5


def test_async_embed_refusals(engine):
    async def main():
        with pytest.raises(lumen.LumenError, match="outside the vocabulary"):
            await engine.embed({"prompt_token_ids": [1, 10 ** 8]})
        with pytest.raises(TypeError):
            await engine.embed([[]])
        # The engine goes on serving after a refusal.
        return await engine.embed("still here")

    assert len(asyncio.run(main())[0].outputs.embedding) == 576  # SmolLM2-135M's width


def test_async_bert_embed_matches_transformers():
    cases = json.loads((GOLDEN / "tiny_bert.json").read_text(encoding="utf-8"))["cases"]
    bert = lumen.AsyncEngine(model=golden_model("tiny_bert"), max_model_len=64, kv_cache_memory_bytes=16 << 20)
    try:
        outputs = asyncio.run(bert.embed([c["text"] for c in cases]))
    finally:
        bert.shutdown()
    for case, out in zip(cases, outputs):
        assert out.prompt_token_ids == case["ids"]
        assert largest_difference(out.outputs.embedding, case["embedding"]) < 1e-5
