"""Every error a client can cause, as the openai SDK sees it: the status code picks the
exception class, and the body has OpenAI's error shape."""
import threading
import time

import openai
import pytest

from conftest import httpx, MODEL_NAME, LumenServer


def completion(client, **kw):
    kw.setdefault("model", MODEL_NAME)
    kw.setdefault("prompt", "Hello")
    kw.setdefault("max_tokens", 4)
    return client.completions.create(**kw)


BAD_REQUESTS = [
    dict(temperature=5.0),
    dict(temperature=-1),
    dict(top_p=0),
    dict(max_tokens=0),
    dict(max_tokens=10**12),
    dict(n=0),
    dict(logprobs=21),                     # too many logprobs
    dict(prompt=""),                       # empty prompt
    dict(prompt=[]),
    dict(prompt=[99999999]),               # token id outside the vocabulary
    dict(prompt=[-1]),
    dict(prompt="word " * 3000),           # longer than the context (2048)
    dict(prompt="hi", max_tokens=2048),    # prompt + max_tokens past the context
    dict(stop=[""]),
    dict(stop=["x" * 257]),                # a stop string past 256 bytes
    dict(stop=[str(i) for i in range(17)]),  # more than 16 stop strings
    dict(logit_bias={"abc": 1}),
    dict(logit_bias={"5": 1000}),
    dict(extra_body={"temperature": "hot"}),
    dict(extra_body={"max_tokens": 1.5}),
    dict(extra_body={"seed": "x"}),
    dict(extra_body={"top_k": -5}),
    dict(extra_body={"min_tokens": 100, "max_tokens": 10}),
    dict(extra_body={"stream_options": {"include_usage": True}}),  # without stream
    dict(extra_body={"prompt": {"a": 1}}),
]


@pytest.mark.parametrize("kw", BAD_REQUESTS, ids=[str(k)[:60] for k in BAD_REQUESTS])
def test_bad_request_is_400(client, kw):
    with pytest.raises(openai.BadRequestError) as info:
        completion(client, **kw)
    error = info.value.body
    assert isinstance(error, dict) and error["message"] and error["type"] == "invalid_request_error"


@pytest.mark.parametrize("kw", [dict(messages=[]), dict(messages=[{"role": "wizard", "content": "x"}]),
                                dict(messages=[{"role": "user", "content": 5}]),
                                dict(messages=[{"role": "user", "content": "x"}], top_logprobs=3),
                                dict(messages=[{"role": "user", "content": "x"}], logprobs=True, top_logprobs=50)])
def test_bad_chat_request_is_400(client, kw):
    with pytest.raises(openai.BadRequestError):
        client.chat.completions.create(model=MODEL_NAME, max_tokens=4, **kw)


def test_streamed_bad_request_is_400_before_the_stream(client):
    with pytest.raises(openai.BadRequestError):
        completion(client, temperature=9, stream=True)


def test_unknown_route_is_404(server, client):
    with pytest.raises(openai.NotFoundError):
        client.get("/no/such/route", cast_to=object)
    with pytest.raises(openai.NotFoundError):
        client.models.retrieve("no-such-model")
    r = httpx.get(server.base_url + "/nope")
    assert r.status_code == 404 and r.json()["error"]["type"] == "not_found_error"


def test_oversized_body_is_413(server, client):
    with pytest.raises(openai.APIStatusError) as info:
        completion(client, prompt="a" * (2 << 20))
    assert info.value.status_code == 413
    assert info.value.body["message"]


def test_malformed_json_and_invalid_utf8_are_400(server):
    for body in [b'{"prompt": "x"', b"not json", b"[1, 2]", b'{"prompt": "\xff\xfe"}', b"\xc0\xaf",
                 b"[" * 100000]:
        r = httpx.post(server.base_url + "/v1/completions", content=body,
                       headers={"Content-Type": "application/json"})
        assert r.status_code == 400, (body[:20], r.text)
        assert set(r.json()["error"]) == {"message", "type", "param", "code"}


@pytest.fixture(scope="module")
def keyed_server():
    s = LumenServer(api_key="sekrit")
    yield s
    assert s.stop() == 0


def test_missing_or_wrong_key_is_401(keyed_server):
    with pytest.raises(openai.AuthenticationError):
        completion(keyed_server.client(api_key="wrong"))
    r = httpx.post(keyed_server.base_url + "/v1/completions", json={"prompt": "x"})
    assert r.status_code == 401
    assert completion(keyed_server.client(), max_tokens=2).choices[0].text is not None
    # Health stays open for probes; metrics need the key (unless --metrics-public).
    assert httpx.get(keyed_server.base_url + "/health").status_code == 200
    assert httpx.get(keyed_server.base_url + "/metrics").status_code == 401
    r = httpx.get(keyed_server.base_url + "/metrics", headers={"Authorization": "Bearer sekrit"})
    assert r.status_code == 200 and "lumen_" in r.text


def test_full_queue_is_429_with_retry_after():
    s = LumenServer("--max-pending-requests", 1)
    try:
        client = s.client()
        started = threading.Event()

        def hold():
            stream = completion(client, max_tokens=100, stream=True, extra_body={"ignore_eos": True})
            for _ in stream:
                started.set()

        holder = threading.Thread(target=hold)
        holder.start()
        assert started.wait(60)
        with pytest.raises(openai.RateLimitError) as info:
            completion(client)
        assert info.value.response.headers["Retry-After"] == "1"
        holder.join()
        # Once the place is free again, requests are served.
        assert completion(client, max_tokens=2).choices
    finally:
        assert s.stop() == 0
