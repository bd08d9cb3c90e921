"""Replicas behind HAProxy (deploy/haproxy): conversations keep their prefix-cache hits when
spread over two replicas, a replica killed while working on a request costs no request that
had not started streaming, and a replica drained with SIGTERM costs none at all."""
import os
import re
import shutil
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

import openai
import pytest

from conftest import httpx, MODEL_NAME, model_path

pytestmark = pytest.mark.skipif(shutil.which("haproxy") is None,
                                reason="haproxy is not installed (scripts/setup.sh installs it)")

SCRIPT = Path(__file__).resolve().parents[2] / "deploy" / "haproxy" / "run_replicas.sh"
SYSTEM = "You are a helpful assistant. Answer every question in one short sentence."
TOPICS = ["the tides", "volcanoes", "honey bees", "the moon landing", "rainbows", "glaciers", "owls", "tea"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Deployment:
    """run_replicas.sh: K replicas and HAProxy, each on a free loopback port."""

    def __init__(self, run_dir: Path, replicas: int):
        self.run_dir = run_dir
        self.lb_port = free_port()
        self.ports = [free_port() for _ in range(replicas)]
        self.proc = subprocess.Popen(
            [str(SCRIPT), "-n", str(replicas), "--port", str(self.lb_port),
             "--replica-ports", ",".join(map(str, self.ports)), "--run-dir", str(run_dir), "--",
             "-m", str(model_path()), "-t", "1", "--kv-cache-memory", "128M", "--max-model-len", "2048",
             "--metrics-public", "--shutdown-grace", "30"],
            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, start_new_session=True)
        self.log = []
        for line in self.proc.stderr:
            self.log.append(line)
            if "serving on" in line:
                break
        assert any("serving on" in line for line in self.log), "".join(self.log)
        threading.Thread(target=lambda: self.log.extend(self.proc.stderr), daemon=True).start()
        self.base_url = f"http://127.0.0.1:{self.lb_port}"

    def pid(self, replica: int) -> int:
        return int((self.run_dir / f"replica-{replica + 1}.pid").read_text())

    def client(self) -> openai.OpenAI:
        return openai.OpenAI(base_url=self.base_url + "/v1", api_key="unused", max_retries=0, timeout=120)

    def metrics(self, replica: int) -> dict:
        text = httpx.get(f"http://127.0.0.1:{self.ports[replica]}/metrics", timeout=10).text
        return {m.group(1): float(m.group(2))
                for m in re.finditer(r"^(lumen_\w+) ([0-9.e+-]+)$", text, re.MULTILINE)}

    def prompt_tokens(self) -> list:
        """Prompt tokens each replica has taken: which one served a request."""
        return [self.metrics(i)["lumen_prompt_tokens_total"] for i in range(len(self.ports))]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(60)
        finally:
            if self.proc.poll() is None:
                os.killpg(self.proc.pid, signal.SIGKILL)


def chat(client, messages, session=None, max_tokens=8, **kw):
    headers = {"X-Session-Id": session} if session else {}
    return client.chat.completions.create(model=MODEL_NAME, messages=messages, max_tokens=max_tokens,
                                          temperature=0, extra_headers=headers, **kw)


def run_conversations(dep: Deployment, turns=3):
    """Each topic's conversation, turn by turn; half carry X-Session-Id, half rely on the body
    hash. Returns the prefix-cache hits and queries summed over the replicas, and per replica."""
    client = dep.client()
    for i, topic in enumerate(TOPICS):
        messages = [{"role": "system", "content": SYSTEM},
                    {"role": "user", "content": f"Conversation {i}. Tell me one fact about {topic}, please, "
                                                f"the kind a curious ten year old would remember for years."}]
        for turn in range(turns):
            reply = chat(client, messages, session=f"conversation-{i}" if i % 2 else None)
            messages += [{"role": "assistant", "content": reply.choices[0].message.content},
                         {"role": "user", "content": f"Interesting. Tell me another fact about {topic} (#{turn})."}]
    per_replica = [(m["lumen_prefix_cache_hits_total"], m["lumen_prefix_cache_queries_total"])
                   for m in map(dep.metrics, range(len(dep.ports)))]
    return sum(h for h, _ in per_replica), sum(q for _, q in per_replica), per_replica


def test_conversations_keep_their_prefix_hits_and_a_killed_replica_loses_no_unstarted_request(tmp_path):
    one = Deployment(tmp_path / "one", 1)
    try:
        hits1, queries1, _ = run_conversations(one)
    finally:
        assert one.stop() == 0, "".join(one.log)
    two = Deployment(tmp_path / "two", 2)
    try:
        hits2, queries2, per_replica = run_conversations(two)
        rate1, rate2 = hits1 / queries1, hits2 / queries2
        print(f"prefix-cache hit rate: one replica {rate1:.3f} ({hits1:.0f}/{queries1:.0f}), "
              f"two replicas {rate2:.3f} ({hits2:.0f}/{queries2:.0f}), per replica {per_replica}")
        assert all(q > 0 for _, q in per_replica), f"one replica got every conversation: {per_replica}"
        # The second replica misses the shared system prompt once more; nothing else may differ.
        assert rate2 >= rate1 - 0.03, (rate1, rate2)
        # The rate counts lookups up to the first miss, so it flatters a balancer that scatters
        # conversations (round robin: 0.62 here); the cached blocks do not (round robin: 39 of 73).
        assert hits2 >= 0.95 * hits1, (hits1, hits2)

        # Find a session the first replica serves, start a long non-streaming request on it, and
        # kill that replica while it generates: HAProxy gets an empty response and replays the
        # request on the other replica. A stream that had begun on it is lost (nothing to replay).
        client = two.client()
        sessions = sessions_of_each_replica(two, client, "probe")
        session = sessions[0][0]
        long_request = {"messages": [{"role": "user", "content": "Write a long story about a lighthouse."}],
                        "session": session, "max_tokens": 200, "extra_body": {"ignore_eos": True}}
        results = {}

        def unstarted():
            start = time.monotonic()
            try:
                results["unstarted"] = (chat(client, **long_request), time.monotonic() - start)
            except openai.APIError as e:
                results["unstarted"] = (e, time.monotonic() - start)

        def started(stream_started):
            text, finish = "", None
            try:
                for chunk in chat(client, stream=True, **long_request):
                    text += chunk.choices[0].delta.content or ""
                    finish = chunk.choices[0].finish_reason or finish
                    stream_started.set()
                results["started"] = (text, finish)
            except (openai.APIError, httpx.HTTPError) as e:
                results["started"] = e

        stream_started = threading.Event()
        threads = [threading.Thread(target=started, args=(stream_started,)), threading.Thread(target=unstarted)]
        threads[0].start()
        assert stream_started.wait(30)
        threads[1].start()
        deadline = time.monotonic() + 30
        while two.metrics(0)["lumen_num_requests_running"] < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert two.metrics(0)["lumen_num_requests_running"] == 2
        time.sleep(0.3)  # both are generating
        os.kill(two.pid(0), signal.SIGKILL)
        # New requests right after the kill, before the health checks notice: the ones hashed to
        # the dead replica fail to connect and are sent to the other.
        after_kill = [chat(client, [{"role": "user", "content": f"Name a colour ({s})."}], session=s, max_tokens=2)
                      for s in sessions[0] + sessions[1]]
        for t in threads:
            t.join(120)
        reply, seconds = results["unstarted"]
        assert not isinstance(reply, Exception), reply
        assert reply.choices[0].finish_reason == "length" and reply.usage.completion_tokens == 200
        assert all(r.choices[0].message.content for r in after_kill)
        # The stream that had begun is cut, and the client can tell: either the connection ends
        # with an error, or (when HAProxy happens to close the chunked body cleanly, seen under
        # load) the stream ends without a finish_reason and without [DONE].
        lost = results["started"]
        print(f"killed replica: the in-flight unstarted request took {seconds:.2f} s (replayed), "
              f"the started stream ended with {type(lost).__name__}")
        assert isinstance(lost, Exception) or lost[1] is None, lost
        assert two.proc.poll() is None  # HAProxy and the other replica go on
    finally:
        two.stop()


def test_a_replica_drained_with_sigterm_loses_no_request(tmp_path):
    dep = Deployment(tmp_path, 2)
    try:
        client = dep.client()
        # A stream on the first replica, in flight when it is told to stop.
        sessions = sessions_of_each_replica(dep, client, "s")
        session = sessions[0][0]
        outcome = {}

        def stream():
            text, finish = "", None
            for chunk in chat(client, [{"role": "user", "content": "Tell me a story."}], session=session,
                              max_tokens=120, stream=True, extra_body={"ignore_eos": True}):
                text += chunk.choices[0].delta.content or ""
                finish = chunk.choices[0].finish_reason or finish
            outcome["stream"] = (text, finish)

        t = threading.Thread(target=stream)
        t.start()
        deadline = time.monotonic() + 30
        while dep.metrics(0)["lumen_num_requests_running"] < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        os.kill(dep.pid(0), signal.SIGTERM)
        # Requests keep coming during the drain, some of them hashed to the draining replica.
        replies = [chat(client, [{"role": "user", "content": f"Name a fruit ({s})."}], session=s, max_tokens=2)
                   for s in sessions[0] + sessions[1]]
        t.join(120)
        assert all(r.choices[0].message.content for r in replies)
        assert outcome["stream"][1] == "length" and outcome["stream"][0], outcome
        # The drained replica exited cleanly once its stream was done.
        deadline = time.monotonic() + 30
        while _alive(dep.pid(0)) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _alive(dep.pid(0))
        assert "stopped" in (dep.run_dir / "replica-1.log").read_text()
    finally:
        assert dep.stop() == 0, "".join(dep.log)


def _serves(dep: Deployment, client, session) -> int:
    """Which replica a session goes to (the one whose prompt-token counter moves)."""
    before = dep.prompt_tokens()
    chat(client, [{"role": "user", "content": "Hi."}], session=session, max_tokens=1)
    after = dep.prompt_tokens()
    return next(i for i in range(len(before)) if after[i] > before[i])


def sessions_of_each_replica(dep: Deployment, client, prefix, n=4) -> list:
    """n session ids that go to each replica, found by trying them."""
    found = [[] for _ in dep.ports]
    for k in range(200):
        if all(len(f) >= n for f in found):
            return found
        replica = _serves(dep, client, f"{prefix}-{k}")
        if len(found[replica]) < n:
            found[replica].append(f"{prefix}-{k}")
    raise AssertionError(f"sessions did not spread over the replicas: {found}")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (the script has not reaped it yet) counts as gone.
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except FileNotFoundError:
        return False
