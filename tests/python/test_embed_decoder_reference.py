"""`lumen embed` on a decoder against an independent reference: a two-layer llama with random
weights (`lumen synth llama3-mini`, F16) run in float64 numpy straight from the GGUF's tensors (gguf-py reads
them). A decoder's file has no pooling_type, so Lumen pools the last token's final hidden state
(after the output norm); the reference does the same and both are L2-normalised. The bound is
the engine's f16 KV cache and f16 weights' rounding, not a fudge: a wrong norm, rope, head split
or pooled row is off by far more."""
import json
import sys
from pathlib import Path

import numpy as np
import pytest
from gguf import GGUFReader

from conftest import run_lumen

# The tokenizer is only how text becomes ids here: a 67-token vocabulary (the BERT golden's)
# keeps the file small, so gguf-py reads it in a moment (SmolLM2's 49152 tokens take it 8 s);
# llama3-mini (width 256, grouped-query heads, llama3 rope scaling) takes its vocabulary's size.
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
from make_tiny_embedding_models import golden_model  # noqa: E402

TEXTS = ["The quick brown fox jumps over the lazy dog.", "Hello, world!", "a"]


class Tensors:
    """The file's tensors by name, each read (as float64) only when asked for: the 49152-row
    embedding matrix is read for the prompt's rows alone."""

    def __init__(self, reader):
        self.raw = {t.name: t.data for t in reader.tensors}

    def __getitem__(self, name):
        return np.asarray(self.raw[name], dtype=np.float64)

    def rows(self, name, ids):
        return np.asarray(self.raw[name][ids], dtype=np.float64)


def field(reader, key):
    f = reader.fields[key]
    return f.parts[f.data[0]][0]


def rms_norm(x, w, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def rope(x, base, divisors):
    # llama's converter permutes Q and K so that adjacent pairs (2i, 2i + 1) rotate together;
    # llama3-style scaling divides each pair's frequency by the file's rope_freqs.
    n, heads, d = x.shape
    inv = base ** (-np.arange(0, d, 2) / d) / divisors
    angles = np.arange(n)[:, None] * inv[None, :]
    cos, sin = np.cos(angles)[:, None, :], np.sin(angles)[:, None, :]
    even, odd = x[..., 0::2], x[..., 1::2]
    out = np.empty_like(x)
    out[..., 0::2] = even * cos - odd * sin
    out[..., 1::2] = even * sin + odd * cos
    return out


def llama_last_hidden(reader, ids):
    t = Tensors(reader)
    layers = int(field(reader, "llama.block_count"))
    heads = int(field(reader, "llama.attention.head_count"))
    kv_heads = int(field(reader, "llama.attention.head_count_kv"))
    eps = float(field(reader, "llama.attention.layer_norm_rms_epsilon"))
    base = float(field(reader, "llama.rope.freq_base"))
    divisors = t["rope_freqs.weight"] if "rope_freqs.weight" in t.raw else 1.0
    x = t.rows("token_embd.weight", ids)
    n, width = x.shape
    d = width // heads
    causal = np.triu(np.full((n, n), -np.inf), k=1)
    for i in range(layers):
        w = lambda name: t[f"blk.{i}.{name}.weight"]  # noqa: E731
        h = rms_norm(x, w("attn_norm"), eps)
        q = rope((h @ w("attn_q").T).reshape(n, heads, d), base, divisors)
        k = rope((h @ w("attn_k").T).reshape(n, kv_heads, d), base, divisors)
        v = (h @ w("attn_v").T).reshape(n, kv_heads, d)
        group = heads // kv_heads
        k, v = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
        scores = np.einsum("qhd,khd->hqk", q, k) / np.sqrt(d) + causal
        p = np.exp(scores - scores.max(-1, keepdims=True))
        p /= p.sum(-1, keepdims=True)
        x = x + np.einsum("hqk,khd->qhd", p, v).reshape(n, width) @ w("attn_output").T
        h = rms_norm(x, w("ffn_norm"), eps)
        gate, up = h @ w("ffn_gate").T, h @ w("ffn_up").T
        x = x + (gate / (1 + np.exp(-gate)) * up) @ w("ffn_down").T
    return rms_norm(x, t["output_norm.weight"], eps)[-1]


@pytest.fixture(scope="module")
def tiny_llama(tmp_path_factory):
    path = tmp_path_factory.mktemp("embed") / "llama.gguf"
    run_lumen("synth", "llama3-mini", "-o", path, "--vocab", golden_model("tiny_bert"),
              "--type", "F16", "--layers", "2", "--seed", "7")
    return path


def test_last_token_embeddings_match_numpy_llama(tiny_llama):
    args = ["embed", "-m", tiny_llama, "-t", "2"]
    for text in TEXTS:
        args += ["-p", text]
    reply = json.loads(run_lumen(*args).stdout)
    assert [d["index"] for d in reply["data"]] == list(range(len(TEXTS)))
    reader = GGUFReader(str(tiny_llama))
    total = 0
    for text, entry in zip(TEXTS, reply["data"]):
        ids = [int(i) for i in run_lumen("tokenize", "-m", tiny_llama, "--add-special", "-p", text).stdout.split()]
        total += len(ids)
        want = llama_last_hidden(reader, ids)
        want /= np.linalg.norm(want)
        got = np.asarray(entry["embedding"])
        assert got.shape == want.shape
        assert abs(np.linalg.norm(got) - 1) < 1e-5
        worst = np.max(np.abs(got - want))
        print(f"{text!r}: {len(ids)} tokens, max |lumen - numpy| = {worst:.2e}, cosine = {got @ want:.7f}")
        assert worst < 2e-3, text
        assert got @ want > 0.9999, text
    assert reply["usage"]["prompt_tokens"] == total
