"""`lumen serve --role proxy` behind the same client-facing rules as `lumen serve`, through the
real command line: with `--api-key` (or LUMEN_API_KEY) every route but /health needs the key,
/metrics too unless `--metrics-public`, CORS answers only `--cors-origins`; and a flag the proxy
does not act on is refused (exit 1), never ignored. The attack is the one a review found open: a
key given only to the proxy, and chat and /v1/models answered 200 with no key or a wrong one.
The instances behind the proxy are stand-ins written here (no model), which record what reaches
them."""
import json
import os
import re
import signal
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from conftest import httpx

KEY = "sekrit-proxy-key"
ORIGIN = "http://localhost:3000"
GUARDED = [("POST", "/v1/chat/completions"), ("POST", "/v1/completions"), ("GET", "/v1/models"),
           ("GET", "/metrics")]
BODY = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}


class StandIn:
    """A prefill or decode instance's HTTP side: a completion for every generation request, a
    model list, a healthy /health; each request's path and Authorization recorded."""

    def __init__(self):
        self.received = []
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def answer(self, body: dict):
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                if self.path == "/v1/models":
                    stand_in.received.append((self.path, self.headers.get("Authorization")))
                    return self.answer({"object": "list", "data": [{"id": "stand-in", "object": "model"}]})
                self.answer({"status": "ok"})

            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                stand_in.received.append((self.path, self.headers.get("Authorization")))
                self.answer({"id": "x", "object": "chat.completion",
                             "choices": [{"index": 0, "message": {"role": "assistant", "content": "hello"},
                                          "finish_reason": "stop"}]})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self):
        self.server.shutdown()


class Proxy:
    def __init__(self, prefill, decode, *flags, env=None):
        args = [os.environ["LUMEN_BIN"], "serve", "--role", "proxy", "--port", "0", "--prefill", prefill.url,
                "--decode", decode.url, *flags]
        self.proc = subprocess.Popen(args, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
                                     env=env or os.environ)
        log = []
        for line in self.proc.stderr:
            log.append(line)
            if m := re.search(r"on http://[^:]+:(\d+)", line):
                self.base_url = f"http://127.0.0.1:{m.group(1)}"
                break
        else:
            raise AssertionError("".join(log))
        threading.Thread(target=lambda: self.proc.stderr.read(), daemon=True).start()

    def call(self, method, path, headers=None):
        return httpx.request(method, self.base_url + path, json=BODY if method == "POST" else None,
                             headers=headers or {}, timeout=30)

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=60)


@pytest.fixture
def instances():
    prefill, decode = StandIn(), StandIn()
    yield prefill, decode
    prefill.stop()
    decode.stop()


def test_a_keyed_proxy_refuses_a_missing_or_wrong_key_on_every_route(instances):
    prefill, decode = instances
    proxy = Proxy(prefill, decode, "--api-key", KEY, "--api-key", "second-tenant")
    try:
        for method, path in GUARDED:
            for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": f"Basic {KEY}"},
                            {"Authorization": f"Bearer {KEY}x"}):
                r = proxy.call(method, path, headers)
                assert r.status_code == 401, (method, path, headers, r.text)
                assert r.json()["error"]["code"] == "invalid_api_key"
        assert prefill.received == [] and decode.received == []  # nothing reached an instance

        for method, path in GUARDED:
            for key in (KEY, "second-tenant"):
                r = proxy.call(method, path, {"Authorization": f"Bearer {key}"})
                assert r.status_code == 200, (method, path, r.text)
        # The client's own key travels on: instances may require the same keys.
        assert decode.received[-1] == ("/v1/models", "Bearer second-tenant")
        assert proxy.call("GET", "/health").status_code == 200  # for load balancers, no key
    finally:
        assert proxy.stop() == 0


def test_metrics_public_opens_only_the_metrics(instances):
    proxy = Proxy(*instances, "--api-key", KEY, "--metrics-public")
    try:
        r = proxy.call("GET", "/metrics")
        assert r.status_code == 200 and "lumen_proxy_unauthorized_total" in r.text
        assert proxy.call("GET", "/v1/models").status_code == 401
        assert proxy.call("POST", "/v1/chat/completions").status_code == 401
        assert re.search(r"^lumen_proxy_unauthorized_total 2$", proxy.call("GET", "/metrics").text, re.MULTILINE)
    finally:
        assert proxy.stop() == 0


def test_the_key_may_come_from_the_environment(instances):
    proxy = Proxy(*instances, env={**os.environ, "LUMEN_API_KEY": KEY})
    try:
        assert proxy.call("POST", "/v1/completions").status_code == 401
        assert proxy.call("POST", "/v1/completions", {"Authorization": f"Bearer {KEY}"}).status_code == 200
    finally:
        assert proxy.stop() == 0


def test_cors_answers_only_the_listed_origins(instances):
    proxy = Proxy(*instances, "--api-key", KEY, "--cors-origins", ORIGIN)
    try:
        pre = httpx.options(proxy.base_url + "/v1/chat/completions", timeout=30,
                            headers={"Origin": ORIGIN, "Access-Control-Request-Method": "POST",
                                     "Access-Control-Request-Headers": "authorization,content-type"})
        assert pre.status_code == 204
        assert pre.headers["Access-Control-Allow-Origin"] == ORIGIN
        assert pre.headers["Access-Control-Allow-Methods"] == "POST, OPTIONS"
        ok = proxy.call("POST", "/v1/chat/completions", {"Origin": ORIGIN, "Authorization": f"Bearer {KEY}"})
        assert ok.status_code == 200 and ok.headers["Access-Control-Allow-Origin"] == ORIGIN
        other = proxy.call("GET", "/v1/models", {"Origin": "http://evil.example", "Authorization": f"Bearer {KEY}"})
        assert "Access-Control-Allow-Origin" not in other.headers
    finally:
        assert proxy.stop() == 0


@pytest.mark.parametrize("flags, name", [
    (["-m", "model.gguf"], "--model"),
    (["--log-level", "quiet"], "--log-level"),
    (["--no-web-ui"], "--no-web-ui"),
    (["--max-pending-requests", "8"], "--max-pending-requests"),
    (["--max-queued-requests-per-client", "2"], "--max-queued-requests-per-client"),
    (["--kv-cache-memory", "1G"], "--kv-cache-memory"),
    (["-t", "2"], "--threads"),
    (["--kv-source", "tcp://127.0.0.1:1"], "--kv-source"),
])
def test_a_flag_the_proxy_does_not_act_on_is_refused(flags, name):
    r = subprocess.run([os.environ["LUMEN_BIN"], "serve", "--role", "proxy", "--port", "0", "--prefill",
                        "http://127.0.0.1:1", "--decode", "http://127.0.0.1:2", *flags],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1, r.stderr
    assert f"{name} does nothing with --role proxy" in r.stderr, r.stderr
