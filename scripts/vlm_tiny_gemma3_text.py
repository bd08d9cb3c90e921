#!/usr/bin/env python3
"""The tiny Gemma 3's language model as a GGUF (general.architecture "gemma3"), written from fixed
seeds with gguf-py and numpy only, so CI rebuilds it without torch; the projector beside it is
vlm_tiny_mmproj.py's "gemma3" file (its features are the 96 values this model embeds).

What convert_hf_to_gguf.py writes for a Gemma 3 text model, at a tiny size: QK-norm, the norms
after attention and FFN, GeGLU, NeoX rope (no row reordering), every norm weight stored as
1 + w (Gemma's RMS norm multiplies by 1 + w; the converter folds the 1 in), the output head tied
to the embeddings. Two layers, both local (a sliding window of 512, longer than the prompts;
rope base 10 000), as Gemma 3's pattern of five local layers to one global makes its first two.
The vocabulary is the default model's (gemma3 files hold Gemma's own; the tokenizer is not what
is tested here) plus the control tokens Gemma3Processor writes: "<start_of_image>",
"<end_of_image>", "<image_soft_token>". Matrices are drawn on f16's grid, so the transformers
model (make_vlm_gemma3_logits_golden.py) and this file hold the same numbers.

  python scripts/vlm_tiny_gemma3_text.py OUT_DIR [VOCAB_GGUF]
"""
import sys
from pathlib import Path

import gguf
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import vlm_tiny_llava_text as llava_text  # noqa: E402

REPO = llava_text.REPO
GOLDEN = REPO / "tests" / "golden" / "vision" / "gemma3_logits.json"
FILE_NAME = "vlm-gemma3.text.gguf"
TEXT = {
    "seed": 56, "hidden_size": 96, "intermediate_size": 192, "num_hidden_layers": 2, "num_attention_heads": 4,
    "num_key_value_heads": 2, "head_dim": 32, "rms_norm_eps": 1e-6, "rope_theta": 1000000.0,
    "rope_local_base_freq": 10000.0, "sliding_window": 512, "max_position_embeddings": 512,
    "base_vocab_size": 49152,
}
ADDED = ("<start_of_image>", "<end_of_image>", "<image_soft_token>")
TOKEN_IDS = {t: TEXT["base_vocab_size"] + i for i, t in enumerate(ADDED)}
VOCAB_SIZE = TEXT["base_vocab_size"] + len(ADDED)
CHAT_TEMPLATE = (
    "{% for message in messages %}<start_of_turn>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for part in message['content'] %}"
    "{% if part['type'] == 'image' %}<start_of_image>{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}"
    "{% endfor %}{% endif %}<end_of_turn>\n{% endfor %}"
    "{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}")


def text_weights() -> dict:
    """Gemma3ForCausalLM's state dict (model.*), norms as transformers holds them (w, used as 1 + w)."""
    t = TEXT
    rng = np.random.RandomState(t["seed"])
    h, f, d = t["hidden_size"], t["intermediate_size"], t["head_dim"]
    q, kv = d * t["num_attention_heads"], d * t["num_key_value_heads"]

    def f16(*shape, scale):
        return (rng.standard_normal(shape) * scale).astype(np.float16).astype(np.float32)

    def norm(n):
        return (rng.standard_normal(n) * 0.1).astype(np.float32)

    w = {"model.embed_tokens.weight": f16(VOCAB_SIZE, h, scale=0.05)}
    for i in range(t["num_hidden_layers"]):
        pre = f"model.layers.{i}."
        w[pre + "input_layernorm.weight"] = norm(h)
        w[pre + "self_attn.q_proj.weight"] = f16(q, h, scale=0.15)
        w[pre + "self_attn.k_proj.weight"] = f16(kv, h, scale=0.15)
        w[pre + "self_attn.v_proj.weight"] = f16(kv, h, scale=0.15)
        w[pre + "self_attn.q_norm.weight"] = norm(d)
        w[pre + "self_attn.k_norm.weight"] = norm(d)
        w[pre + "self_attn.o_proj.weight"] = f16(h, q, scale=0.1)
        w[pre + "post_attention_layernorm.weight"] = norm(h)
        w[pre + "pre_feedforward_layernorm.weight"] = norm(h)
        w[pre + "mlp.gate_proj.weight"] = f16(f, h, scale=0.15)
        w[pre + "mlp.up_proj.weight"] = f16(f, h, scale=0.15)
        w[pre + "mlp.down_proj.weight"] = f16(h, f, scale=0.1)
        w[pre + "post_feedforward_layernorm.weight"] = norm(h)
    w["model.norm.weight"] = norm(h)
    return w


def gguf_name(name: str) -> str:
    fixed = {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight"}
    if name in fixed:
        return fixed[name]
    _, _, layer, rest = name.split(".", 3)
    for old, new in (("post_attention_layernorm", "post_attention_norm"), ("pre_feedforward_layernorm", "ffn_norm"),
                     ("post_feedforward_layernorm", "post_ffw_norm"), ("input_layernorm", "attn_norm"),
                     ("self_attn.q_norm", "attn_q_norm"), ("self_attn.k_norm", "attn_k_norm"),
                     ("self_attn.q_proj", "attn_q"), ("self_attn.k_proj", "attn_k"), ("self_attn.v_proj", "attn_v"),
                     ("self_attn.o_proj", "attn_output"), ("mlp.gate_proj", "ffn_gate"), ("mlp.up_proj", "ffn_up"),
                     ("mlp.down_proj", "ffn_down")):
        rest = rest.replace(old, new)
    return f"blk.{layer}.{rest}"


def write_text_model(path: Path, vocab_gguf: Path) -> None:
    tokens, types, merges, (bos, eos, unk, pad) = llava_text.vocabulary(vocab_gguf, ADDED)
    t = TEXT
    out = gguf.GGUFWriter(str(path), arch="gemma3")
    out.add_name("tiny-gemma3-text")
    out.add_file_type(1)
    out.add_context_length(t["max_position_embeddings"])
    out.add_embedding_length(t["hidden_size"])
    out.add_block_count(t["num_hidden_layers"])
    out.add_feed_forward_length(t["intermediate_size"])
    out.add_head_count(t["num_attention_heads"])
    out.add_head_count_kv(t["num_key_value_heads"])
    out.add_key_length(t["head_dim"])
    out.add_value_length(t["head_dim"])
    out.add_rope_freq_base(t["rope_theta"])
    out.add_layer_norm_rms_eps(t["rms_norm_eps"])
    out.add_sliding_window(t["sliding_window"])
    out.add_vocab_size(len(tokens))
    out.add_tokenizer_model("gpt2")
    out.add_tokenizer_pre("smollm")
    out.add_token_list(tokens)
    out.add_token_types(types)
    out.add_token_merges(merges)
    out.add_bos_token_id(bos)
    out.add_eos_token_id(eos)
    out.add_unk_token_id(unk)
    out.add_pad_token_id(pad)
    out.add_add_bos_token(False)
    out.add_add_space_prefix(False)
    out.add_chat_template(CHAT_TEMPLATE)
    for name, data in text_weights().items():
        if data.ndim == 1:
            out.add_tensor(gguf_name(name), (1.0 + data).astype(np.float32))  # the converter's 1 + w
        else:
            out.add_tensor(gguf_name(name), data.astype(np.float16))
    out.write_header_to_file()
    out.write_kv_data_to_file()
    out.write_tensors_to_file()
    out.close()


def golden_text_model(folder: Path, vocab_gguf: Path = llava_text.DEFAULT_VOCAB) -> Path:
    return llava_text.golden_text_model(folder, vocab_gguf, GOLDEN, FILE_NAME, write_text_model,
                                        "scripts/make_vlm_gemma3_logits_golden.py")


def main() -> None:
    if len(sys.argv) not in (2, 3):
        raise SystemExit("usage: vlm_tiny_gemma3_text.py OUT_DIR [VOCAB_GGUF]")
    vocab = Path(sys.argv[2]) if len(sys.argv) == 3 else llava_text.DEFAULT_VOCAB
    if not vocab.exists():
        print(f"{vocab} is missing (scripts/fetch_models.py fetches it): no text model written")
        return
    print(golden_text_model(Path(sys.argv[1]), vocab))


if __name__ == "__main__":
    main()
