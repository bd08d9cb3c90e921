#!/usr/bin/env python3
"""Writes small, well-formed GGUF model files whose hyperparameters or tensors are hostile, each
derived from one tiny valid llama model (2 layers, width 32, the llama-spm test vocabulary) or one
tiny valid Mamba 2 model (the same width and vocabulary, state-space layers), for the tests that
run them through `lumen run` and `lumen serve`. Pure data: random weights.

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
    w = GGUFWriter(str(path), next(iter(metadata)).split(".")[0])  # the architecture its keys name
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


# The Mamba 2 model: inner width 64 in 4 heads of 16, 2 groups of B and C, state 16, kernel 4.
SSM_INNER, SSM_HEADS, SSM_GROUPS, SSM_STATE, SSM_KERNEL = 64, 4, 2, 16, 4


def mamba2_tensors(vocab, inner=SSM_INNER, heads=SSM_HEADS, groups=SSM_GROUPS, state=SSM_STATE):
    """Shaped as llama.cpp's converter writes Mamba 2 (numpy order: the GGUF dimensions reversed)."""
    rng = np.random.default_rng(0)
    channels = inner + 2 * groups * state
    out = {"token_embd.weight": rng.standard_normal((vocab, EMBD)).astype(np.float16),
           "output_norm.weight": np.ones(EMBD, np.float32)}
    for i in range(LAYERS):
        p = f"blk.{i}."
        out[p + "attn_norm.weight"] = np.ones(EMBD, np.float32)
        out[p + "ssm_in.weight"] = rng.standard_normal((inner + channels + heads, EMBD)).astype(np.float16)
        out[p + "ssm_conv1d.weight"] = rng.standard_normal((channels, SSM_KERNEL)).astype(np.float32)
        out[p + "ssm_conv1d.bias"] = np.zeros(channels, np.float32)
        out[p + "ssm_dt.bias"] = np.zeros(heads, np.float32)
        out[p + "ssm_a"] = -np.arange(1, heads + 1, dtype=np.float32).reshape(heads, 1)
        out[p + "ssm_d"] = np.ones((heads, 1), np.float32)
        out[p + "ssm_norm.weight"] = np.ones((groups, inner // groups), np.float32)
        out[p + "ssm_out.weight"] = rng.standard_normal((EMBD, inner)).astype(np.float16)
    return out


def mamba2_metadata(**changes):
    """No attention (head_count 0) and no FFN, as the converter writes a pure Mamba 2 file."""
    m = {"mamba2.context_length": ("u32", CONTEXT), "mamba2.embedding_length": ("u32", EMBD),
         "mamba2.block_count": ("u32", LAYERS), "mamba2.feed_forward_length": ("u32", 0),
         "mamba2.attention.head_count": ("u32", 0), "mamba2.attention.layer_norm_rms_epsilon": ("f32", 1e-5),
         "mamba2.ssm.conv_kernel": ("u32", SSM_KERNEL), "mamba2.ssm.inner_size": ("u32", SSM_INNER),
         "mamba2.ssm.state_size": ("u32", SSM_STATE), "mamba2.ssm.time_step_rank": ("u32", SSM_HEADS),
         "mamba2.ssm.group_count": ("u32", SSM_GROUPS)}
    for key, value in changes.items():
        if value is None:
            del m["mamba2." + key.replace("__", ".")]
        else:
            m["mamba2." + key.replace("__", ".")] = value
    return m


def mamba2_cases(vocab_size):
    """State-space keys a file may get wrong: each names the key (or the tensor whose shape the
    keys contradict). A state sized from huge keys would be allocated per sequence."""
    plain = lambda: mamba2_tensors(vocab_size)
    meta = mamba2_metadata
    yield "ok_tiny_mamba2", "accept", "", meta(), plain, None
    yield "ssm_state_zero", "reject", "mamba2.ssm.state_size", meta(ssm__state_size=("u32", 0)), plain, None
    yield "ssm_state_huge", "reject", "mamba2.ssm.state_size", meta(ssm__state_size=("u32", 1 << 30)), plain, None
    yield "ssm_conv_kernel_huge", "reject", "mamba2.ssm.conv_kernel", meta(ssm__conv_kernel=("u32", 1 << 20)), plain, None
    yield "ssm_conv_kernel_one", "reject", "mamba2.ssm.conv_kernel", meta(ssm__conv_kernel=("u32", 1)), plain, None
    yield "ssm_inner_huge", "reject", "mamba2.ssm.inner_size", meta(ssm__inner_size=("u32", 1 << 31)), plain, None
    yield "ssm_inner_missing", "reject", "mamba2.ssm.inner_size", meta(ssm__inner_size=None), plain, None
    yield "ssm_groups_not_dividing_heads", "reject", "mamba2.ssm.group_count", meta(ssm__group_count=("u32", 3)), plain, None
    yield "ssm_groups_zero", "reject", "mamba2.ssm.group_count", meta(ssm__group_count=("u32", 0)), plain, None
    yield "ssm_heads_zero", "reject", "mamba2.ssm.time_step_rank", meta(ssm__time_step_rank=("u32", 0)), plain, None
    yield "ssm_heads_not_dividing_inner", "reject", "mamba2.ssm.time_step_rank", meta(ssm__time_step_rank=("u32", 6), ssm__group_count=("u32", 1)), plain, None
    # Keys that are consistent with each other but not with the tensors: the first tensor whose
    # shape they contradict is named.
    yield "ssm_inner_vs_tensors", "reject", "blk.0.ssm_in.weight", meta(ssm__inner_size=("u32", 2 * SSM_INNER)), plain, None
    yield "ssm_heads_vs_tensors", "reject", "blk.0.ssm_in.weight", meta(ssm__time_step_rank=("u32", 8)), plain, None
    yield "ssm_state_vs_tensors", "reject", "blk.0.ssm_in.weight", meta(ssm__state_size=("u32", 2 * SSM_STATE)), plain, None

    def f16_decay():
        w = plain()
        w["blk.1.ssm_a"] = -np.ones((SSM_HEADS, 1), np.float16)
        return w
    yield "ssm_a_not_f32", "reject", "blk.1.ssm_a", meta(), f16_decay, None


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

    ssm_keys = {"ssm__conv_kernel": ("u32", 4), "ssm__inner_size": ("u32", 64), "ssm__state_size": ("u32", 16),
                "ssm__time_step_rank": ("u32", 4), "ssm__group_count": ("u32", 1)}
    yield "llama_with_ssm_keys", "reject", "llama.ssm.inner_size", meta(**ssm_keys), plain, None

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
    all_cases = list(cases(len(vocab[0]))) + list(mamba2_cases(len(vocab[0])))
    for name, expect, names, metadata, weights, token_count in all_cases:
        path = out_dir / f"{name}.gguf"
        write(path, vocab, metadata, weights(), token_count)
        manifest.append({"file": path.name, "expect": expect, "names": names})
    (out_dir / "manifest.json").write_text(json.dumps(manifest, indent=1))


if __name__ == "__main__":
    main()
