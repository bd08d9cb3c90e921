"""The measuring commands on a state-space model (Mamba 2, `lumen synth mamba2-mini` cut to 2
blocks): `lumen perplexity` gives the same result whether a window's tokens come in one piece or
in four (its recurrent state carried between pieces) and whether windows run side by side (each
its own state slot) or one at a time; `lumen bench latency` and `lumen bench profile` run it
and report the state-space ops."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

import conftest
from conftest import lumen_bin

TEXT = Path(__file__).resolve().parent.parent / "golden" / "perplexity" / "gpl-3.0.txt"
sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent / "bench"))
from context_bytes import context_bytes_per_token  # noqa: E402


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    out = tmp_path_factory.mktemp("state_model") / "mamba2-mini.gguf"
    subprocess.run([lumen_bin(), "synth", "mamba2-mini", "-o", str(out), "--vocab",
                    str(conftest.testdata_dir() / "tokenizer" / "ggml-vocab-llama-spm.gguf"), "--type", "Q8_0",
                    "--layers", "2", "--seed", "3"], check=True, stdout=subprocess.DEVNULL)
    return out


def run_json(*args):
    r = subprocess.run([lumen_bin(), *map(str, args), "--json"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_perplexity_is_the_same_in_pieces_and_side_by_side(model):
    base = ["perplexity", "-m", model, "-f", TEXT, "-c", "128", "--chunks", "4", "-t", "2"]
    side_by_side = run_json(*base, "-b", "512")  # four windows in one batch, four state slots
    pieces = run_json(*base, "-b", "32")         # one window at a time, in four pieces each
    assert side_by_side["n_windows"] == pieces["n_windows"] == 4
    assert side_by_side["tokens_scored"] == pieces["tokens_scored"] == 4 * 63
    # Random weights: a perplexity far above 1 and finite, equal up to f32 rounding of the two
    # batch shapes.
    assert 1.5 < side_by_side["ppl"] < 1e7
    assert pieces["ppl"] == pytest.approx(side_by_side["ppl"], rel=1e-3)
    for a, b in zip(pieces["running_ppl"], side_by_side["running_ppl"]):
        assert a == pytest.approx(b, rel=1e-3)


def test_bench_latency_and_profile_run_a_state_model(model):
    rows = run_json("bench", "latency", "-m", model, "-p", "64", "-n", "4", "-r", "1", "-t", "2")
    assert [(r["n_prompt"], r["n_gen"]) for r in rows] == [(64, 0), (0, 4)]
    assert all(r["avg_ts"] > 0 for r in rows)
    doc = run_json("bench", "profile", "-m", model, "-t", "2", "--prefill", "64", "--decode-batch", "2",
                   "--context", "16", "-r", "1")
    prefill, decode = doc["runs"][0]["steps"]
    for step in (prefill, decode):
        ops = {op["name"]: op for op in step["ops"]}
        assert ops["ssm_scan"]["calls"] == 2 and ops["ssm_conv"]["calls"] == 2, sorted(ops)
        assert step["tokens_per_second"] > 0
        # The state ops report what they move: each sequence's state and window, read and
        # written back, on top of their inputs and outputs.
        assert ops["ssm_scan"]["bytes"] > 0 and ops["ssm_scan"]["gbps"] > 0
        assert ops["ssm_conv"]["bytes"] > 0 and ops["ssm_conv"]["gbps"] > 0
    # The profile's context bytes (from the ops) and the benches' (from the file's metadata) are
    # the same state traffic: two sequences' worth in the decode step, one's in the prefill.
    per_sequence = context_bytes_per_token(str(model), 1)
    assert decode["context_bytes"] == 2 * per_sequence
    assert prefill["context_bytes"] == per_sequence
    assert decode["bandwidth_bound_share_with_context"] > decode["bandwidth_bound_share"] > 0
