"""lumen.AsyncEngine: streamed deltas add up to the non-streaming greedy text, requests run
concurrently, abort and cancellation end a request, the event loop is never blocked."""
import asyncio
import time

import pytest

import lumen
from conftest import ENGINE_OPTIONS, greedy

PROMPTS = ["The capital of France is", "Once upon a time", "def fibonacci(n):"]


@pytest.fixture(scope="module")
def engine(model_path):
    engine = lumen.AsyncEngine(model=model_path, **ENGINE_OPTIONS)
    yield engine
    engine.shutdown()


async def collect(engine, prompt, params, request_id=None):
    outs = [out async for out in engine.generate(prompt, params, request_id=request_id)]
    return outs


def test_streamed_deltas_equal_the_greedy_text(engine, llm):
    params = greedy(20)
    expected = [o.outputs[0].text for o in llm.generate(PROMPTS, params)]

    async def main():
        return await asyncio.gather(*(collect(engine, p, params) for p in PROMPTS))

    for outs, text in zip(asyncio.run(main()), expected):
        assert len(outs) > 1  # streamed, not delivered whole
        assert "".join(o.outputs[0].delta for o in outs) == text
        assert outs[-1].outputs[0].text == text and outs[-1].finished
        assert all(not o.finished for o in outs[:-1])
        assert outs[-1].outputs[0].finish_reason in ("stop", "length")


def test_abort_ends_the_stream(engine):
    async def main():
        seen = []
        async for out in engine.generate("Count: 1, 2, 3,", greedy(500, ignore_eos=True), request_id="long"):
            seen.append(out)
            if len(seen) == 3:
                await engine.abort("long")
        return seen

    seen = asyncio.run(main())
    assert seen[-1].finished and seen[-1].outputs[0].finish_reason == "abort"
    assert len(seen[-1].outputs[0].token_ids) < 500


def test_cancelling_the_consumer_aborts_and_the_loop_stays_free(engine):
    async def main():
        ticks = 0
        consumer_started = asyncio.Event()

        async def consume():
            async for _ in engine.generate("Tell me a story.", greedy(500, ignore_eos=True), request_id="c"):
                consumer_started.set()

        task = asyncio.create_task(consume())
        await consumer_started.wait()
        start = time.perf_counter()
        while time.perf_counter() - start < 0.3:  # the loop keeps ticking while the engine works
            await asyncio.sleep(0.01)
            ticks += 1
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        # The same id is free again at once, and the aborted request left the engine.
        await collect(engine, "Hi", greedy(2), request_id="c")
        for _ in range(100):
            if not engine._engine.has_unfinished():
                break
            await asyncio.sleep(0.01)
        return ticks

    assert asyncio.run(main()) >= 5  # a blocked loop would tick once, after the whole generation
    assert not engine._engine.has_unfinished()


def test_async_errors(engine):
    async def main():
        with pytest.raises(ValueError, match="temperature"):
            await collect(engine, "Hi", lumen.SamplingParams(temperature=-2))
        with pytest.raises(ValueError):
            await collect(engine, [10**9], greedy(2))

        async def hold():
            async for _ in engine.generate("Hello", greedy(50, ignore_eos=True), request_id="dup"):
                await asyncio.sleep(0.05)

        holder = asyncio.create_task(hold())
        await asyncio.sleep(0.1)
        with pytest.raises(ValueError, match="already running"):
            await collect(engine, "Hi", greedy(2), request_id="dup")
        holder.cancel()
        await asyncio.gather(holder, return_exceptions=True)

    asyncio.run(main())


def test_async_chat_and_n(engine, llm):
    messages = [{"role": "user", "content": "What is 2 + 2?"}]
    [expected] = llm.chat(messages, greedy(12))

    async def main():
        chat = [o async for o in engine.chat(messages, greedy(12))]
        many = await collect(engine, "Hi", lumen.SamplingParams(n=2, temperature=0.9, seed=3, max_tokens=5))
        return chat, many

    chat, many = asyncio.run(main())
    assert chat[-1].outputs[0].text == expected.outputs[0].text
    assert [o.index for o in many[-1].outputs] == [0, 1]
    assert all(len(o.token_ids) == 5 for o in many[-1].outputs)
