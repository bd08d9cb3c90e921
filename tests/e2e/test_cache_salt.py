"""Prefix-cache isolation: requests share cached prompt blocks only with the same `cache_salt`
(vLLM's field) and, when the server has API keys, only with requests made with the same key,
so one tenant cannot learn another's prompts from how fast its own are answered."""
import pytest

from conftest import httpx, LumenServer, MODEL_NAME

PROMPT = "The history of the lighthouse keepers of the northern coast is long and full of storms. " * 6


def hits(server):
    return server.metrics()["lumen_prefix_cache_hits_total"]


def complete(server, key=None, **extra):
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    r = httpx.post(server.base_url + "/v1/completions", headers=headers, timeout=60,
                   json={"model": MODEL_NAME, "prompt": PROMPT, "max_tokens": 1, **extra})
    assert r.status_code == 200, r.text


def test_cache_salt_separates_cached_prompts():
    s = LumenServer()
    try:
        complete(s, cache_salt="tenant-a")
        before = hits(s)
        complete(s, cache_salt="tenant-b")
        assert hits(s) == before  # another salt: nothing shared
        complete(s, cache_salt="tenant-a")
        assert hits(s) > before  # the same salt: the prompt's blocks are reused
        r = s.post("/v1/completions", {"prompt": "x", "cache_salt": 5})
        assert r.status_code == 400 and r.json()["error"]["param"] == "cache_salt"
    finally:
        assert s.stop() == 0


def test_each_api_key_gets_its_own_cache():
    s = LumenServer("--api-key", "key-b", api_key="key-a")
    try:
        complete(s, key="key-a")
        before = hits(s)
        complete(s, key="key-b")
        assert hits(s) == before
        complete(s, key="key-a")
        assert hits(s) > before
    finally:
        assert s.stop() == 0
