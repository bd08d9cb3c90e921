"""`lumen bench profile` on the real model: the JSON accounts for every layer and its ops, the
shares add up to the step, the trace opens as a Chrome trace with a track per worker, the roofline
is a PNG, and shapes that cannot run are refused with a message."""
import json
import struct
import subprocess

from conftest import lumen_bin, real_model

MODEL = "SmolLM2-135M-Instruct.Q4_1.gguf"


def lumen(*args):
    return subprocess.run([lumen_bin(), *map(str, args)], capture_output=True, text=True, timeout=300)


def test_profile_json_trace_and_plot(tmp_path):
    trace, plot = tmp_path / "trace.json", tmp_path / "roofline.png"
    r = lumen("bench", "profile", "-m", real_model(MODEL), "-t", "2", "--prefill", "64", "--decode-batch", "4",
              "--context", "32", "-r", "2", "--json", "--trace", trace, "--plot", plot)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    (run,) = doc["runs"]
    ceilings = run["ceilings"]
    assert ceilings["threads"] == 2 and ceilings["read_gbps"] > 0 and ceilings["int8_gops"] > 0
    prefill, decode = run["steps"]
    assert prefill["step"] == "prefill 64" and decode["step"] == "decode batch 4 at context 32"
    for step in (prefill, decode):
        # SmolLM2: 30 layers, each with its attention and four matmuls, between the embedding and the head.
        parts = [p["name"] for p in step["parts"]]
        assert parts == ["embedding"] + [f"layer {i}" for i in range(30)] + ["head"]
        ops = {op["name"]: op for op in step["ops"]}
        assert ops["attention"]["calls"] == 30
        assert ops["matmul attn_q+attn_k+attn_v"]["calls"] == 30
        assert ops["matmul_swiglu ffn_gate+ffn_up"]["int8"]
        # The ops' time is the step's, less the model code between them.
        shares = sum(op["share"] for op in step["ops"])
        assert 0.8 < shares <= 1.0 + 1e-9
        assert abs(step["ops_ms"] + step["between_ops_ms"] - step["step_ms"]) < 1e-6
        assert len(step["threads"]) == 2
        assert step["tokens_per_second"] > 0
    assert decode["new_tokens_per_sequence"] == 1 and decode["batch"] == 4
    # The weights stream once per decode step: the bytes of the step are at least the file's
    # weights less the embedding rows that are not looked up (the tied head reads them all).
    assert decode["bytes"] > 0.9 * decode["weight_bytes"]

    events = json.loads(trace.read_text())["traceEvents"]
    tracks = {(e["pid"], e["tid"]) for e in events if e["ph"] == "X"}
    assert tracks == {(1, 0), (1, 1), (1, 2), (2, 0), (2, 1), (2, 2)}  # two steps: ops, worker 0, worker 1
    assert all(e["dur"] >= 0 for e in events if e["ph"] == "X")

    png = plot.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", png[16:24]) == (1400, 900)


def test_text_report_names_the_machine_and_each_step():
    r = lumen("bench", "profile", "-m", real_model(MODEL), "-t", "1", "--prefill", "0", "--decode-batch", "1",
              "--context", "16", "-r", "1")
    assert r.returncode == 0, r.stderr
    assert "machine (1 threads" in r.stdout
    assert "## decode batch 1 at context 16" in r.stdout
    assert "matmul ffn_down" in r.stdout


def test_verification_step_scores_every_row():
    r = lumen("bench", "profile", "-m", real_model(MODEL), "-t", "2", "--prefill", "0", "--decode-batch", "1",
              "--verify-rows", "6", "--context", "40", "-r", "1", "--json")
    assert r.returncode == 0, r.stderr
    decode, verify = json.loads(r.stdout)["runs"][0]["steps"]
    assert verify["step"] == "verify 6 rows at context 40" and verify["kind"] == "verify"
    assert verify["batch"] == 1 and verify["new_tokens_per_sequence"] == 6

    def head(step):
        return next(op for op in step["ops"] if op["name"].startswith("matmul output"))

    # The head reads the same weights for both, and takes 5 more rows in (576 floats each) and
    # gives 5 more rows of logits out (49152 floats each) for the verification step.
    assert head(verify)["bytes"] - head(decode)["bytes"] == 5 * (576 + 49152) * 4


def test_shapes_that_cannot_run_are_refused():
    r = lumen("bench", "profile", "-m", real_model(MODEL), "--prefill", "0", "--decode-batch", "0")
    assert r.returncode != 0 and "nothing to profile" in r.stderr
    r = lumen("bench", "profile", "-m", real_model(MODEL), "--prefill", "0", "--context", "100000000")
    assert r.returncode != 0 and "do not fit" in r.stderr
    r = lumen("bench", "profile", "-m", real_model(MODEL), "--verify-rows", "100000")
    assert r.returncode != 0 and "not in range" in r.stderr
    r = lumen("bench", "profile", "-m", real_model(MODEL), "--kv-cache-dtype", "q9")
    assert r.returncode != 0 and "unknown KV cache dtype" in r.stderr
