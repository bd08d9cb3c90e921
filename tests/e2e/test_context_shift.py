"""A server that shifts contexts (--kv-eviction, StreamingLLM) serves a request longer than the
whole context, which a plain server refuses, and the text stays coherent across the shifts."""
import re

import pytest

from conftest import MODEL_NAME, LumenServer

PROMPT = "Here is a list of the numbers from one to a thousand: 1, 2, 3, 4, 5,"
# The shifting server's context: the request runs 200 tokens past it. Any context far above the
# window (64) shifts the same way, every 16 tokens; a small one keeps the generation short.
CONTEXT = 512


@pytest.fixture(scope="module")
def streaming_server():
    s = LumenServer("--kv-eviction", "sink:4,window:64", max_model_len=CONTEXT)
    yield s
    assert s.stop() == 0, "".join(s.log)


def test_a_request_runs_past_the_context(streaming_server):
    n = CONTEXT + 200
    stream = streaming_server.client().completions.create(
        model=MODEL_NAME, prompt=PROMPT, max_tokens=n, temperature=0, stream=True, extra_body={"ignore_eos": True})
    text, finish = "", None
    for chunk in stream:
        text += chunk.choices[0].text
        finish = chunk.choices[0].finish_reason or finish
    assert finish == "length"
    assert len(streaming_server.tokenize(prompt=text)) >= n - 16  # retokenizing may merge a few
    numbers = [int(x) for x in re.findall(r"\d+", text)]
    up = sum(b == a + 1 for a, b in zip(numbers, numbers[1:]))
    print(f"counted to {max(numbers)}, {up} of {len(numbers) - 1} steps up by one")
    assert up >= 0.9 * (len(numbers) - 1), text[-500:]  # still counting, through ~40 shifts
    assert max(numbers) > 120  # far past the dozen numbers the window holds
    metrics = streaming_server.metrics()
    assert metrics["lumen_context_shifts_total"] >= (n - 100) // 16
    assert metrics["lumen_kv_cache_usage_ratio"] == 0.0


def test_a_plain_server_refuses_the_same_request():
    server = LumenServer(max_model_len=CONTEXT)
    try:
        r = server.post("/v1/completions", {"model": MODEL_NAME, "prompt": PROMPT, "max_tokens": CONTEXT + 200})
    finally:
        assert server.stop() == 0, "".join(server.log)
    assert r.status_code == 400, r.text
    assert "max_tokens" in r.text
