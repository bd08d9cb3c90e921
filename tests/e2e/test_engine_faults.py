"""An engine fault reaches the client as OpenAI's clients expect, and the server goes on: a copy
of the default model with an infinity in its final norm's weight makes every request's logits NaN,
which the engine ends with FinishReason::Error. A whole response is then a 500 carrying only the
request id; a stream ends its choice with finish_reason "error", an error event and [DONE]."""
import json
import shutil
import struct

import gguf
import pytest

from conftest import httpx, LumenServer, MODEL_NAME, model_path


@pytest.fixture(scope="module")
def nan_server(tmp_path_factory):
    path = tmp_path_factory.mktemp("nan") / "SmolLM2-135M-Instruct.Q4_1.gguf"  # same name: same model id
    shutil.copyfile(model_path(), path)
    reader = gguf.GGUFReader(str(path))
    norm = next(t for t in reader.tensors if t.name == "output_norm.weight")
    assert norm.tensor_type == gguf.GGMLQuantizationType.F32
    offset = int(norm.data_offset)
    del reader  # it maps the file
    with open(path, "r+b") as f:
        f.seek(offset)
        f.write(struct.pack("<f", float("inf")))
    s = LumenServer(model=path)
    yield s
    assert s.stop() == 0, "".join(s.log)


def test_a_whole_response_is_a_500_with_only_the_request_id(nan_server):
    r = httpx.post(nan_server.base_url + "/v1/completions", json={"model": MODEL_NAME, "prompt": "Hello", "max_tokens": 4},
                   timeout=60)
    assert r.status_code == 500
    error = r.json()["error"]
    request_id = r.headers["X-Request-Id"]
    assert error["code"] == "internal_error" and request_id in error["message"]
    assert "NaN" not in error["message"] and "logits" not in error["message"]  # the detail is for the log
    assert nan_server.wait_for_log(lambda line: request_id in line and "non-finite logits" in line), \
        "".join(nan_server.log)


def test_a_stream_ends_with_finish_reason_error_an_error_event_and_done(nan_server):
    body = {"model": MODEL_NAME, "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4, "stream": True}
    with httpx.stream("POST", nan_server.base_url + "/v1/chat/completions", json=body, timeout=60) as r:
        assert r.status_code == 200
        events = [line[len("data: "):] for line in r.iter_lines() if line.startswith("data: ")]
    assert events[-1] == "[DONE]"
    error = json.loads(events[-2])["error"]
    assert error["code"] == "internal_error"
    finishes = [c["finish_reason"] for e in events[:-2] for c in json.loads(e)["choices"] if c.get("finish_reason")]
    assert finishes == ["error"]


def test_the_server_goes_on_and_counts_the_errors(nan_server):
    for _ in range(3):
        httpx.post(nan_server.base_url + "/v1/completions", json={"prompt": "x", "max_tokens": 2}, timeout=60)
    assert httpx.get(nan_server.base_url + "/health").status_code == 200
    metrics = nan_server.metrics()
    assert metrics['lumen_request_success_total{finished_reason="error"}'] >= 3
    assert metrics["lumen_kv_cache_blocks_used"] == 0
