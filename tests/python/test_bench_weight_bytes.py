"""The decode bound's weight bytes, counted alike by `lumen bench profile` (from the model it
runs: profile_run.h, WeightStream) and by the bench scripts (bench/context_bytes.py, from the
file's metadata): a MoE model's expert tensors count for the share of experts a step's tokens
choose, an untied token embedding not at all, everything else once a step."""
import json
import subprocess
import sys
from pathlib import Path

import pytest
from gguf import GGUFReader

import conftest
from conftest import lumen_bin

sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent / "bench"))
from context_bytes import weight_bytes_per_token  # noqa: E402


@pytest.fixture(scope="module")
def moe_model(tmp_path_factory):
    out = tmp_path_factory.mktemp("moe_model") / "qwen3moe-mini.gguf"
    subprocess.run([lumen_bin(), "synth", "qwen3moe-mini", "-o", str(out), "--vocab",
                    str(conftest.testdata_dir() / "tokenizer" / "ggml-vocab-llama-spm.gguf"), "--type", "Q8_0",
                    "--layers", "2", "--seed", "3"], check=True, stdout=subprocess.DEVNULL)
    return out


def test_profile_and_bench_scripts_count_the_chosen_experts_only(moe_model):
    r = subprocess.run([lumen_bin(), "bench", "profile", "-m", str(moe_model), "-t", "2", "--prefill", "0",
                        "--decode-batch", "1", "-r", "1", "--json"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    decode = json.loads(r.stdout)["runs"][0]["steps"][0]
    reader = GGUFReader(str(moe_model))
    field = lambda key: int(reader.fields[key].parts[reader.fields[key].data[0]][0])  # noqa: E731
    used, count = field("qwen3moe.expert_used_count"), field("qwen3moe.expert_count")
    assert 0 < used < count
    names = {t.name for t in reader.tensors}
    assert "output.weight" in names  # untied: the token embedding is only looked up
    experts = sum(int(t.n_bytes) for t in reader.tensors if "_exps." in t.name)
    dense = sum(int(t.n_bytes) for t in reader.tensors if "_exps." not in t.name and t.name != "token_embd.weight")
    assert experts > 0 and dense > 0
    per_token = weight_bytes_per_token(str(moe_model))
    assert per_token == pytest.approx(dense + experts * used / count, abs=1)
    assert decode["weight_bytes"] == pytest.approx(per_token, abs=1)
