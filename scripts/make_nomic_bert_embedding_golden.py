#!/usr/bin/env python3
"""Writes tests/golden/embeddings/tiny_nomic_bert.json: mean-pooled, L2-normalised vectors for a
few texts from tiny_nomic_bert's weights (scripts/make_tiny_embedding_models.py; the architecture
of nomic-embed-text v1/v1.5), beside the GGUF's sha256.

Transformers has no NomicBert class (the model ships its modeling code on the Hub, which cannot be
reached here), so the reference forward pass is written below in torch from that model's
definition: token and token-type embeddings, LayerNorm (emb_ln); per layer, fused Wqkv, rotary
embeddings on q and k (non-interleaved halves, base rotary_emb_base), bidirectional softmax
attention, out_proj, residual then norm1; the gated MLP fc11(x) * silu(fc12(x)) through fc2,
residual then norm2 (post-norm, no biases). Its tokenizer is the BERT golden's WordPiece
vocabulary (BertTokenizerFast).

Needs torch, transformers and safetensors (CPU); CI only reads the output. With a llama.cpp
checkout, also checks that its convert_hf_to_gguf.py writes the same file from the checkpoint in
the Hub layout (config.json keys and tensor names as nomic-ai/nomic-embed-text-v1.5 has them):
python scripts/make_nomic_bert_embedding_golden.py [LLAMA_CPP_DIR]
"""
import json
import sys
import tempfile
from pathlib import Path

import torch
from safetensors.torch import save_file

from embedding_golden_common import TEXTS, check_against_converter, save_sentence_transformers_mean_pooling, \
    tiny, write_golden
from make_bert_embedding_golden import tokenizer

HIDDEN, LAYERS, HEADS = tiny.HIDDEN, tiny.LAYERS, tiny.HEADS
INNER, BASE, EPS = tiny.NOMIC["ffn"], tiny.NOMIC["rope_base"], tiny.NOMIC["eps"]


def rotate(x: torch.Tensor) -> torch.Tensor:
    """Rotary embedding, GPT-NeoX style (nomic's rotary_emb_interleaved False): pair i with i + d/2."""
    n, _, d = x.shape
    inv = 1.0 / (BASE ** (torch.arange(0, d, 2, dtype=torch.float64) / d))
    angles = torch.arange(n, dtype=torch.float64)[:, None] * inv[None, :]
    cos, sin = torch.cat([angles.cos()] * 2, -1)[:, None, :], torch.cat([angles.sin()] * 2, -1)[:, None, :]
    half = torch.cat([-x[..., d // 2:], x[..., :d // 2]], -1)
    return x * cos + half * sin


def nomic_forward(w: dict, ids: list) -> torch.Tensor:
    w = {k: v.double() for k, v in w.items()}
    ln = lambda x, name: torch.nn.functional.layer_norm(x, (HIDDEN,), w[name + ".weight"], w[name + ".bias"], EPS)  # noqa: E731
    x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.token_type_embeddings.weight"][0]
    x = ln(x, "emb_ln")
    n, d = len(ids), HIDDEN // HEADS
    for i in range(LAYERS):
        p = f"encoder.layers.{i}."
        q, k, v = (x @ w[p + "attn.Wqkv.weight"].T).split(HIDDEN, dim=-1)
        q, k, v = (t.reshape(n, HEADS, d) for t in (q, k, v))
        q, k = rotate(q), rotate(k)
        scores = torch.einsum("qhd,khd->hqk", q, k) / d ** 0.5
        attn = torch.einsum("hqk,khd->qhd", scores.softmax(-1), v).reshape(n, HIDDEN)
        x = ln(x + attn @ w[p + "attn.out_proj.weight"].T, p + "norm1")
        gated = (x @ w[p + "mlp.fc11.weight"].T) * torch.nn.functional.silu(x @ w[p + "mlp.fc12.weight"].T)
        x = ln(x + gated @ w[p + "mlp.fc2.weight"].T, p + "norm2")
    return x


def save_hub_checkpoint(weights: dict, model_dir: Path) -> None:
    tokenizer().save_pretrained(model_dir)
    save_file(weights, str(model_dir / "model.safetensors"), metadata={"format": "pt"})
    (model_dir / "config.json").write_text(json.dumps({
        "architectures": ["NomicBertModel"], "model_type": "nomic_bert", "vocab_size": len(tiny.WORDPIECE),
        "n_embd": HIDDEN, "n_layer": LAYERS, "n_head": HEADS, "n_inner": INNER, "n_positions": 8192,
        "max_trained_positions": tiny.NOMIC["positions"], "type_vocab_size": 2, "layer_norm_epsilon": EPS,
        "rotary_emb_base": BASE, "rotary_emb_fraction": 1.0, "rotary_emb_interleaved": False,
        "rotary_emb_scale_base": None, "activation_function": "swiglu", "causal": False, "prenorm": False,
        "qkv_proj_bias": False, "mlp_fc1_bias": False, "mlp_fc2_bias": False, "torch_dtype": "float32",
        # The converter reads the sizes under BERT's names first, and fills those in from
        # BertConfig's defaults (768 wide, 12 layers) when a config lacks them.
        "hidden_size": HIDDEN, "num_hidden_layers": LAYERS, "num_attention_heads": HEADS,
        "intermediate_size": INNER}))
    save_sentence_transformers_mean_pooling(model_dir)


def main() -> None:
    weights = {k: torch.from_numpy(v) for k, v in tiny.hf_weights("tiny_nomic_bert").items()}
    if len(sys.argv) > 1:
        with tempfile.TemporaryDirectory() as tmp:
            save_hub_checkpoint(weights, Path(tmp))
            check_against_converter("tiny_nomic_bert", Path(tmp), Path(sys.argv[1]), "default")
    tok = tokenizer()
    cases = []
    for text in TEXTS:
        ids = tok(text)["input_ids"]
        with torch.no_grad():
            pooled = nomic_forward(weights, ids).mean(dim=0)
        cases.append({"text": text, "ids": ids, "embedding": (pooled / pooled.norm()).tolist()})
    write_golden("tiny_nomic_bert", "a torch nomic-bert forward pass (scripts/make_nomic_bert_embedding_golden.py) "
                 "on tiny_nomic_bert's weights (scripts/make_tiny_embedding_models.py): mean pooling, L2-normalised",
                 cases)


if __name__ == "__main__":
    main()
