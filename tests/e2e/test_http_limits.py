"""The HTTP layer's bounds, tried as an attacker would, on raw sockets: bodies however they are
framed (length, none, chunked, compressed), header floods, slow clients, more connections than
threads, and a client that pipelines bytes and then hangs up."""
import gzip
import json
import socket
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from conftest import httpx, LumenServer, MODEL_NAME

READ_TIMEOUT_S = 2.0


@pytest.fixture(scope="module")
def strict_server():
    s = LumenServer("--request-read-timeout", READ_TIMEOUT_S)
    yield s
    assert s.stop() == 0, "".join(s.log)


def rss_kib(server) -> int:
    with open(f"/proc/{server.proc.pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


def connect(server) -> socket.socket:
    return socket.create_connection(("127.0.0.1", server.port), timeout=30)


def read_response(sock) -> tuple[int, dict, bytes]:
    """Reads one HTTP response with a Content-Length (all of Lumen's error answers have one)."""
    data = b""
    while b"\r\n\r\n" not in data:
        got = sock.recv(65536)
        if not got:
            raise AssertionError(f"connection closed before a whole head: {data!r}")
        data += got
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    status = int(lines[0].split()[1])
    headers = {k.strip().lower(): v.strip() for k, v in (line.split(":", 1) for line in lines[1:])}
    length = int(headers.get("content-length", "0"))
    while len(body) < length:
        got = sock.recv(65536)
        if not got:
            break
        body += got
    return status, headers, body[:length]


def post_head(path="/v1/completions", extra=""):
    return (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n{extra}\r\n").encode()


def timed_status(server, payload: bytes, keep_sending: bytes = b"") -> tuple[int, float, dict]:
    start = time.monotonic()
    with connect(server) as sock:
        sock.sendall(payload)
        if keep_sending:
            try:
                sock.sendall(keep_sending)
            except OSError:
                pass  # the server answered and closed while we were still sending: that is the point
        status, headers, body = read_response(sock)
    error = json.loads(body)["error"] if body else {}
    return status, time.monotonic() - start, error


def test_compressed_body_is_415_before_it_is_inflated(strict_server):
    before = rss_kib(strict_server)
    bomb = gzip.compress(b" " * (200 << 20))  # 200 MB of JSON whitespace in about 200 KB
    status, seconds, error = timed_status(
        strict_server, post_head(extra=f"Content-Encoding: gzip\r\nContent-Length: {len(bomb)}\r\n") + bomb)
    assert status == 415 and error["code"] == "unsupported_media_type" and seconds < 2
    assert rss_kib(strict_server) - before < 20_000


def test_post_without_a_length_is_411_at_once(strict_server):
    status, seconds, error = timed_status(strict_server, post_head() + b'{"prompt": "Hi", "max_tokens": 1}')
    assert status == 411 and error["code"] == "length_required" and seconds < 1


def test_chunked_body_is_411_whatever_its_size(strict_server):
    chunk = b"x" * 65536
    body = b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk) for _ in range(800))  # 50 MB
    status, seconds, _ = timed_status(strict_server, post_head(extra="Transfer-Encoding: chunked\r\n"), body)
    assert status == 411 and seconds < 2


def test_huge_content_length_is_413_without_reading_the_body(strict_server):
    status, seconds, error = timed_status(strict_server, post_head(extra="Content-Length: 10000000000\r\n"))
    assert status == 413 and error["code"] == "payload_too_large" and seconds < 1


def test_header_flood_is_431_and_memory_stays_flat(strict_server):
    before = rss_kib(strict_server)
    flood = b"".join(b"X-Flood-%d: %s\r\n" % (i, b"v" * 80) for i in range(100_000))  # 10 MB of headers
    status, seconds, error = timed_status(strict_server, b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n", flood)
    assert status == 431 and error["code"] == "request_header_fields_too_large" and seconds < 2
    assert rss_kib(strict_server) - before < 5_000
    assert httpx.get(strict_server.base_url + "/health").status_code == 200


def test_a_long_header_line_is_431(strict_server):
    line = b"X-Long: " + b"a" * 10_000 + b"\r\n\r\n"
    status, _, _ = timed_status(strict_server, b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n" + line)
    assert status == 431
    status, _, _ = timed_status(strict_server, b"GET /" + b"a" * 20_000 + b" HTTP/1.1\r\n\r\n")
    assert status == 431


def test_the_next_request_on_a_kept_alive_connection_is_bounded_too(strict_server):
    with connect(strict_server) as sock:
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        status, headers, _ = read_response(sock)
        assert status == 200 and headers.get("connection", "").lower() != "close"
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        try:
            sock.sendall(b"".join(b"X-Flood-%d: v\r\n" % i for i in range(50_000)))
        except OSError:
            pass
        status, _, _ = read_response(sock)
        assert status == 431


def test_a_slow_head_gets_408_at_the_deadline(strict_server):
    start = time.monotonic()
    with connect(strict_server) as sock:
        sock.sendall(b"GET /health HTTP/1.1\r\n")
        status = None
        for _ in range(20):  # a header line every 0.4 s: each recv would be in time on its own
            time.sleep(0.4)
            try:
                sock.sendall(b"X-Slow: 1\r\n")
            except OSError:
                break
        status, _, _ = read_response(sock)
    assert status == 408
    assert READ_TIMEOUT_S <= time.monotonic() - start < READ_TIMEOUT_S + 6


def test_a_slow_body_gets_408_at_the_deadline(strict_server):
    start = time.monotonic()
    body = json.dumps({"model": MODEL_NAME, "prompt": "Hi", "max_tokens": 1}).encode()
    with connect(strict_server) as sock:
        sock.sendall(post_head(extra=f"Content-Length: {len(body)}\r\n"))
        for byte in body[:10]:
            time.sleep(0.4)
            try:
                sock.sendall(bytes([byte]))
            except OSError:
                break
        status, _, body = read_response(sock)
    assert status == 408 and json.loads(body)["error"]["code"] == "request_timeout"
    assert time.monotonic() - start < READ_TIMEOUT_S + 6


def test_health_answers_while_300_slow_clients_are_connected(strict_server):
    slow = []
    try:
        for _ in range(300):
            sock = connect(strict_server)
            sock.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # and nothing more
            slow.append(sock)
        start = time.monotonic()
        r = httpx.get(strict_server.base_url + "/health", timeout=10)
        assert r.status_code == 200 and time.monotonic() - start < 1.0
        r = httpx.post(strict_server.base_url + "/v1/completions", timeout=60,
                       json={"model": MODEL_NAME, "prompt": "Hi", "max_tokens": 2})
        assert r.status_code == 200
        # The deadline ends every one of them with a 408.
        statuses = [read_response(sock)[0] for sock in slow]
        assert statuses == [408] * 300
    finally:
        for sock in slow:
            sock.close()


def test_past_threads_and_queue_new_connections_get_503():
    small = LumenServer("--http-threads", 4, "--max-queued-connections", 2, "--request-read-timeout", 5)
    try:
        idle = [connect(small) for _ in range(6)]  # 4 hold a thread each, 2 wait for one
        time.sleep(0.3)
        refused = []
        for _ in range(3):
            status, headers, body = read_response_of_new_request(small)
            refused.append(status)
            assert status != 503 or headers.get("retry-after") == "1"
        assert refused == [503, 503, 503]
        for sock in idle:
            sock.close()
        # Threads free again: served.
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if read_response_of_new_request(small)[0] == 200:
                break
            time.sleep(0.2)
        else:
            raise AssertionError("the server did not recover after the idle connections left")
    finally:
        assert small.stop() == 0, "".join(small.log)


def read_response_of_new_request(server):
    with connect(server) as sock:
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        return read_response(sock)


def test_pipelined_bytes_do_not_hide_a_disconnect(strict_server):
    metrics = strict_server.metrics
    aborted_key = 'lumen_request_success_total{finished_reason="abort"}'
    aborted = metrics()[aborted_key]
    body = json.dumps({"model": MODEL_NAME, "prompt": "Count: 1, 2, 3,", "max_tokens": 1500,
                       "ignore_eos": True}).encode()
    sock = connect(strict_server)
    # Pipelined bytes, more than the server reads ahead (64 KiB): some stay unread in the socket.
    pipelined = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n" + b"X-Pad: a\r\n" * 10_000
    sock.sendall(post_head(extra=f"Content-Length: {len(body)}\r\n") + body + pipelined)
    deadline = time.monotonic() + 10
    while metrics()["lumen_num_requests_running"] == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    sock.close()
    start = time.monotonic()
    while metrics()[aborted_key] == aborted and time.monotonic() - start < 10:
        time.sleep(0.05)
    assert metrics()[aborted_key] == aborted + 1
    assert time.monotonic() - start < 2.0  # 1500 tokens would take far longer
