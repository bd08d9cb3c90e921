"""`lumen quantize --report`: its numbers checked independently.
  - each tensor's relative RMSE equals the one computed with numpy from the input's F16 values
    and gguf-py's dequantization of the written tensor;
  - Q8_0 is far closer to the original than Q4_0, tensor by tensor;
  - the perplexity it reports for a type is what `lumen perplexity` says about the written file.
The input is the synthetic F16 model of test_cli_quantize.py (random weights in the default
model's shapes, 8 layers): small and quick."""
import json
from pathlib import Path

import gguf
import numpy as np
import pytest

from conftest import real_model, run_lumen
from test_cli_quantize import DEFAULT_MODEL, GOLDEN, GgufTensors

TEXT_DIR = Path(__file__).resolve().parent.parent / "golden" / "perplexity"


@pytest.fixture(scope="module")
def synth(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("report")
    synth_args = GOLDEN["synth-f16"]["made_by"][1:-1]
    run_lumen(*synth_args, real_model(DEFAULT_MODEL), "-o", tmp / "synth-f16.gguf", "-t", "2")
    return tmp


def report(synth, qtype: str, *extra) -> tuple:
    out = synth / f"{qtype}.gguf"
    r = run_lumen("quantize", synth / "synth-f16.gguf", out, qtype, "--pure", "--report-json", "-", *extra, "-t", "2",
                  text=True)
    return out, json.loads(r.stdout[r.stdout.index("{"):])


def relative_rmse(original: np.ndarray, back: np.ndarray) -> float:
    original = original.astype(np.float64)
    return float(np.sqrt(((back.astype(np.float64) - original) ** 2).sum() / (original ** 2).sum()))


def test_relative_rmse_equals_numpy_and_q8_0_is_far_below_q4_0(synth):
    q4_path, q4 = report(synth, "Q4_0")
    _, q8 = report(synth, "Q8_0")
    source = GgufTensors(synth / "synth-f16.gguf").tensors
    written = GgufTensors(q4_path).tensors
    checked = 0
    for entry in [t for t in q4["tensors"] if t["name"].startswith("blk.")][:12]:  # every kind, quickly
        name = entry["name"]
        assert source[name.encode()][0] == "F16" and written[name.encode()][0] == "Q4_0"
        original = np.frombuffer(source[name.encode()][1], dtype=np.float16)
        packed = np.frombuffer(written[name.encode()][1], dtype=np.uint8)
        back = gguf.quants.dequantize(packed, gguf.GGMLQuantizationType.Q4_0).reshape(-1)
        assert entry["relative_rmse"] == pytest.approx(relative_rmse(original, back), rel=1e-9), name
        checked += 1
    assert checked == 12
    q8_by_name = {t["name"]: t["relative_rmse"] for t in q8["tensors"]}
    for entry in q4["tensors"]:
        assert 0 < q8_by_name[entry["name"]] < entry["relative_rmse"] / 8, entry["name"]
    assert q8["relative_rmse"] < q4["relative_rmse"] / 8


def test_reported_perplexity_is_lumen_perplexity_of_the_file(synth):
    text = TEXT_DIR / "gpl-3.0.txt"
    window = ["--report-ctx", "128", "--report-chunks", "2"]
    out, got = report(synth, "Q8_0", "--report-text", text, "--report-types", "Q8_0,Q4_0", *window)
    assert [c["type"] for c in got["candidates"]] == ["input", "Q8_0", "Q4_0"]
    q8 = got["candidates"][1]
    measured = json.loads(run_lumen("perplexity", "-m", out, "-f", text, "-c", "128", "--chunks", "2", "--json",
                                    "-t", "2", text=True).stdout)
    assert q8["ppl"] == pytest.approx(measured["ppl"], rel=1e-12)
    assert q8["file_bytes"] == out.stat().st_size
    assert got["candidates"][0]["bits_per_weight"] == pytest.approx(16.0, rel=1e-3)
    # The candidate file is gone.
    assert list(out.parent.glob("*.candidate.gguf*")) == []


def test_report_types_are_checked_before_anything_is_written(synth):
    out = synth / "never.gguf"
    r = run_lumen("quantize", synth / "synth-f16.gguf", out, "Q8_0", "--report-text", TEXT_DIR / "gpl-3.0.txt",
                  "--report-types", "Q8_0,Q4_K_X", check=False, text=True)
    assert r.returncode == 1 and "Q4_K_X" in r.stderr
    assert not out.exists()
