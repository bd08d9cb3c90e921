"""SIGTERM under load: the server stops accepting, in-flight requests end with a final event
(their output, or an error event when the grace period runs out), and the exit status is 0."""
import signal
import threading
import time

import openai

from conftest import httpx, MODEL_NAME, LumenServer


def stream_all(server, max_tokens, results, i, started):
    text, finish, error = "", None, None
    try:
        for chunk in server.client().completions.create(model=MODEL_NAME, prompt=f"Story {i}:", max_tokens=max_tokens,
                                                        temperature=0, stream=True, extra_body={"ignore_eos": True}):
            started.set()
            text += chunk.choices[0].text
            finish = chunk.choices[0].finish_reason or finish
    except openai.APIError as e:
        error = e
    results[i] = (text, finish, error)


def run_load(server, n, max_tokens):
    results, started = [None] * n, threading.Event()
    threads = [threading.Thread(target=stream_all, args=(server, max_tokens, results, i, started)) for i in range(n)]
    for t in threads:
        t.start()
    assert started.wait(60)
    return threads, results


def test_sigterm_lets_in_flight_requests_finish_within_the_grace_period():
    s = LumenServer("--shutdown-grace", 60)
    threads, results = run_load(s, 8, 40)
    s.proc.send_signal(signal.SIGTERM)
    for t in threads:
        t.join(120)
    assert s.proc.wait(60) == 0, "".join(s.log)
    for text, finish, error in results:
        assert error is None and finish == "length" and text


def test_sigterm_past_the_grace_period_aborts_with_a_final_error_event():
    s = LumenServer("--shutdown-grace", 1)
    threads, results = run_load(s, 8, 1500)
    time.sleep(0.5)
    s.proc.send_signal(signal.SIGTERM)
    time.sleep(0.2)
    # No longer accepting: a new connection is refused.
    try:
        r = httpx.get(s.base_url + "/health", timeout=5)
        assert r.status_code == 503
    except httpx.TransportError:
        pass
    for t in threads:
        t.join(120)
    assert s.proc.wait(60) == 0, "".join(s.log)
    for text, finish, error in results:
        # Every stream ended with an event the SDK saw: the error event sent before [DONE].
        assert isinstance(error, openai.APIError) and "shutting down" in str(error), (text[:50], finish, error)


def test_a_second_signal_during_the_drain_exits_at_once():
    s = LumenServer("--shutdown-grace", 300)
    threads, results = run_load(s, 4, 1500)
    s.proc.send_signal(signal.SIGINT)
    time.sleep(0.5)
    assert s.proc.poll() is None  # draining: the long requests hold it for up to 300 s
    start = time.monotonic()
    s.proc.send_signal(signal.SIGINT)
    assert s.proc.wait(10) == 128 + signal.SIGINT
    assert time.monotonic() - start < 5
    assert any("second SIGINT" in line for line in s.log), "".join(s.log)
    for t in threads:
        t.join(60)


def test_a_drain_does_not_wait_for_slow_or_idle_connections():
    import socket
    s = LumenServer("--shutdown-grace", 30, "--request-read-timeout", 60)
    slow = socket.create_connection(("127.0.0.1", s.port))
    slow.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # a head never finished
    idle = socket.create_connection(("127.0.0.1", s.port))
    idle.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")  # kept alive after its answer
    assert idle.recv(4096).startswith(b"HTTP/1.1 200")
    time.sleep(0.2)
    start = time.monotonic()
    s.proc.send_signal(signal.SIGTERM)
    assert s.proc.wait(30) == 0, "".join(s.log)
    assert time.monotonic() - start < 5  # not the 60 s read deadline, nor the grace period
    slow.close()
    idle.close()
