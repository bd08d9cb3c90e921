"""`lumen bench profile` on an RWKV 7 model (`lumen synth rwkv7-mini` cut to 2 blocks): its state
update is a backend op (`rwkv_wkv7`), timed once per layer and step with the bytes it must move
(each sequence's wkv state read and written, six input rows and the output row per token), so
the report gives it a bandwidth like any other op."""
import json
import subprocess

import pytest

import conftest
from conftest import lumen_bin

LAYERS, WIDTH, HEAD = 2, 256, 64  # rwkv7-mini: 4 heads of 64


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    out = tmp_path_factory.mktemp("rwkv7_model") / "rwkv7-mini.gguf"
    subprocess.run([lumen_bin(), "synth", "rwkv7-mini", "-o", str(out), "--vocab",
                    str(conftest.testdata_dir() / "tokenizer" / "ggml-vocab-llama-spm.gguf"), "--type", "Q8_0",
                    "--layers", str(LAYERS), "--seed", "3"], check=True, stdout=subprocess.DEVNULL)
    return out


def wkv7_bytes(sequences, tokens_each):
    state = WIDTH * HEAD * 4  # heads x head_size^2 floats
    return sequences * 2 * state + 7 * sequences * tokens_each * WIDTH * 4


def test_profile_reports_the_state_updates_bytes(model):
    r = subprocess.run([lumen_bin(), "bench", "profile", "-m", str(model), "-t", "2", "--prefill", "64",
                        "--decode-batch", "2", "--context", "16", "-r", "1", "--json"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    prefill, decode = json.loads(r.stdout)["runs"][0]["steps"]
    for step, sequences, tokens in ((prefill, 1, 64), (decode, 2, 1)):
        ops = {op["name"]: op for op in step["ops"]}
        assert "rwkv_wkv7" in ops, sorted(ops)
        op = ops["rwkv_wkv7"]
        assert op["calls"] == LAYERS
        assert op["bytes"] == pytest.approx(LAYERS * wkv7_bytes(sequences, tokens))
        assert op["flops"] == pytest.approx(LAYERS * 9 * sequences * tokens * WIDTH * HEAD)
        assert op["gbps"] > 0
