"""Admission across clients and the output budget (issue 14): one tenant cannot take every
place, places come back on every way out of a request, and a request whose response could be
huge is refused up front with a 400 naming the field to lower."""
import threading
import time

import pytest

from conftest import httpx, MODEL_NAME, LumenServer

ALPHA, BETA = "alpha-key", "beta-key"


def post(server, path, body, key, timeout=60):
    return httpx.post(server.base_url + path, json={"model": MODEL_NAME, **body},
                      headers={"Authorization": f"Bearer {key}"}, timeout=timeout)


def test_a_response_over_the_output_budget_is_400_naming_the_field(server):
    # 64 prompts x 16 choices x an echoed 1000-token prompt with 20 alternatives per token:
    # 21 million entries, far past the default budget. Refused before any work.
    prompt = [[1000 + (i * 7 + j) % 5000 for j in range(1000)] for i in range(64)]
    r = server.post("/v1/completions", {"model": MODEL_NAME, "prompt": prompt, "n": 16, "echo": True,
                                        "logprobs": 20, "max_tokens": 1})
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert error["param"] == "prompt"
    assert "--max-output-records" in error["message"]
    # The same request, small, is served.
    r = server.post("/v1/completions", {"model": MODEL_NAME, "prompt": prompt[0][:20], "n": 2, "echo": True,
                                        "logprobs": 2, "max_tokens": 1})
    assert r.status_code == 200, r.text


@pytest.fixture(scope="module")
def tenants():
    # 4 places: each tenant may hold 2 (the default share, half). A small output budget lets
    # chat requests fail after rendering, under admission.
    s = LumenServer("--max-pending-requests", 4, "--max-output-records", 20000, "--api-key", BETA, api_key=ALPHA)
    yield s
    assert s.stop() == 0, "".join(s.log)


def hold_places(server, key, n):
    """Streams a long request of n choices; returns (started, stop) events. Setting stop hangs up."""
    started, stop = threading.Event(), threading.Event()

    def run():
        body = {"model": MODEL_NAME, "prompt": "Count: 1, 2, 3,", "max_tokens": 1500, "ignore_eos": True,
                "n": n, "stream": True}
        with httpx.stream("POST", server.base_url + "/v1/completions", json=body, timeout=120,
                          headers={"Authorization": f"Bearer {key}"}) as r:
            assert r.status_code == 200
            for line in r.iter_lines():
                if line.startswith("data: "):
                    started.set()
                if stop.is_set():
                    break

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return started, stop, thread


def small(server, key, **extra):
    return post(server, "/v1/completions", {"prompt": "Hi", "max_tokens": 2, **extra}, key)


def test_a_tenant_holding_its_share_gets_429_while_another_is_served(tenants):
    started, stop, thread = hold_places(tenants, ALPHA, 2)
    try:
        assert started.wait(60)
        r = small(tenants, ALPHA)
        assert r.status_code == 429, r.text
        assert r.headers["Retry-After"] == "1"
        assert "per-client limit" in r.json()["error"]["message"]
        # Chat templates render only under admission: a conversation the template would refuse
        # (a 400 once rendered) is a 429 here, so it was never rendered; /tokenize too.
        bad_chat = {"messages": [{"role": "user", "content": "Hi"}], "chat_template_kwargs": {"messages": []}}
        assert post(tenants, "/v1/chat/completions", bad_chat, ALPHA).status_code == 429
        assert post(tenants, "/tokenize", bad_chat, ALPHA).status_code == 429
        assert post(tenants, "/v1/chat/completions", bad_chat, BETA).status_code == 400
        # The other tenant still has its half.
        r = small(tenants, BETA, n=2)
        assert r.status_code == 200, r.text
    finally:
        stop.set()
        thread.join(60)
    # Hung up: the stream is aborted and its places come back.
    deadline = time.time() + 30
    while (r := small(tenants, ALPHA, n=2)).status_code == 429 and time.time() < deadline:
        time.sleep(0.2)
    assert r.status_code == 200, r.text


def test_a_request_larger_than_a_share_is_400_not_429(tenants):
    # It could never be admitted, so retrying would not help.
    r = small(tenants, BETA, n=3)
    assert r.status_code == 400, r.text
    assert r.json()["error"]["param"] == "n"
    assert "--max-queued-requests-per-client" in r.json()["error"]["message"]


def test_failures_after_admission_give_their_places_back(tenants):
    # Each of these fails after taking its places (the template's 400, the budget known only
    # once the prompt is rendered, the context check when the engine request is built). More
    # failures than the share: a leaked place would turn the last request into a 429.
    messages = [{"role": "user", "content": "Hello"}]
    failures = [
        ("/v1/chat/completions", {"messages": messages, "chat_template_kwargs": {"messages": []}},
         "chat_template_kwargs.messages"),
        # No max_completion_tokens: the rest of the context, so the count needs the prompt.
        ("/v1/chat/completions", {"messages": messages, "n": 2, "logprobs": True, "top_logprobs": 20},
         "max_completion_tokens"),
        ("/v1/completions", {"prompt": "Hello", "n": 2, "max_tokens": 2048}, "max_tokens"),
    ] * 3
    for path, body, param in failures:
        r = post(tenants, path, body, ALPHA)
        assert r.status_code == 400, r.text
        assert r.json()["error"]["param"] == param, r.text
    r = post(tenants, "/v1/chat/completions", {"messages": messages, "n": 2, "max_completion_tokens": 2}, ALPHA)
    assert r.status_code == 200, r.text
    # With max_completion_tokens the budget is known before admission.
    r = post(tenants, "/v1/chat/completions", {"messages": messages, "n": 2, "logprobs": True, "top_logprobs": 20,
                                               "max_completion_tokens": 1000}, ALPHA)
    assert r.status_code == 400 and r.json()["error"]["param"] == "max_completion_tokens", r.text
