"""Importance-based KV eviction through the server: the flag (--kv-eviction h2o:...) and a
request's kv_eviction field. Greedy output with a budget the request never reaches equals the
full cache's; a small budget evicts (the metrics count it) and the text stays coherent; bad
fields are 400s naming the field, and the server goes on serving."""
import re

import pytest

from conftest import MODEL_NAME, LumenServer, httpx

PROMPT = "Here is a list of the numbers from one to a thousand: 1, 2, 3, 4, 5,"


@pytest.fixture(scope="module")
def server():
    s = LumenServer(max_model_len=1024)
    yield s
    assert s.stop() == 0, "".join(s.log)


def complete(server, n, **extra):
    body = {"model": MODEL_NAME, "prompt": PROMPT, "max_tokens": n, "temperature": 0, "ignore_eos": True, **extra}
    # A long timeout: CI's two cores run the other e2e files beside this one.
    r = httpx.post(server.base_url + "/v1/completions", json=body, timeout=600)
    assert r.status_code == 200, r.text
    return r.json()["choices"][0]["text"]


def counting_share(text):
    numbers = [int(x) for x in re.findall(r"\d+", text)]
    return sum(b == a + 1 for a, b in zip(numbers, numbers[1:])) / max(1, len(numbers) - 1), max(numbers)


def test_a_budget_never_reached_changes_nothing_and_a_small_one_evicts(server):
    full = complete(server, 32)
    assert complete(server, 32, kv_eviction="h2o:budget=128") == full
    assert complete(server, 32, kv_eviction="snapkv:budget=64,window=8") == full  # the prompt is ~30 tokens
    before = server.metrics().get("lumen_kv_evictions_total", 0)
    text = complete(server, 100, kv_eviction="h2o:budget=64,recent=32")
    share, highest = counting_share(text)
    print(f"h2o, budget 64: counted to {highest}, {share:.0%} of steps up by one")
    assert share > 0.9 and highest > 30, text
    assert server.metrics()["lumen_kv_evictions_total"] >= before + (130 - 64) // 16


@pytest.mark.parametrize("value, words", [
    ("lru:budget=4", "snapkv, h2o or none"),
    ("snapkv:window=4", "budget=B"),
    ("h2o:budget=64,recent=64", "recent (64)"),
    ("h2o:budget=100000", "larger than the context"),
    (64, "must be a string"),
    ("h2o:budget=16,recent=2", "two blocks"),  # the engine's check: H2O evicts a block of 16 at a time
])
def test_bad_values_are_400s_naming_the_field(server, value, words):
    r = server.post("/v1/completions", {"model": MODEL_NAME, "prompt": PROMPT, "max_tokens": 4, "kv_eviction": value})
    assert r.status_code == 400, r.text
    assert words in r.text
    assert complete(server, 4)  # and it goes on


def test_the_flag_applies_to_every_request():
    s = LumenServer("--kv-eviction", "h2o:budget=64,recent=32", max_model_len=1024)
    try:
        text = complete(s, 80)
        assert counting_share(text)[0] > 0.9, text
        assert s.metrics()["lumen_kv_evictions_total"] >= 1
    finally:
        assert s.stop() == 0, "".join(s.log)
