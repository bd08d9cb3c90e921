"""Starts real `lumen serve` processes on free ports for the end-to-end tests."""
import os
import re
import signal
import subprocess
import threading
import time
from pathlib import Path

# The HTTP client the openai SDK is built on (httpx, renamed httpx2 in its newer releases), for
# requests the SDK cannot make (malformed bodies, raw streams, /metrics).
try:
    import httpx2 as httpx
except ImportError:
    import httpx
import openai
import pytest

MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_NAME = "SmolLM2-135M-Instruct.Q4_1"


def model_path() -> Path:
    cache = os.environ.get("LUMEN_CACHE") or str(Path.home() / ".cache" / "lumen" / "models")
    path = Path(cache) / MODEL_FILE
    assert path.exists(), f"{path} is missing: run scripts/fetch_models.py"
    return path


class LumenServer:
    """One `lumen serve` process. Its stderr is drained by a thread (and kept for messages)."""

    def __init__(self, *extra_args, api_key=None, model=None, kv_cache_memory="256M", max_model_len=2048,
                 launcher=()):
        # launcher: a command the server runs under (mpirun for tensor parallelism).
        args = [*launcher, os.environ["LUMEN_BIN"], "serve", "-m", str(model or model_path()), "--port", "0",
                "--kv-cache-memory", kv_cache_memory, "--max-model-len", str(max_model_len),
                *map(str, extra_args)]
        if api_key:
            args += ["--api-key", api_key]
        self.api_key = api_key
        self.proc = subprocess.Popen(args, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
        self.log = []
        self.port = None
        deadline = time.time() + 60
        for line in self.proc.stderr:
            self.log.append(line)
            m = re.search(r"on http://[^:]+:(\d+)", line)
            if m:
                self.port = int(m.group(1))
                break
            if time.time() > deadline:
                break
        assert self.port, f"lumen serve did not start: {''.join(self.log)}"
        threading.Thread(target=self._drain, daemon=True).start()
        self.base_url = f"http://127.0.0.1:{self.port}"

    def _drain(self):
        for line in self.proc.stderr:
            self.log.append(line)

    def wait_for_log(self, predicate, timeout=10):
        """The first log line that satisfies predicate, waiting for the drain thread (the server
        may write it just after the response it concerns has gone out); None after timeout."""
        deadline = time.time() + timeout
        while True:
            line = next((line for line in list(self.log) if predicate(line)), None)
            if line is not None or time.time() >= deadline:
                return line
            time.sleep(0.05)

    def client(self, **kwargs) -> openai.OpenAI:
        kwargs.setdefault("api_key", self.api_key or "unused")
        kwargs.setdefault("max_retries", 0)
        kwargs.setdefault("timeout", 120)
        return openai.OpenAI(base_url=self.base_url + "/v1", **kwargs)

    def post(self, path, body, **kw):
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        return httpx.post(self.base_url + path, json=body, headers=headers, timeout=60, **kw)

    def tokenize(self, **body) -> list:
        r = self.post("/tokenize", body)
        assert r.status_code == 200, r.text
        return r.json()["tokens"]

    def metrics(self) -> dict:
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        text = httpx.get(self.base_url + "/metrics", headers=headers, timeout=10).text
        values = {}
        for line in text.splitlines():
            if line.startswith("#") or not line.strip():
                continue
            name, value = line.rsplit(" ", 1)
            values[name] = float(value)
        return values

    def stop(self, sig=signal.SIGTERM, timeout=60) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        return self.proc.wait(timeout=timeout)


@pytest.fixture(scope="session")
def server():
    s = LumenServer()
    yield s
    assert s.stop() == 0, "".join(s.log)


@pytest.fixture(scope="session")
def client(server):
    return server.client()
