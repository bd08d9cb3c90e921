"""`lumen perplexity` against llama.cpp's llama-perplexity: the stored reference
(tests/golden/perplexity/llama_perplexity_smollm2.json, made by scripts/make_perplexity_golden.py)
for the perplexity and the KL-divergence statistics; the base-logits file in llama.cpp's format,
checked with numpy; and one-line errors for bad input."""
import hashlib
import json
import struct
import subprocess
from pathlib import Path

import numpy as np
import pytest

from conftest import lumen_bin, model_cache, real_model

GOLDEN_DIR = Path(__file__).resolve().parent.parent / "golden" / "perplexity"
TEXT = GOLDEN_DIR / "gpl-3.0.txt"
GOLDEN = json.loads((GOLDEN_DIR / "llama_perplexity_smollm2.json").read_text())
MODEL = "SmolLM2-135M-Instruct.Q4_1.gguf"
VARIANT = model_cache() / "derived" / "SmolLM2-135M-Instruct.Q4_1.rope-linear.gguf"


def perplexity(*args, model=None):
    cmd = [lumen_bin(), "perplexity", "-m", str(model or real_model(MODEL)), "-t", "2", *map(str, args)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300)


def perplexity_json(*args, model=None):
    r = perplexity(*args, "--json", model=model)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_the_reference_was_made_from_these_files():
    assert hashlib.sha256(TEXT.read_bytes()).hexdigest() == GOLDEN["text_sha256"]
    assert hashlib.sha256(real_model(MODEL).read_bytes()).hexdigest() == GOLDEN["model_sha256"]


def test_whole_text_within_half_a_percent_of_llama_perplexity():
    ref = GOLDEN["runs"]["c512"]
    got = perplexity_json("-f", TEXT, *ref["flags"])
    # The same windows: one running value per window, 255 scored tokens each.
    assert len(got["running_ppl"]) == len(ref["running_ppl"]) == got["n_windows"]
    assert got["tokens_scored"] == got["n_windows"] * 255
    assert got["ppl"] == pytest.approx(ref["ppl"], rel=0.005)
    assert got["ppl_error"] == pytest.approx(ref["ppl_error"], rel=0.05)


def test_sixteen_windows_in_one_batch():
    ref = GOLDEN["runs"]["c128"]
    got = perplexity_json("-f", TEXT, *ref["flags"])
    assert got["n_windows"] == len(ref["running_ppl"]) == 16
    # 1008 scored tokens: a smaller sample than the whole text's 3570, so a looser bound (the
    # reference's own two attention paths differ by about half of it).
    assert got["ppl"] == pytest.approx(ref["ppl"], rel=0.01)


def test_batch_size_changes_the_work_not_the_result():
    # -b 32 feeds each 128-token window in four pieces; -b 2048 runs the windows side by side.
    pieces = perplexity_json("-f", TEXT, "-c", "128", "--chunks", "3", "-b", "32")
    together = perplexity_json("-f", TEXT, "-c", "128", "--chunks", "3", "-b", "2048")
    assert pieces["running_ppl"] == pytest.approx(together["running_ppl"], rel=1e-4)


def read_base(path):
    """llama.cpp's base-logits file: header, tokens, and each row's log-probabilities."""
    data = path.read_bytes()
    assert data[:8] == b"_logits_"
    n_ctx, n_vocab, n_chunk = struct.unpack_from("<Iii", data, 8)
    tokens = np.frombuffer(data, dtype="<i4", count=n_ctx * n_chunk, offset=20)
    entries = 2 * ((n_vocab + 1) // 2) + 4
    rows = n_chunk * (n_ctx - 1 - n_ctx // 2)
    offset = 20 + 4 * tokens.size
    assert len(data) == offset + rows * entries * 2
    raw = np.frombuffer(data, dtype="<u2", offset=offset).reshape(rows, entries)
    header = raw[:, :4].copy().view("<f4")  # scale, floor log-probability
    log_probs = header[:, :1] * raw[:, 4:4 + n_vocab].astype(np.float64) + header[:, 1:2]
    return n_ctx, n_chunk, tokens, log_probs


@pytest.fixture(scope="module")
def base_files(tmp_path_factory):
    """Base files of the default model and of its rope-linear copy, as `perplexity` writes them."""
    assert VARIANT.exists(), f"{VARIANT} is missing: run scripts/make_rope_variants.py"
    tmp = tmp_path_factory.mktemp("perplexity")
    flags = GOLDEN["kl_divergence"]["flags"]
    base, variant = tmp / "base.bin", tmp / "variant.bin"
    for model, path in ((real_model(MODEL), base), (VARIANT, variant)):
        r = perplexity("-f", TEXT, *flags, "--kl-divergence-base", path, model=model)
        assert r.returncode == 0, r.stderr
    return base, variant


def test_base_file_holds_the_text_and_normalized_log_probs(base_files):
    n_ctx, n_chunk, tokens, log_probs = read_base(base_files[0])
    assert (n_ctx, n_chunk) == (128, 8)
    tokenized = subprocess.run([lumen_bin(), "tokenize", "-m", str(real_model(MODEL)), "--add-special"],
                               input=TEXT.read_bytes(), capture_output=True, check=True)
    ids = [int(t) for t in tokenized.stdout.split()]
    assert tokens.tolist() == ids[:n_ctx * n_chunk]
    # Every row is a distribution: the tokens above the encoding's floor hold all the mass but
    # what the floor's tokens hold (each less than e^-16 of it).
    floor = log_probs.min(axis=1, keepdims=True)
    above = np.where(log_probs > floor, np.exp(log_probs), 0).sum(axis=1)
    on_floor = (log_probs <= floor).sum(axis=1) * np.exp(floor[:, 0])
    assert np.all(above < 1 + 1e-4), above.max()
    assert np.all(above + on_floor > 1 - 1e-4), (above + on_floor).min()


def test_kl_divergence_against_its_own_base_is_zero(base_files):
    got = perplexity_json("--kl-divergence", "--kl-divergence-base", base_files[0])
    assert abs(got["kld"]["value"]) < 1e-5
    assert got["same_top"]["value"] == 1.0
    assert got["ppl"]["value"] == pytest.approx(got["ppl_base"]["value"], rel=1e-5)


def test_kl_divergence_matches_numpy_and_llama_perplexity(base_files):
    base, variant = base_files
    got = perplexity_json("--kl-divergence", "--kl-divergence-base", base, model=VARIANT)
    # numpy, from the two files alone: KL(base || variant) over the tokens llama.cpp's definition
    # keeps (base log-probability above -16), the variant's own rows quantized to 16 bits.
    _, _, tokens, p_log = read_base(base)
    _, _, _, q_log = read_base(variant)
    kept = p_log > -16
    kld = (np.where(kept, np.exp(p_log) * (p_log - q_log), 0)).sum(axis=1)
    assert got["kld"]["value"] == pytest.approx(kld.mean(), rel=0.01)
    same_top = (p_log.argmax(axis=1) == q_log.argmax(axis=1)).mean()
    assert got["same_top"]["value"] == pytest.approx(same_top, abs=0.01)

    ref = GOLDEN["kl_divergence"]
    assert got["ppl_base"]["value"] == pytest.approx(ref["ppl_base"], rel=0.01)
    assert got["ppl"]["value"] == pytest.approx(ref["ppl"], rel=0.01)
    assert got["kld"]["value"] == pytest.approx(ref["kld_mean"], rel=0.05)
    assert got["kld_median"] == pytest.approx(ref["kld_median"], rel=0.1)
    assert 100 * got["same_top"]["value"] == pytest.approx(ref["same_top_percent"], abs=2.0)
    assert 100 * got["p_diff_rms"]["value"] == pytest.approx(ref["p_diff_rms_percent"], rel=0.05)


@pytest.mark.parametrize("args, message", [
    ([], "give the text with -f FILE"),
    (["-f", "/nonexistent/text.txt"], "cannot read the text file '/nonexistent/text.txt'"),
    (["-f", "/"], "the text file '/' is a directory"),
    (["-f", TEXT, "-c", "100000"], "-c 100000 is larger than the model's context of 8192 tokens"),
    (["-f", TEXT, "-c", "2"], "-c must be at least 4"),
    (["-f", TEXT, "-c", "512", "-b", "0"], "-b must be at least 1"),
    (["-f", TEXT, "-c", "512", "--chunks", "0"], "--chunks must be at least 1"),
    (["--kl-divergence"], "give its file with --kl-divergence-base FILE"),
    (["--kl-divergence", "--kl-divergence-base", TEXT], "is not a llama.cpp base-logits file"),
    (["--kl-divergence", "--kl-divergence-base", "/nonexistent/base.bin"], "cannot read the logits file"),
])
def test_bad_input_is_a_one_line_error(args, message):
    r = perplexity(*args)
    assert r.returncode == 1, r.stdout
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("lumen: error: "), r.stderr
    assert message in r.stderr, r.stderr


def test_text_too_short_for_two_windows(tmp_path):
    short = tmp_path / "short.txt"
    short.write_text("A sentence far shorter than two windows of 512 tokens.")
    r = perplexity("-f", short, "-c", "512")
    assert r.returncode == 1
    assert "needs at least 1024 (two windows, as llama-perplexity)" in r.stderr, r.stderr


def test_truncated_or_foreign_base_file(tmp_path, base_files):
    data = base_files[0].read_bytes()
    truncated = tmp_path / "truncated.bin"
    truncated.write_bytes(data[:len(data) // 2])
    r = perplexity("--kl-divergence", "--kl-divergence-base", truncated)
    assert r.returncode == 1 and "is truncated" in r.stderr, r.stderr
    other_vocab = tmp_path / "vocab.bin"
    other_vocab.write_bytes(data[:12] + struct.pack("<i", 1000) + data[16:])
    r = perplexity("--kl-divergence", "--kl-divergence-base", other_vocab)
    assert r.returncode == 1, r.stderr
    assert "outside its vocabulary of 1000" in r.stderr or "vocabulary of 1000 tokens" in r.stderr, r.stderr
