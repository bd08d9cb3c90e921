"""Many clients at once, clients that hang up, and a burst of garbage: the server stays up and
every answer stays correct."""
import json
import random
import socket
import time
from concurrent.futures import ThreadPoolExecutor


from conftest import httpx, MODEL_NAME

PROMPTS = [f"Write one sentence about the number {i}:" for i in range(8)]


def test_64_concurrent_streaming_clients_get_independent_correct_outputs(server, client):
    expected = {}
    for p in PROMPTS:
        choice = client.completions.create(model=MODEL_NAME, prompt=p, max_tokens=24, temperature=0).choices[0]
        expected[p] = (choice.text, choice.finish_reason)
    assert len(set(expected.values())) > 1

    def stream(i):
        prompt = PROMPTS[i % len(PROMPTS)]
        c = server.client()
        text, finish = "", None
        for chunk in c.completions.create(model=MODEL_NAME, prompt=prompt, max_tokens=24, temperature=0, stream=True):
            text += chunk.choices[0].text
            finish = chunk.choices[0].finish_reason or finish
        return prompt, text, finish

    with ThreadPoolExecutor(64) as pool:
        results = list(pool.map(stream, range(64)))
    for prompt, text, finish in results:
        assert (text, finish) == expected[prompt]


def wait_until(predicate, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return False


def idle(server):
    m = server.metrics()
    return (m["lumen_num_requests_running"] == 0 and m["lumen_num_requests_waiting"] == 0
            and m["lumen_kv_cache_blocks_used"] == 0)


def test_disconnect_mid_stream_frees_blocks(server, client):
    assert wait_until(lambda: idle(server))
    aborted = server.metrics()['lumen_request_success_total{finished_reason="abort"}']
    body = {"model": MODEL_NAME, "prompt": "Count: 1, 2, 3,", "max_tokens": 1500, "ignore_eos": True, "stream": True}
    with httpx.stream("POST", server.base_url + "/v1/completions", json=body, timeout=60) as r:
        assert r.status_code == 200
        lines = r.iter_lines()
        got = 0
        for line in lines:
            if line.startswith("data: "):
                got += 1
            if got == 5:
                break
        m = server.metrics()
        assert m["lumen_num_requests_running"] == 1 and m["lumen_kv_cache_blocks_used"] > 0
    # The connection is closed: the request is aborted and its blocks are back.
    assert wait_until(lambda: idle(server)), server.metrics()
    assert wait_until(lambda: server.metrics()['lumen_request_success_total{finished_reason="abort"}'] == aborted + 1)
    # And the server goes on serving.
    assert client.completions.create(model=MODEL_NAME, prompt="Hi", max_tokens=3).choices[0].text is not None


def test_disconnect_while_waiting_for_a_whole_response_aborts_it(server):
    assert wait_until(lambda: idle(server))
    body = {"model": MODEL_NAME, "prompt": "Count: 1, 2, 3,", "max_tokens": 1500, "ignore_eos": True}
    try:
        httpx.post(server.base_url + "/v1/completions", json=body, timeout=1.0)
    except httpx.TimeoutException:
        pass
    assert wait_until(lambda: idle(server), timeout=10), server.metrics()


def malformed_bodies():
    valid = json.dumps({"model": MODEL_NAME, "prompt": "Hello there", "max_tokens": 3, "temperature": 0,
                        "stop": ["x"], "logit_bias": {"5": 1}}).encode()
    bodies = [valid[:i] for i in range(0, len(valid), 3)]  # every truncation
    fields = ["prompt", "max_tokens", "temperature", "top_p", "top_k", "n", "stop", "seed", "logprobs",
              "logit_bias", "stream", "presence_penalty", "min_p", "stop_token_ids", "stream_options"]
    odd_values = [None, True, "str", -1, 0, 1.5, 1e308, -1e308, 10**30, -(10**30), [], {}, [[]], [1, "a"], {"a": []},
                  "\u0000", "\ud7ff" * 3, 2**63, -(2**63) - 1, 2**64]
    for f in fields:
        for v in odd_values:
            body = {"model": MODEL_NAME, "prompt": "Hi", "max_tokens": 2}
            body[f] = v
            bodies.append(json.dumps(body).encode())
    bodies += [b"1e400", b'{"prompt": 1e400}', b'{"max_tokens": 1e400, "prompt": "x"}', b"\xff" * 64,
               b'{"prompt": "\xed\xa0\x80"}', b'{"prompt": "\xf4\x90\x80\x80"}', b"{" * 5000, b'{"a":' * 5000,
               b"\x00" * 100, b'{"prompt": "a\\ud800"}', b'{"messages": [{"role": "user", "content": "\xe2\x82"}]}']
    return bodies


def test_burst_of_malformed_requests_gets_4xx_and_the_server_stays_correct(server, client):
    before = client.completions.create(model=MODEL_NAME, prompt="The sky is", max_tokens=10, temperature=0).choices[0].text
    bodies = malformed_bodies()
    random.Random(7).shuffle(bodies)

    def send(body):
        path = random.choice(["/v1/completions", "/v1/chat/completions", "/tokenize", "/detokenize"])
        r = httpx.post(server.base_url + path, content=body, headers={"Content-Type": "application/json"}, timeout=60)
        if r.status_code == 200:
            return path, body, r.status_code
        assert 400 <= r.status_code < 500, (path, body[:80], r.status_code, r.text)
        err = r.json()["error"]
        assert err["message"] and err["type"]
        return path, body, r.status_code

    with ThreadPoolExecutor(16) as pool:
        results = list(pool.map(send, bodies))
    assert sum(1 for *_, status in results if status >= 400) > len(bodies) // 2
    # A raw connection that sends half a request and vanishes.
    with socket.create_connection(("127.0.0.1", server.port)) as s:
        s.sendall(b"POST /v1/completions HTTP/1.1\r\nContent-Length: 1000\r\n\r\n{\"pro")
    assert httpx.get(server.base_url + "/health").status_code == 200
    after = client.completions.create(model=MODEL_NAME, prompt="The sky is", max_tokens=10, temperature=0).choices[0].text
    assert after == before
