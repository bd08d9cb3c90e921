#!/usr/bin/env python3
"""Writes small, well-formed GGUF model files whose hyperparameters or tensors are hostile, each
derived from one tiny valid llama model (2 layers, width 32, the llama-spm test vocabulary), for
the tests that run them through `lumen run` and `lumen serve`. Pure data: random weights.

  make_hostile_models.py OUTDIR VOCAB_GGUF     # writes OUTDIR/*.gguf and OUTDIR/manifest.json

manifest.json: [{"file", "expect": "accept"|"reject", "names": text the one-line error must contain}].
"""
import json
import sys
from pathlib import Path

import numpy as np
from gguf import GGUFReader, GGUFValueType, GGUFWriter, GGMLQuantizationType

EMBD, FF, HEADS, KV_HEADS, LAYERS, CONTEXT = 32, 64, 4, 2, 2, 256


def read_vocab(path):
    reader = GGUFReader(path)
    field = reader.fields["tokenizer.ggml.tokens"]
    tokens = [bytes(field.parts[i]).decode("utf-8", errors="replace") for i in field.data]
    scores = [float(reader.fields["tokenizer.ggml.scores"].parts[i][0]) for i in reader.fields["tokenizer.ggml.scores"].data]
    types = [int(reader.fields["tokenizer.ggml.token_type"].parts[i][0])
             for i in reader.fields["tokenizer.ggml.token_type"].data]
    return tokens, scores, types


def tensors(vocab, layers=LAYERS, head_dim=EMBD // HEADS):
    rng = np.random.default_rng(0)
    q_dim, kv_dim = HEADS * head_dim, KV_HEADS * head_dim
    out = {"token_embd.weight": rng.standard_normal((vocab, EMBD)).astype(np.float16),
           "output_norm.weight": np.ones(EMBD, np.float32)}
    for i in range(layers):
        p = f"blk.{i}."
        out[p + "attn_norm.weight"] = np.ones(EMBD, np.float32)
        out[p + "attn_q.weight"] = rng.standard_normal((q_dim, EMBD)).astype(np.float16)
        out[p + "attn_k.weight"] = rng.standard_normal((kv_dim, EMBD)).astype(np.float16)
        out[p + "attn_v.weight"] = rng.standard_normal((kv_dim, EMBD)).astype(np.float16)
        out[p + "attn_output.weight"] = rng.standard_normal((EMBD, q_dim)).astype(np.float16)
        out[p + "ffn_norm.weight"] = np.ones(EMBD, np.float32)
        out[p + "ffn_gate.weight"] = rng.standard_normal((FF, EMBD)).astype(np.float16)
        out[p + "ffn_up.weight"] = rng.standard_normal((FF, EMBD)).astype(np.float16)
        out[p + "ffn_down.weight"] = rng.standard_normal((EMBD, FF)).astype(np.float16)
    return out


def write(path, vocab, metadata, weights, token_count=None):
    tokens, scores, types = vocab
    n = len(tokens) if token_count is None else token_count
    w = GGUFWriter(str(path), "llama")
    w.add_name("hostile-test")
    for key, (kind, value) in metadata.items():
        if kind == "u32":
            w.add_uint32(key, value)
        elif kind == "f32":
            w.add_float32(key, value)
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens[:n])
    w.add_token_scores(scores[:n])
    w.add_token_types(types[:n])
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    for name, array in weights.items():
        w.add_tensor(name, array)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def base_metadata():
    return {"llama.context_length": ("u32", CONTEXT), "llama.embedding_length": ("u32", EMBD),
            "llama.block_count": ("u32", LAYERS), "llama.feed_forward_length": ("u32", FF),
            "llama.attention.head_count": ("u32", HEADS), "llama.attention.head_count_kv": ("u32", KV_HEADS),
            "llama.attention.layer_norm_rms_epsilon": ("f32", 1e-5), "llama.rope.freq_base": ("f32", 10000.0)}


def cases(vocab_size):
    """(name, expect, text the error names, metadata changes, weights function, token count)."""
    def meta(**changes):
        m = base_metadata()
        for key, value in changes.items():
            m["llama." + key.replace("__", ".")] = value
        return m

    def with_weights(edit):
        def make():
            w = tensors(vocab_size)
            edit(w)
            return w
        return make

    plain = lambda: tensors(vocab_size)
    yield "ok_tiny_llama", "accept", "", meta(), plain, None
    yield "block_count_zero", "reject", "llama.block_count", meta(block_count=("u32", 0)), plain, None
    yield "block_count_short", "reject", "blk.1.", meta(block_count=("u32", 1)), plain, None  # leftover blocks
    yield "block_count_long", "reject", "blk.2.", meta(block_count=("u32", 3)), plain, None  # missing blocks
    yield "block_count_huge", "reject", "llama.block_count", meta(block_count=("u32", 1 << 30)), plain, None
    yield "head_count_zero", "reject", "llama.attention.head_count", meta(attention__head_count=("u32", 0)), plain, None
    yield "head_count_kv_zero", "reject", "llama.attention.head_count_kv", meta(attention__head_count_kv=("u32", 0)), plain, None
    yield "head_count_kv_not_dividing", "reject", "llama.attention.head_count_kv", meta(attention__head_count_kv=("u32", 3)), plain, None
    yield "head_count_not_dividing_width", "reject", "llama.embedding_length", meta(attention__head_count=("u32", 5), attention__head_count_kv=("u32", 5)), plain, None
    yield "head_dim_overflow", "reject", "llama.attention.key_length", meta(attention__key_length=("u32", 1 << 31)), plain, None
    yield "rope_dims_odd", "reject", "llama.rope.dimension_count", meta(rope__dimension_count=("u32", 7)), plain, None
    yield "rope_dims_past_head", "reject", "llama.rope.dimension_count", meta(rope__dimension_count=("u32", 64)), plain, None
    yield "context_zero", "reject", "llama.context_length", meta(context_length=("u32", 0)), plain, None
    yield "ffn_zero", "reject", "llama.feed_forward_length", meta(feed_forward_length=("u32", 0)), plain, None
    yield "vocab_size_mismatch", "reject", "tokenizer.ggml.tokens", meta(vocab_size=("u32", vocab_size + 5)), plain, None
    yield "embedding_rows_mismatch", "reject", "token_embd.weight", meta(), plain, vocab_size - 100
    yield "eps_zero", "reject", "layer_norm_rms_epsilon", meta(attention__layer_norm_rms_epsilon=("f32", 0.0)), plain, None
    yield "freq_base_negative", "reject", "llama.rope.freq_base", meta(rope__freq_base=("f32", -1.0)), plain, None

    def drop_q(w):
        del w["blk.1.attn_q.weight"]
    yield "missing_tensor", "reject", "blk.1.attn_q.weight", meta(), with_weights(drop_q), None

    def wrong_shape(w):
        w["blk.0.ffn_up.weight"] = np.zeros((FF + 1, EMBD), np.float16)
    yield "wrong_shape", "reject", "blk.0.ffn_up.weight", meta(), with_weights(wrong_shape), None

    def f16_norm(w):
        w["blk.0.attn_norm.weight"] = np.ones(EMBD, np.float16)
    yield "norm_not_f32", "reject", "blk.0.attn_norm.weight", meta(), with_weights(f16_norm), None

    def f16_rope_freqs(w):
        w["rope_freqs.weight"] = np.ones((EMBD // HEADS) // 2, np.float16)
    yield "rope_freqs_f16", "reject", "rope_freqs.weight", meta(), with_weights(f16_rope_freqs), None

    def stray(w):
        w["blk.7.attn_q.weight"] = np.zeros((EMBD, EMBD), np.float16)
    yield "stray_tensor", "reject", "blk.7.attn_q.weight", meta(), with_weights(stray), None


def main():
    out_dir, vocab_path = Path(sys.argv[1]), sys.argv[2]
    out_dir.mkdir(parents=True, exist_ok=True)
    vocab = read_vocab(vocab_path)
    manifest = []
    for name, expect, names, metadata, weights, token_count in cases(len(vocab[0])):
        path = out_dir / f"{name}.gguf"
        write(path, vocab, metadata, weights(), token_count)
        manifest.append({"file": path.name, "expect": expect, "names": names})
    (out_dir / "manifest.json").write_text(json.dumps(manifest, indent=1))


if __name__ == "__main__":
    main()
