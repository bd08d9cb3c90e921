"""Lumen's reference (de)quantizers against gguf-py, the independent reference.

Dequantization must be bit-identical to gguf.quants.dequantize for every type Lumen has kernels
for and gguf-py can decode (all but F32, whose dequantization is a copy, and Q8_1/Q8_K, which
gguf-py cannot decode; the C++ unit tests pin those down). Blocks are random bytes with their
f16/bf16 scale fields replaced by random finite values spanning the f16 range (subnormals
included; MXFP4's exponent bytes up to 250), plus fully random blocks where NaN/Inf scales appear; NaN positions must agree there
(payloads may differ, since the CPU picks which NaN operand survives a multiply).

Quantization: where gguf-py implements a type (F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, MXFP4), Lumen
follows ggml's reference quantizer step for step, so the bytes must be identical (for F16, bar
signalling-NaN inputs, which Lumen quietens and numpy does not). For every
quantized type the round-trip error must stay within a stated bound, and where gguf-py can
quantize, within 5% of gguf-py's own error.

Runs `quant_tool` from $LUMEN_TOOLS_DIR (tests/tools/quant_tool.cc).
"""

import os
import subprocess
from pathlib import Path

import numpy as np
import pytest
from gguf import quants
from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType as T

TOOL = Path(os.environ.get("LUMEN_TOOLS_DIR", "build/release/tests/tools")) / "quant_tool"

# Byte offsets of the f16 scale fields inside one block of each type.
F16_SCALE_FIELDS = {
    T.Q4_0: [0], T.Q4_1: [0, 2], T.Q5_0: [0], T.Q5_1: [0, 2], T.Q8_0: [0],
    T.Q2_K: [80, 82], T.Q3_K: [108], T.Q4_K: [0, 2], T.Q5_K: [0, 2], T.Q6_K: [208],
    T.IQ4_NL: [0], T.IQ4_XS: [0],
}
DEQUANT_TYPES = [T.F16, T.BF16, *F16_SCALE_FIELDS, T.MXFP4]
GGUF_PY_QUANTIZES = [T.F16, T.BF16, T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1, T.Q8_0, T.MXFP4]
QUANTIZED = [T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1, T.Q8_0, T.Q8_1,
             T.Q2_K, T.Q3_K, T.Q4_K, T.Q5_K, T.Q6_K, T.Q8_K, T.IQ4_NL, T.IQ4_XS, T.MXFP4]

# Round-trip bound per type: sqrt(mean over blocks of (RMS error / max|x|)^2) on uniform data,
# the worst case. Same figures, and the same derivation from each format's level step, as
# kBounds in tests/unit/tensor/quant_roundtrip_test.cc.
ROUND_TRIP_BOUND = {
    T.Q4_0: 0.042, T.Q4_1: 0.039, T.Q5_0: 0.020, T.Q5_1: 0.019, T.Q8_0: 0.0024,
    T.Q8_1: 0.0024, T.Q2_K: 0.140, T.Q3_K: 0.075, T.Q4_K: 0.035, T.Q5_K: 0.0172,
    T.Q6_K: 0.0082, T.Q8_K: 0.0024, T.IQ4_NL: 0.0425, T.IQ4_XS: 0.0425, T.MXFP4: 0.092,
}


def run_tool(*args):
    result = subprocess.run([str(TOOL), *map(str, args)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return result


def tool_dequantize(tmp_path, qtype, raw: np.ndarray) -> np.ndarray:
    src, dst = tmp_path / "in.bin", tmp_path / "out.f32"
    raw.astype(np.uint8).tofile(src)
    run_tool("dequantize", qtype.name, src, dst)
    return np.fromfile(dst, dtype="<f4")


def tool_quantize(tmp_path, qtype, values: np.ndarray) -> np.ndarray:
    src, dst = tmp_path / "in.f32", tmp_path / "out.bin"
    values.astype("<f4").tofile(src)
    run_tool("quantize", qtype.name, src, dst)
    return np.fromfile(dst, dtype=np.uint8)


def random_finite_f16(rng, count) -> np.ndarray:
    """f16 bit patterns of random sign and magnitude from 1e-7 (subnormal) to ~3e4, some 0."""
    magnitude = 10.0 ** rng.uniform(-7.0, 4.5, count)
    values = np.where(rng.random(count) < 0.5, -magnitude, magnitude)
    values[rng.random(count) < 0.02] = 0.0
    return values.astype(np.float16).view(np.uint16)


def blocks_with_finite_scales(rng, qtype, n_blocks) -> np.ndarray:
    block_size, type_size = GGML_QUANT_SIZES[qtype]
    raw = rng.integers(0, 256, size=(n_blocks, type_size), dtype=np.uint8)
    if qtype == T.F16:
        return random_finite_f16(rng, n_blocks).view(np.uint8).reshape(n_blocks, 2)
    if qtype == T.BF16:
        magnitude = (10.0 ** rng.uniform(-35.0, 35.0, n_blocks)).astype(np.float32)
        signs = np.where(rng.random(n_blocks) < 0.5, -1, 1).astype(np.float32)
        bits = (magnitude * signs).view(np.uint32) >> 16
        return bits.astype(np.uint16).view(np.uint8).reshape(n_blocks, 2)
    if qtype == T.MXFP4:  # an E8M0 exponent byte: up to 250, where 12 x 2^(e - 128) is finite
        raw[:, 0] = rng.integers(0, 251, n_blocks)
        return raw
    for offset in F16_SCALE_FIELDS[qtype]:
        raw[:, offset:offset + 2] = random_finite_f16(rng, n_blocks).view(np.uint8).reshape(-1, 2)
    return raw


def assert_same_floats(ours: np.ndarray, ref: np.ndarray, nan_payloads_must_match: bool):
    assert ours.shape == ref.shape
    ours_nan, ref_nan = np.isnan(ours), np.isnan(ref)
    differ = np.flatnonzero(ours_nan != ref_nan)
    assert differ.size == 0, f"NaN positions differ, first at {differ[:10]}"
    if nan_payloads_must_match:
        mask = np.ones_like(ours_nan)
    else:
        mask = ~ours_nan
    ours_bits, ref_bits = ours.view(np.uint32)[mask], ref.view(np.uint32)[mask]
    bad = np.flatnonzero(ours_bits != ref_bits)
    assert bad.size == 0, (
        f"{bad.size} values differ, first at {bad[0]}: "
        f"ours {ours[mask][bad[0]]!r} ({ours_bits[bad[0]]:#010x}), "
        f"gguf-py {ref[mask][bad[0]]!r} ({ref_bits[bad[0]]:#010x})")


def gguf_py_dequantize(qtype, raw: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):  # inf * 0 and friends in the fully random blocks
        return np.asarray(quants.dequantize(raw.reshape(-1), qtype), dtype=np.float32).reshape(-1)


# ---- the type table ----

def test_type_table_matches_gguf_py():
    lines = run_tool("types").stdout.split()
    rows = {int(lines[i]): (lines[i + 1], int(lines[i + 2]), int(lines[i + 3]), lines[i + 4] == "1")
            for i in range(0, len(lines), 5)}
    assert set(rows) == {t.value for t in T}
    for t in T:
        name, block, size, _ = rows[t.value]
        assert name == t.name
        if t == T.Q8_1 and GGML_QUANT_SIZES[t] == (32, 40):
            # gguf-py keeps ggml's pre-2024 Q8_1 (two f32 fields); ggml's block is now 36 bytes.
            assert (block, size) == (32, 36)
            continue
        assert (block, size) == GGML_QUANT_SIZES[t], t.name
    with_kernels = {t for t, row in rows.items() if row[3]}
    assert with_kernels == {t.value for t in [T.F32, *DEQUANT_TYPES, T.Q8_1, T.Q8_K]}


# ---- dequantization: bit-identical with gguf-py ----

@pytest.mark.parametrize("qtype", DEQUANT_TYPES, ids=lambda t: t.name)
def test_dequantize_finite_scales_bit_identical(tmp_path, qtype):
    rng = np.random.default_rng(1000 + qtype.value)
    n_blocks = {1: 8192, 32: 4099, 256: 1031}[GGML_QUANT_SIZES[qtype][0]]
    raw = blocks_with_finite_scales(rng, qtype, n_blocks)
    ours = tool_dequantize(tmp_path, qtype, raw)
    ref = gguf_py_dequantize(qtype, raw)
    assert np.all(np.isfinite(ref))
    assert_same_floats(ours, ref, nan_payloads_must_match=True)


@pytest.mark.parametrize("qtype", DEQUANT_TYPES, ids=lambda t: t.name)
def test_dequantize_random_bytes_bit_identical(tmp_path, qtype):
    rng = np.random.default_rng(2000 + qtype.value)
    _, type_size = GGML_QUANT_SIZES[qtype]
    raw = rng.integers(0, 256, size=(2053, type_size), dtype=np.uint8)
    ours = tool_dequantize(tmp_path, qtype, raw)
    ref = gguf_py_dequantize(qtype, raw)
    # F16/BF16 widening keeps NaN payloads exactly, as numpy does.
    assert_same_floats(ours, ref, nan_payloads_must_match=qtype in (T.F16, T.BF16))


def test_dequantize_every_f16_and_bf16_bit_pattern(tmp_path):
    every = np.arange(65536, dtype=np.uint16).view(np.uint8)
    for qtype in (T.F16, T.BF16):
        ours = tool_dequantize(tmp_path, qtype, every)
        assert_same_floats(ours, gguf_py_dequantize(qtype, every), nan_payloads_must_match=True)


def test_gguf_py_cannot_decode_q8_1_and_q8_k():
    # These two are covered by the C++ tests alone; if gguf-py learns them, add them above.
    for qtype in (T.Q8_1, T.Q8_K):
        with pytest.raises(NotImplementedError):
            quants.dequantize(np.zeros(GGML_QUANT_SIZES[qtype][1], dtype=np.uint8), qtype)


# ---- quantization ----

def uniform_rows(rng, qtype, n_blocks):
    block_size = GGML_QUANT_SIZES[qtype][0]
    return rng.uniform(-1.0, 1.0, n_blocks * block_size).astype(np.float32)


def mixed_rows(rng, qtype, n_blocks):
    """Several distributions and scales, with all-zero and constant blocks mixed in.

    Magnitudes stay where the f16 super-scales are normal numbers (Q6_K's is max|x| / 4096);
    below that a scale keeps fewer bits, in ggml as here, and no resolution-based bound holds.
    """
    block_size = GGML_QUANT_SIZES[qtype][0]
    x = np.empty((n_blocks, block_size), dtype=np.float32)
    for b in range(n_blocks):
        kind = b % 7
        scale = np.float32(10.0 ** rng.uniform(-0.5, 3.5))
        if kind == 0:
            x[b] = rng.uniform(-1, 1, block_size) * scale
        elif kind == 1:
            x[b] = rng.standard_normal(block_size) * scale
        elif kind == 2:
            x[b] = rng.laplace(0, 1, block_size) * scale
        elif kind == 3:
            x[b] = rng.uniform(0.5, 1.5, block_size) * scale
        elif kind == 4:
            x[b] = 0.0
        elif kind == 5:
            x[b] = rng.choice([-1.0, 1.0]) * rng.uniform(0.5, 1.0) * scale
        else:
            spikes = rng.standard_normal(block_size) * scale
            x[b] = np.where(rng.random(block_size) < 0.5, 0.0, spikes)
    return x.reshape(-1)


def block_errors(qtype, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """RMS error / max|x| per block, for blocks that are not all zero."""
    block_size = GGML_QUANT_SIZES[qtype][0]
    xb = x.reshape(-1, block_size).astype(np.float64)
    yb = y.reshape(-1, block_size).astype(np.float64)
    peak = np.abs(xb).max(axis=1)
    rms = np.sqrt(((xb - yb) ** 2).mean(axis=1))
    keep = peak > 0
    assert np.all(rms[~keep] == 0), "an all-zero block did not come back as zeros"
    return rms[keep] / peak[keep]


@pytest.mark.parametrize("qtype", GGUF_PY_QUANTIZES, ids=lambda t: t.name)
def test_quantize_bytes_identical_to_gguf_py(tmp_path, qtype):
    rng = np.random.default_rng(3000 + qtype.value)
    for values in (mixed_rows(rng, qtype, 3003), uniform_rows(rng, qtype, 1001)):
        ours = tool_quantize(tmp_path, qtype, values)
        with np.errstate(all="ignore"):
            ref = np.asarray(quants.quantize(values, qtype)).view(np.uint8).reshape(-1)
        bad = np.flatnonzero(ours != ref)
        assert bad.size == 0, f"{bad.size} bytes differ, first at byte {bad[0]}"


@pytest.mark.parametrize("qtype", [T.F16, T.BF16], ids=lambda t: t.name)
def test_quantize_any_float_bit_pattern_like_numpy(tmp_path, qtype):
    """Every class of f32: subnormals, overflow, ties, inf, NaN."""
    rng = np.random.default_rng(4000 + qtype.value)
    bits = rng.integers(0, 2**32, 200_000, dtype=np.uint64).astype(np.uint32)
    # Exact ties for f16 (13 dropped bits = 0x1000) and bf16 (16 dropped bits = 0x8000).
    ties = (bits[:20_000] & ~np.uint32(0x1FFF)) | np.uint32(0x1000)
    ties_bf = (bits[20_000:40_000] & ~np.uint32(0xFFFF)) | np.uint32(0x8000)
    values = np.concatenate([bits, ties, ties_bf]).view(np.float32)
    ours = tool_quantize(tmp_path, qtype, values).view(np.uint16)
    with np.errstate(all="ignore"):
        ref = np.asarray(quants.quantize(values, qtype)).view(np.uint16).reshape(-1)
    if qtype == T.F16:
        # numpy keeps a signalling NaN signalling; Lumen quietens it (see src/tensor/fp16.h).
        signalling = np.isnan(values) & ((values.view(np.uint32) & np.uint32(0x00400000)) == 0)
        assert np.all(ours[signalling] & 0x7E00 == 0x7E00)
        ours, ref = ours[~signalling], ref[~signalling]
    bad = np.flatnonzero(ours != ref)
    assert bad.size == 0, (
        f"{bad.size} values differ, first: ours {ours[bad[0]]:#06x}, numpy {ref[bad[0]]:#06x}")


@pytest.mark.parametrize("qtype", QUANTIZED, ids=lambda t: t.name)
def test_round_trip_error_within_bound(tmp_path, qtype):
    rng = np.random.default_rng(5000 + qtype.value)
    n_blocks = 2001 if GGML_QUANT_SIZES[qtype][0] == 32 else 251
    x = uniform_rows(rng, qtype, n_blocks)
    packed = tool_quantize(tmp_path, qtype, x)
    assert packed.size == n_blocks * (36 if qtype == T.Q8_1 else GGML_QUANT_SIZES[qtype][1])
    y = tool_dequantize(tmp_path, qtype, packed)
    if qtype not in (T.Q8_1, T.Q8_K):  # gguf-py must read our bytes the same way
        assert_same_floats(y, gguf_py_dequantize(qtype, packed), nan_payloads_must_match=True)
    errors = block_errors(qtype, x, y)
    mean = float(np.sqrt(np.mean(errors ** 2)))
    assert mean <= ROUND_TRIP_BOUND[qtype], f"{qtype.name}: {mean:.5f} > {ROUND_TRIP_BOUND[qtype]}"

    mixed = mixed_rows(rng, qtype, n_blocks)
    mixed_y = tool_dequantize(tmp_path, qtype, tool_quantize(tmp_path, qtype, mixed))
    mixed_errors = block_errors(qtype, mixed, mixed_y)
    assert float(np.sqrt(np.mean(mixed_errors ** 2))) <= ROUND_TRIP_BOUND[qtype]

    if qtype in GGUF_PY_QUANTIZES:
        for values, ours in ((x, errors), (mixed, mixed_errors)):
            ref_packed = np.asarray(quants.quantize(values, qtype)).view(np.uint8)
            ref_errors = block_errors(qtype, values, gguf_py_dequantize(qtype, ref_packed))
            ours_rms = float(np.sqrt(np.mean(ours ** 2)))
            ref_rms = float(np.sqrt(np.mean(ref_errors ** 2)))
            assert ours_rms <= 1.05 * ref_rms, (
                f"{qtype.name}: ours {ours_rms:.5f}, gguf-py {ref_rms:.5f}")


def test_tool_rejects_partial_blocks(tmp_path):
    def tool(*args):
        return subprocess.run([str(TOOL), *map(str, args)], capture_output=True, text=True)

    bad_blocks, bad_floats, out = tmp_path / "bad.bin", tmp_path / "bad.f32", tmp_path / "out"
    bad_blocks.write_bytes(b"\0" * 17)
    np.zeros(33, dtype="<f4").tofile(bad_floats)
    result = tool("dequantize", "Q4_0", bad_blocks, out)
    assert result.returncode == 1 and "18-byte" in result.stderr
    result = tool("quantize", "Q4_0", bad_floats, out)
    assert result.returncode == 1 and "32-element" in result.stderr
    result = tool("quantize", "IQ2_XXS", bad_floats, out)
    assert result.returncode == 1 and "IQ2_XXS" in result.stderr
    assert tool("frobnicate").returncode == 1
