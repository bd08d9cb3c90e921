"""`lumen serve`'s HTTP behaviour as users meet it: one server per port, JSON bodies however
curl sends them, 405 for a known route's wrong method, case-insensitive Bearer, an unknown model
answered as OpenAI does, error codes that are strings or null, CORS when asked for, an access log
with request ids, a refused --max-model-len past the model's context."""
import os
import re
import subprocess
import time

import openai
import pytest

from conftest import httpx, LumenServer, MODEL_NAME, model_path


def test_a_second_server_on_a_busy_port_fails(server):
    r = subprocess.run([os.environ["LUMEN_BIN"], "serve", "-m", str(model_path()), "--port", str(server.port),
                        "--kv-cache-memory", "64M", "--max-model-len", "512"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 1
    assert "address already in use" in r.stderr
    assert httpx.get(server.base_url + "/health").status_code == 200


def test_form_encoded_body_is_415_whatever_its_size(server):
    for size in (100, 8_432, 20_000):  # curl -d sends application/x-www-form-urlencoded
        body = '{"prompt": "' + "a" * size + '", "max_tokens": 1}'
        r = httpx.post(server.base_url + "/v1/completions", content=body,
                       headers={"Content-Type": "application/x-www-form-urlencoded"}, timeout=60)
        assert r.status_code == 415, (size, r.text)
        error = r.json()["error"]
        assert "Content-Type: application/json" in error["message"] and error["code"] == "unsupported_media_type"
    r = httpx.post(server.base_url + "/v1/completions", content="{}", headers={"Content-Type": "text/plain"})
    assert r.status_code == 415


def test_json_bodies_with_and_without_content_type_share_one_limit(server):
    body = '{"prompt": "' + "word " * 3000 + '", "max_tokens": 1}'  # 15 KB; too long a prompt
    for headers in ({"Content-Type": "application/json; charset=utf-8"}, {}):
        r = httpx.post(server.base_url + "/v1/completions", content=body, headers=headers, timeout=60)
        assert r.status_code == 400 and "context" in r.text, r.text  # read and parsed, not 413
    huge = '{"prompt": "' + "a" * (2 << 20) + '"}'  # past --max-body-size (1 MiB)
    r = httpx.post(server.base_url + "/v1/completions", content=huge, headers={"Content-Type": "application/json"},
                   timeout=60)
    assert r.status_code == 413


def test_wrong_method_on_a_known_route_is_405(server):
    r = httpx.get(server.base_url + "/v1/completions")
    assert r.status_code == 405 and r.headers["Allow"] == "POST"
    assert r.json()["error"]["code"] == "method_not_allowed"
    r = httpx.post(server.base_url + "/v1/models", json={})
    assert r.status_code == 405 and r.headers["Allow"] == "GET"
    assert httpx.get(server.base_url + "/no/such/route").status_code == 404


def test_unknown_model_is_404_model_not_found(client):
    with pytest.raises(openai.NotFoundError) as info:
        client.completions.create(model="gpt-4o", prompt="Hi", max_tokens=1)
    assert info.value.body["code"] == "model_not_found" and info.value.body["param"] == "model"
    with pytest.raises(openai.NotFoundError):
        client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "Hi"}], max_tokens=1)


def test_error_code_is_a_string_or_null(server):
    bad = [("/v1/completions", {"prompt": "x", "temperature": 9}), ("/v1/completions", {"prompt": ""}),
           ("/v1/chat/completions", {"messages": []}), ("/tokenize", {})]
    for path, body in bad:
        r = server.post(path, body)
        assert r.status_code == 400, r.text
        code = r.json()["error"]["code"]
        assert code is None or isinstance(code, str), (path, code)
    r = httpx.post(server.base_url + "/v1/completions", content="{", headers={"Content-Type": "application/json"})
    assert r.json()["error"]["code"] is None or isinstance(r.json()["error"]["code"], str)


@pytest.fixture(scope="module")
def keyed_cors_server():
    s = LumenServer("--cors-origins", "http://localhost:3000", "--metrics-public", api_key="sekrit")
    yield s
    assert s.stop() == 0


def test_bearer_scheme_is_case_insensitive(keyed_cors_server):
    for scheme in ("Bearer", "bearer", "BEARER"):
        r = httpx.post(keyed_cors_server.base_url + "/tokenize", json={"prompt": "hi"},
                       headers={"Authorization": f"{scheme} sekrit"})
        assert r.status_code == 200, (scheme, r.text)
    r = httpx.post(keyed_cors_server.base_url + "/tokenize", json={"prompt": "hi"},
                   headers={"Authorization": "Basic sekrit"})
    assert r.status_code == 401


def test_metrics_public_opens_only_metrics(keyed_cors_server):
    assert httpx.get(keyed_cors_server.base_url + "/metrics").status_code == 200
    assert httpx.get(keyed_cors_server.base_url + "/v1/models").status_code == 401


def test_cors_for_allowed_origins_only(keyed_cors_server, server):
    url = keyed_cors_server.base_url + "/v1/chat/completions"
    pre = httpx.options(url, headers={"Origin": "http://localhost:3000", "Access-Control-Request-Method": "POST",
                                      "Access-Control-Request-Headers": "authorization, content-type"})
    assert pre.status_code == 204
    assert pre.headers["Access-Control-Allow-Origin"] == "http://localhost:3000"
    assert "POST" in pre.headers["Access-Control-Allow-Methods"]
    assert "Authorization" in pre.headers["Access-Control-Allow-Headers"]
    r = httpx.get(keyed_cors_server.base_url + "/v1/models",
                  headers={"Origin": "http://localhost:3000", "Authorization": "Bearer sekrit"})
    assert r.status_code == 200 and r.headers["Access-Control-Allow-Origin"] == "http://localhost:3000"
    other = httpx.get(keyed_cors_server.base_url + "/v1/models",
                      headers={"Origin": "http://evil.example", "Authorization": "Bearer sekrit"})
    assert "Access-Control-Allow-Origin" not in other.headers
    # Off by default.
    r = httpx.get(server.base_url + "/v1/models", headers={"Origin": "http://localhost:3000"})
    assert "Access-Control-Allow-Origin" not in r.headers


def test_access_log_line_per_request_with_id_status_and_tokens(server, client):
    r = client.completions.with_raw_response.create(model=MODEL_NAME, prompt="Hello", max_tokens=3, temperature=0)
    request_id = r.headers["X-Request-Id"]
    assert re.fullmatch(r"req-[0-9a-f]{16}", request_id)
    line = server.wait_for_log(lambda line: request_id in line)
    assert line, "".join(server.log)
    assert "POST /v1/completions 200" in line and "completion_tokens=3" in line and " ms" in line


def test_a_clients_request_id_is_echoed_and_logged(server, client):
    r = client.completions.with_raw_response.create(model=MODEL_NAME, prompt="Hello", max_tokens=1,
                                                    extra_headers={"X-Request-Id": "my-trace-123"})
    assert r.headers["X-Request-Id"] == "my-trace-123"
    assert server.wait_for_log(lambda line: "my-trace-123" in line and "POST /v1/completions 200" in line)
    # One that a log line could not hold as it is gets an id of the server's own.
    r = client.completions.with_raw_response.create(model=MODEL_NAME, prompt="Hello", max_tokens=1,
                                                    extra_headers={"X-Request-Id": "two words"})
    assert re.fullmatch(r"req-[0-9a-f]{16}", r.headers["X-Request-Id"])


def test_quiet_log_level_logs_no_successful_request():
    s = LumenServer("--log-level", "quiet")
    try:
        assert s.client().completions.create(model=MODEL_NAME, prompt="Hi", max_tokens=1).choices
        time.sleep(0.2)
        assert not any("POST /v1/completions" in line for line in s.log)
    finally:
        assert s.stop() == 0


def test_max_model_len_past_the_models_context_is_refused():
    r = subprocess.run([os.environ["LUMEN_BIN"], "serve", "-m", str(model_path()), "--port", "0",
                        "--max-model-len", "100000"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 1
    assert "exceeds the model's context of 8192" in r.stderr


def test_rebound_host_names_are_refused_on_a_loopback_server(server):
    # A page on evil.example whose DNS now points at 127.0.0.1 still sends its own name.
    r = httpx.get(server.base_url + "/v1/models", headers={"Host": f"evil.example:{server.port}"})
    assert r.status_code == 421 and r.json()["error"]["code"] == "host_not_allowed"
    assert httpx.get(f"http://localhost:{server.port}/v1/models").status_code == 200


def test_allowed_hosts_lists_the_names_answered():
    s = LumenServer("--allowed-hosts", "api.example")
    try:
        ok = httpx.get(s.base_url + "/health", headers={"Host": "api.example"})
        assert ok.status_code == 200
        assert httpx.get(s.base_url + "/health").status_code == 421  # 127.0.0.1 is not listed
    finally:
        assert s.stop() == 0
