"""`lumen imatrix` and `lumen quantize --imatrix` against llama.cpp (goldens made by
scripts/make_imatrix_golden.py; llama.cpp is not needed here):
  - the importance matrix of the default model over tests/golden/imatrix/gfdl-1.3.txt equals
    llama-imatrix's, entry for entry: the same weights, token counts and chunk keys, and each
    weight's total and largest squared activation within a small tolerance (the forward passes'
    float arithmetic differs from ggml's, so sums agree to ~1e-4, single columns to ~1e-2);
  - on a synthetic mixture-of-experts model, the per-expert entries agree the same way;
  - quantizing with an importance matrix writes every tensor exactly as llama-quantize --imatrix
    does (per-tensor sha256), on the synthetic and the real model's F16 inputs;
  - an importance matrix that is not one, or was made for another model, is a one-line error
    that writes nothing.
"""
import json
from pathlib import Path

import gguf
import numpy as np
import pytest

from conftest import lumen_bin, real_model, run_lumen
from synthetic_imatrix import layer_weights, write_synthetic_imatrix
from test_cli_quantize import DEFAULT_MODEL, GgufTensors, differences, expect_error

GOLDEN_DIR = Path(__file__).resolve().parent.parent / "golden"
TEXT = GOLDEN_DIR / "imatrix" / "gfdl-1.3.txt"
IMATRIX_GOLDEN = json.loads((GOLDEN_DIR / "imatrix" / "smollm2-gfdl.json").read_text())
MOE_GOLDEN = json.loads((GOLDEN_DIR / "imatrix" / "moe-gfdl.json").read_text())
QUANTIZE_GOLDEN = json.loads((GOLDEN_DIR / "quantize" / "imatrix.json").read_text())
QUANTIZE_INPUTS = json.loads((GOLDEN_DIR / "quantize" / "synth-f16.json").read_text())


def read_imatrix(path: Path) -> tuple:
    reader = gguf.GGUFReader(path)
    fields = {k: reader.fields[k].contents() for k in ("general.type", "imatrix.chunk_count", "imatrix.chunk_size",
                                                       "imatrix.datasets")}
    tensors = {t.name: (np.array(t.data, dtype=np.float64), [int(d) for d in t.shape]) for t in reader.tensors}
    return fields, tensors


@pytest.fixture(scope="module")
def lumen_imatrix(tmp_path_factory):
    out = tmp_path_factory.mktemp("imatrix") / "imatrix.gguf"
    made_by = IMATRIX_GOLDEN["made_by"]
    run_lumen("imatrix", "-m", real_model(DEFAULT_MODEL), "-f", TEXT, "-o", out, *made_by[made_by.index("-c"):],
              "-t", "2")
    return out


def test_imatrix_file_is_llama_imatrix_format(lumen_imatrix):
    fields, tensors = read_imatrix(lumen_imatrix)
    want = IMATRIX_GOLDEN["metadata"]
    assert {k: fields[k] for k in want} == want
    assert fields["imatrix.datasets"] == [str(TEXT)]
    # Every entry a 1-D F32 in_sum2 of the weight's width and a single count, as llama-imatrix
    # writes a dense weight's.
    names = {n.rsplit(".", 1)[0] for n in tensors}
    assert names == set(IMATRIX_GOLDEN["entries"])
    for name, entry in IMATRIX_GOLDEN["entries"].items():
        assert tensors[f"{name}.in_sum2"][1] == [entry["columns"]]
        assert tensors[f"{name}.counts"][1] == [1]


def test_imatrix_sums_match_llama_imatrix(lumen_imatrix):
    _, tensors = read_imatrix(lumen_imatrix)
    far = []
    for name, want in IMATRIX_GOLDEN["entries"].items():
        sums = tensors[f"{name}.in_sum2"][0]
        count = int(tensors[f"{name}.counts"][0][0])
        assert count == want["count"], name
        total_error = abs(sums.sum() - want["sum"]) / want["sum"]
        max_error = abs(sums.max() - want["max"]) / want["max"]
        if total_error > 0.01 or max_error > 0.03:
            far.append(f"{name}: sum {sums.sum():.6g} vs {want['sum']:.6g}, max {sums.max():.6g} vs {want['max']:.6g}")
    assert far == []


def test_mixture_of_experts_imatrix_matches_llama_imatrix(tmp_path):
    """Per expert: one row of sums and the tokens routed to it. Routing near-ties between two
    float implementations (random router weights have many) send a few of a layer's 2048 routes to
    another expert, so per-expert counts may differ a little; their total (tokens x experts per
    token) may not."""
    model = tmp_path / "moe.gguf"
    run_lumen(*MOE_GOLDEN["made_by"][1:-1], real_model(DEFAULT_MODEL), "-o", model, "-t", "2")
    out = tmp_path / "moe.imatrix.gguf"
    run_lumen("imatrix", "-m", model, "-f", TEXT, "-o", out, *MOE_GOLDEN["imatrix_args"], "-t", "2")
    _, tensors = read_imatrix(out)
    assert {n.rsplit(".", 1)[0] for n in tensors} == set(MOE_GOLDEN["entries"])
    experts = 0
    for name, want in MOE_GOLDEN["entries"].items():
        sums, shape = tensors[f"{name}.in_sum2"]
        assert abs(sums.sum() - want["sum"]) / want["sum"] < 0.01, name
        if "counts" not in want:
            assert tensors[f"{name}.counts"][0][0] == want["count"], name
            continue
        experts += 1
        counts = tensors[f"{name}.counts"][0].reshape(-1)
        assert shape == [want["columns"], len(want["counts"])], name
        assert tensors[f"{name}.counts"][1] == [1, len(want["counts"])], name
        assert counts.sum() == sum(want["counts"]), name
        # Each token sent elsewhere moves two counts; at most 1% of the routes may move.
        assert np.abs(counts - np.array(want["counts"])).sum() <= counts.sum() / 50, name
    assert experts == 6  # gate, up and down experts of both layers


@pytest.fixture(scope="module")
def quantize_inputs(tmp_path_factory):
    """The inputs of test_cli_quantize.py, made the same way, each with its synthetic imatrix."""
    tmp = tmp_path_factory.mktemp("quantize-imatrix")
    model = real_model(DEFAULT_MODEL)
    synth_args = QUANTIZE_INPUTS["made_by"][1:-1]
    run_lumen(*synth_args, model, "-o", tmp / "synth-f16.gguf", "-t", "2")
    run_lumen("quantize", model, tmp / "smollm2-f16.gguf", "F16", "--allow-requantize", "-t", "2")
    for name, seed in QUANTIZE_GOLDEN["seeds"].items():
        write_synthetic_imatrix(tmp / f"{name}.imatrix.gguf", layer_weights(lumen_bin(), tmp / f"{name}.gguf"), seed)
    return tmp


CASES = QUANTIZE_GOLDEN["cases"]


@pytest.mark.parametrize("case", CASES, ids=[f"{c['input']}-{c['type']}" for c in CASES])
def test_every_tensor_equals_llama_quantize_with_imatrix(quantize_inputs, case):
    name, qtype = case["input"], case["type"]
    out = quantize_inputs / f"{name}-{qtype}.gguf"
    imatrix = quantize_inputs / f"{name}.imatrix.gguf"
    run_lumen("quantize", "--imatrix", imatrix, quantize_inputs / f"{name}.gguf", out, qtype, "-t", "2")
    written = GgufTensors(out)
    assert differences(written.digests(), case["tensors"]) == []
    # The keys llama-quantize adds: the imatrix's file, dataset, entry and chunk counts.
    assert written.kv[b"quantize.imatrix.file"] == str(imatrix).encode()
    assert written.kv[b"quantize.imatrix.dataset"] == b"synthetic"
    assert written.kv[b"quantize.imatrix.entries_count"] == len(layer_weights(lumen_bin(), out))
    assert written.kv[b"quantize.imatrix.chunks_count"] == 2
    out.unlink()


def test_a_model_file_is_not_an_imatrix(quantize_inputs, tmp_path):
    out = tmp_path / "q.gguf"
    expect_error("--imatrix", real_model(DEFAULT_MODEL), quantize_inputs / "synth-f16.gguf", out, "Q4_K_M",
                 mentions="not an importance matrix", output=out)
    garbage = tmp_path / "garbage.dat"
    garbage.write_bytes(b"\x03\x00\x00\x00not a gguf file at all")
    expect_error("--imatrix", garbage, quantize_inputs / "synth-f16.gguf", out, "Q4_K_M", mentions="garbage.dat",
                 output=out)


def test_an_imatrix_of_another_model_is_refused(quantize_inputs, tmp_path):
    out = tmp_path / "q.gguf"
    # The real model's imatrix has 30 layers' entries; the synthetic model has 8.
    expect_error("--imatrix", quantize_inputs / "smollm2-f16.imatrix.gguf", quantize_inputs / "synth-f16.gguf", out,
                 "Q4_K_M", mentions="made for another model", output=out)
    wide = tmp_path / "wide.imatrix.gguf"
    weights = layer_weights(lumen_bin(), quantize_inputs / "synth-f16.gguf")
    write_synthetic_imatrix(wide, weights, 3, widen="blk.2.ffn_down.weight")
    expect_error("--imatrix", wide, quantize_inputs / "synth-f16.gguf", out, "Q4_K_M",
                 mentions="blk.2.ffn_down.weight", output=out)
