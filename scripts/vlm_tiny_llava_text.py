#!/usr/bin/env python3
"""The tiny LLaVA's language model as a GGUF (general.architecture "llama"), written from fixed
seeds with gguf-py and numpy only, so CI rebuilds it without torch; the projector beside it is
vlm_tiny_mmproj.py's "llava" file (its features are the 96 values this model embeds).

llama.cpp's converter cannot write it (the tiny transformers model has no tokenizer it knows), so
this writes what it would: the vocabulary, merges and special tokens of the default model
(SmolLM2-135M-Instruct, copied from its GGUF) plus one control token "<image>" (id 49152, the
image_token_index of the transformers config), a ChatML chat template that writes "<image>" for
an image part, and random weights in the layout convert_hf_to_gguf.py gives a Llama (query and
key rows reordered for llama.cpp's rotary pairs). f16 matrices are drawn on f16's grid, so the
transformers model (make_vlm_logits_golden.py) and this file hold the same numbers.

  python scripts/vlm_tiny_llava_text.py OUT_DIR [VOCAB_GGUF]
"""
import hashlib
import json
import os
import sys
import tempfile
from pathlib import Path

import gguf
import numpy as np

REPO = Path(__file__).resolve().parent.parent
GOLDEN = REPO / "tests" / "golden" / "vision" / "llava_logits.json"
DEFAULT_VOCAB = Path.home() / ".cache" / "lumen" / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"

TEXT = {
    "seed": 54, "hidden_size": 96, "intermediate_size": 192, "num_hidden_layers": 2, "num_attention_heads": 4,
    "num_key_value_heads": 2, "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "max_position_embeddings": 512,
    "base_vocab_size": 49152, "image_token": "<image>",
}
VOCAB_SIZE = TEXT["base_vocab_size"] + 1
IMAGE_TOKEN_ID = TEXT["base_vocab_size"]
CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for part in message['content'] %}"
    "{% if part['type'] == 'image' %}<image>{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}"
    "{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


def text_weights(spec: dict = TEXT, vocab_size: int = VOCAB_SIZE) -> dict:
    """The language model's state dict in LlamaForCausalLM's names (lm_head untied)."""
    rng = np.random.RandomState(spec["seed"])
    h, f = spec["hidden_size"], spec["intermediate_size"]
    kv = h // spec["num_attention_heads"] * spec["num_key_value_heads"]

    def f16(*shape, scale):
        return (rng.standard_normal(shape) * scale).astype(np.float16).astype(np.float32)

    def norm(n):
        return (1.0 + rng.standard_normal(n) * 0.1).astype(np.float32)

    w = {"model.embed_tokens.weight": f16(vocab_size, h, scale=0.5)}
    for i in range(spec["num_hidden_layers"]):
        pre = f"model.layers.{i}."
        w[pre + "input_layernorm.weight"] = norm(h)
        w[pre + "self_attn.q_proj.weight"] = f16(h, h, scale=0.15)
        w[pre + "self_attn.k_proj.weight"] = f16(kv, h, scale=0.15)
        w[pre + "self_attn.v_proj.weight"] = f16(kv, h, scale=0.15)
        w[pre + "self_attn.o_proj.weight"] = f16(h, h, scale=0.1)
        w[pre + "post_attention_layernorm.weight"] = norm(h)
        w[pre + "mlp.gate_proj.weight"] = f16(f, h, scale=0.15)
        w[pre + "mlp.up_proj.weight"] = f16(f, h, scale=0.15)
        w[pre + "mlp.down_proj.weight"] = f16(h, f, scale=0.1)
    w["model.norm.weight"] = norm(h)
    w["lm_head.weight"] = f16(vocab_size, h, scale=0.3)
    return w


def rotary_pairs(rows: np.ndarray, n_head: int) -> np.ndarray:
    """transformers rotates the two halves of each head (dims i and i + d/2 form a pair);
    llama.cpp's "llama" rotary rotates neighbours (2i, 2i + 1): the rows of each head are
    interleaved from the two halves so both compute the same attention."""
    d = rows.shape[0] // n_head
    order = np.stack([np.arange(d // 2), np.arange(d // 2) + d // 2], axis=1).reshape(-1)
    return np.concatenate([rows[hd * d + order] for hd in range(n_head)])


def gguf_name(name: str) -> str:
    fixed = {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight",
             "lm_head.weight": "output.weight"}
    if name in fixed:
        return fixed[name]
    _, _, layer, rest = name.split(".", 3)
    for old, new in (("input_layernorm", "attn_norm"), ("self_attn.q_proj", "attn_q"), ("self_attn.k_proj", "attn_k"),
                     ("self_attn.v_proj", "attn_v"), ("self_attn.o_proj", "attn_output"),
                     ("post_attention_layernorm", "ffn_norm"), ("mlp.gate_proj", "ffn_gate"),
                     ("mlp.up_proj", "ffn_up"), ("mlp.down_proj", "ffn_down")):
        rest = rest.replace(old, new)
    return f"blk.{layer}.{rest}"


def vocabulary(vocab_gguf: Path, added: tuple = (TEXT["image_token"],)) -> tuple:
    """(tokens, token types, merges, bos, eos, unk, pad) of the vocabulary file, the control
    tokens `added` ("<image>" for LLaVA) appended."""
    r = gguf.GGUFReader(str(vocab_gguf))

    def strings(key):
        f = r.fields[key]
        return [bytes(f.parts[i]).decode("utf-8") for i in f.data]

    def scalar(key):
        return int(r.fields[key].contents())

    tokens = strings("tokenizer.ggml.tokens")
    types = [int(r.fields["tokenizer.ggml.token_type"].parts[i][0]) for i in r.fields["tokenizer.ggml.token_type"].data]
    if len(tokens) != TEXT["base_vocab_size"]:
        raise SystemExit(f"{vocab_gguf}: {len(tokens)} tokens, expected {TEXT['base_vocab_size']}")
    tokens += list(added)
    types += [int(gguf.TokenType.CONTROL)] * len(added)
    ids = [scalar(f"tokenizer.ggml.{k}_token_id") for k in ("bos", "eos", "unknown", "padding")]
    return tokens, types, strings("tokenizer.ggml.merges"), ids


def write_text_model(path: Path, vocab_gguf: Path, spec: dict = TEXT, added: tuple = (TEXT["image_token"],),
                     name: str = "tiny-llava-text") -> None:
    """The model of `spec` (TEXT, or another size of the same layout: bench/compare_vlm_ttft.py's,
    vlm_tiny_idefics3_text.py's) with the control tokens `added` after the vocabulary's."""
    tokens, types, merges, (bos, eos, unk, pad) = vocabulary(vocab_gguf, added)
    t = spec
    out = gguf.GGUFWriter(str(path), arch="llama")
    out.add_name(name)
    out.add_file_type(1)
    out.add_context_length(t["max_position_embeddings"])
    out.add_embedding_length(t["hidden_size"])
    out.add_block_count(t["num_hidden_layers"])
    out.add_feed_forward_length(t["intermediate_size"])
    out.add_head_count(t["num_attention_heads"])
    out.add_head_count_kv(t["num_key_value_heads"])
    out.add_rope_freq_base(t["rope_theta"])
    out.add_layer_norm_rms_eps(t["rms_norm_eps"])
    out.add_rope_dimension_count(t["hidden_size"] // t["num_attention_heads"])
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
    for tensor, data in text_weights(spec, len(tokens)).items():
        if tensor.endswith(("q_proj.weight", "k_proj.weight")):
            heads = t["num_attention_heads"] if "q_proj" in tensor else t["num_key_value_heads"]
            data = rotary_pairs(data, heads)
        out.add_tensor(gguf_name(tensor), data.astype(np.float16 if data.ndim == 2 else np.float32))
    out.write_header_to_file()
    out.write_kv_data_to_file()
    out.write_tensors_to_file()
    out.close()


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def golden_text_model(folder: Path, vocab_gguf: Path = DEFAULT_VOCAB, golden: Path = GOLDEN,
                      file_name: str = "vlm-llava.text.gguf", write=None,
                      golden_script: str = "scripts/make_vlm_logits_golden.py") -> Path:
    """The text model for the tests, written into folder (by `write(path, vocab_gguf)`; this
    file's LLaVA model by default) and held to the golden's sha256."""
    write = write or write_text_model
    want = json.loads(golden.read_text(encoding="utf-8"))["text_gguf_sha256"]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / file_name
    if path.exists() and sha256(path) == want:
        return path
    fd, tmp = tempfile.mkstemp(dir=folder, prefix="." + file_name, suffix=".gguf")
    os.close(fd)
    write(Path(tmp), vocab_gguf)
    got = sha256(Path(tmp))
    if got != want:
        os.unlink(tmp)
        raise SystemExit(f"{file_name} has sha256 {got}, but {golden.relative_to(REPO)} was made from {want}: "
                         f"the generator, the vocabulary file or gguf/numpy changed; rerun {golden_script}")
    os.replace(tmp, path)
    return path


def main() -> None:
    if len(sys.argv) not in (2, 3):
        raise SystemExit("usage: vlm_tiny_llava_text.py OUT_DIR [VOCAB_GGUF]")
    vocab = Path(sys.argv[2]) if len(sys.argv) == 3 else DEFAULT_VOCAB
    if not vocab.exists():
        print(f"{vocab} is missing (scripts/fetch_models.py fetches it): no text model written")
        return
    print(golden_text_model(Path(sys.argv[1]), vocab))


if __name__ == "__main__":
    main()
