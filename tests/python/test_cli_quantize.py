"""`lumen quantize` against llama.cpp's llama-quantize: every tensor's type and bytes must equal
what llama-quantize wrote for the same input, type and flags (tests/golden/quantize/*.json, made
by scripts/make_quantize_golden.py; llama.cpp is not needed here). Two inputs:
  - synth-f16, a synthetic F16 model in the default model's shapes (`lumen synth`), for every
    type and the options;
  - smollm2-f16, the default model converted to F16, for the common mixes. The golden file's
    input was made by scripts/make_f16_model.py (gguf-py); here `lumen quantize ... F16
    --allow-requantize` makes it, and its tensors must equal that input's first.
Then: the quantized model runs in Lumen, and bad input is a one-line error that leaves no file.
"""
import hashlib
import json
import mmap
import struct
from pathlib import Path

import pytest
from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType

from conftest import real_model, run_lumen

GOLDEN_DIR = Path(__file__).resolve().parent.parent / "golden" / "quantize"
DEFAULT_MODEL = "SmolLM2-135M-Instruct.Q4_1.gguf"
GOLDEN = {name: json.loads((GOLDEN_DIR / f"{name}.json").read_text())
          for name in ("synth-f16", "smollm2-f16")}
CASES = [(name, case) for name, golden in GOLDEN.items() for case in golden["cases"]]


SCALAR_FORMATS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?",
                  10: "<Q", 11: "<q", 12: "<d"}


class GgufTensors:
    """Just enough of a GGUF reader for this test: metadata values (arrays as their raw bytes)
    and each tensor's bytes, without building Python objects for a 49k-token vocabulary (gguf-py's
    reader takes seconds per file; the golden script uses it, so this one is checked against it)."""

    def __init__(self, path: Path):
        with path.open("rb") as f:
            self.data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        self.at = 0
        magic, _version, n_tensors, n_kv = struct.unpack_from("<IIQQ", self.data, 0)
        assert magic == 0x46554747
        self.at = 24
        self.kv = {}
        for _ in range(n_kv):
            key = self.string()
            self.kv[key] = self.value(self.u32())
        infos = []
        for _ in range(n_tensors):
            name = self.string()
            dims = [self.u64() for _ in range(self.u32())]
            infos.append((name, dims, self.u32(), self.u64()))
        alignment = self.kv.get(b"general.alignment", 32)
        start = (self.at + alignment - 1) // alignment * alignment
        self.tensors = {}
        for name, dims, qtype, offset in infos:
            block, size = GGML_QUANT_SIZES[GGMLQuantizationType(qtype)]
            elements = 1
            for d in dims:
                elements *= d
            self.tensors[name] = (GGMLQuantizationType(qtype).name,
                                  self.data[start + offset:start + offset + elements // block * size])

    def u32(self):
        self.at += 4
        return struct.unpack_from("<I", self.data, self.at - 4)[0]

    def u64(self):
        self.at += 8
        return struct.unpack_from("<Q", self.data, self.at - 8)[0]

    def string(self):
        n = self.u64()
        self.at += n
        return bytes(self.data[self.at - n:self.at])

    def value(self, vtype):
        if vtype == 8:
            return self.string()
        if vtype == 9:  # an array: kept as its raw bytes
            begin, element_type, count = self.at, self.u32(), self.u64()
            for _ in range(count):
                self.value(element_type)
            return bytes(self.data[begin:self.at])
        fmt = SCALAR_FORMATS[vtype]
        self.at += struct.calcsize(fmt)
        return struct.unpack_from(fmt, self.data, self.at - struct.calcsize(fmt))[0]

    def digests(self) -> dict:
        """{name: "TYPE sha256-prefix"}, as the golden script records them."""
        return {name.decode(): f"{qtype} {hashlib.sha256(data).hexdigest()[:16]}"
                for name, (qtype, data) in self.tensors.items()}


def tensor_digests(path: Path) -> dict:
    return GgufTensors(path).digests()


def differences(got: dict, want: dict) -> list:
    names = sorted(set(got) | set(want))
    return [f"{n}: lumen {got.get(n)}, llama.cpp {want.get(n)}" for n in names if got.get(n) != want.get(n)]


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("quantize")
    model = real_model(DEFAULT_MODEL)
    synth_args = GOLDEN["synth-f16"]["made_by"][1:]
    assert synth_args[-2:] == ["--vocab", DEFAULT_MODEL]
    run_lumen(*synth_args[:-1], model, "-o", tmp / "synth-f16.gguf", "-t", "2")
    converted = run_lumen("quantize", model, tmp / "smollm2-f16.gguf", "F16", "--allow-requantize",
                          "-t", "2")
    assert b"warning: requantized" in converted.stderr
    return tmp


@pytest.mark.parametrize("name", GOLDEN)
def test_inputs_equal_the_ones_llama_quantize_was_given(inputs, name):
    assert differences(tensor_digests(inputs / f"{name}.gguf"), GOLDEN[name]["input_tensors"]) == []


@pytest.mark.parametrize("name,case", CASES, ids=[f"{n}-{c['case']}" for n, c in CASES])
def test_every_tensor_equals_llama_quantize(inputs, name, case):
    out = inputs / f"{name}-{case['case']}.gguf"
    run_lumen("quantize", inputs / f"{name}.gguf", out, case["type"], *case["flags"], "-t", "2")
    written = GgufTensors(out)
    assert differences(written.digests(), case["tensors"]) == []
    assert written.kv[b"general.file_type"] == case["file_type"]
    assert written.kv[b"general.quantization_version"] == 2
    # Everything else is the input's metadata, unchanged, in its order.
    source = GgufTensors(inputs / f"{name}.gguf").kv
    changed = (b"general.file_type", b"general.quantization_version")
    assert [(k, v) for k, v in written.kv.items() if k not in changed] == \
           [(k, v) for k, v in source.items() if k not in changed]
    if case["case"] != "Q4_K_M" or name != "smollm2-f16":
        out.unlink()  # keep the disk use down; the Q4_K_M model is run below


def test_quantized_model_generates_text(inputs):
    model = inputs / "smollm2-f16-Q4_K_M.gguf"
    if not model.exists():
        run_lumen("quantize", inputs / "smollm2-f16.gguf", model, "Q4_K_M", "-t", "2")
    r = run_lumen("run", "-m", model, "--temp", "0", "-p", "The capital of France is", "-n", "8",
                  text=True)
    assert "Paris" in r.stdout


def expect_error(*args, mentions: str, output: Path):
    r = run_lumen("quantize", *args, check=False, text=True)
    assert r.returncode == 1, r.stderr
    assert mentions in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    # No output, and no temporary file beside it.
    assert list(output.parent.glob(output.name + "*")) == []


def test_quantized_input_is_refused_without_allow_requantize(tmp_path):
    out = tmp_path / "q.gguf"
    expect_error(real_model(DEFAULT_MODEL), out, "Q4_K_M", mentions="--allow-requantize", output=out)


def test_unknown_type_names_the_choices(tmp_path):
    out = tmp_path / "q.gguf"
    expect_error(real_model(DEFAULT_MODEL), out, "Q4_K_X", mentions="Q4_K_M", output=out)
    expect_error(real_model(DEFAULT_MODEL), out, "Q4_K_M", "--output-tensor-type", "IQ2_XXS",
                 mentions="--output-tensor-type", output=out)


def test_broken_input_is_a_clear_error(tmp_path):
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(real_model(DEFAULT_MODEL).read_bytes()[:100000])
    out = tmp_path / "q.gguf"
    expect_error(broken, out, "Q8_0", mentions="broken.gguf", output=out)
    expect_error(tmp_path / "missing.gguf", out, "Q8_0", mentions="missing.gguf", output=out)


def test_unwritable_output_is_a_clear_error(inputs, tmp_path):
    out = tmp_path / "no-such-dir" / "q.gguf"
    expect_error(inputs / "synth-f16.gguf", out, "Q8_0", mentions="no-such-dir", output=out)


def test_override_type_that_does_not_fit_the_rows_is_refused_before_writing(inputs, tmp_path):
    # token_embd rows are 576 long: not whole 256-element Q4_K blocks. llama-quantize would
    # abort in ggml; Lumen says why.
    out = tmp_path / "q.gguf"
    expect_error(inputs / "synth-f16.gguf", out, "Q4_K_M", "--token-embedding-type", "Q4_K",
                 mentions="token_embd.weight", output=out)
