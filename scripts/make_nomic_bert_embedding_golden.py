#!/usr/bin/env python3
"""Writes tests/golden/embeddings/tiny_nomic_bert.{gguf,json}: a tiny random nomic-bert (the
architecture of nomic-embed-text v1/v1.5: hidden 64, 2 layers, 4 heads), converted to GGUF (F32) by
llama.cpp's convert_hf_to_gguf.py, with mean-pooled, L2-normalised vectors for a few texts.

Transformers has no NomicBert class (the model ships its modeling code on the Hub, which cannot be
reached here), so the checkpoint is written in its Hugging Face layout by hand (config.json keys
and tensor names as nomic-ai/nomic-embed-text-v1.5 has them) and the reference forward pass is
written below in torch from that model's definition: token and token-type embeddings, LayerNorm
(emb_ln); per layer, fused Wqkv, rotary embeddings on q and k (non-interleaved halves, base
rotary_emb_base), bidirectional softmax attention, out_proj, residual then norm1; the gated MLP
fc11(x) * silu(fc12(x)) through fc2, residual then norm2 (post-norm, no biases). Its tokenizer is
the BERT golden's WordPiece vocabulary (BertTokenizerFast).

Needs torch, transformers and safetensors (CPU) and a llama.cpp checkout:
python scripts/make_nomic_bert_embedding_golden.py LLAMA_CPP_DIR [OUT_DIR]. CI only reads the output.
"""
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import torch
from safetensors.torch import save_file
from transformers import BertTokenizerFast

sys.path.insert(0, str(Path(__file__).parent))
from make_bert_embedding_golden import TEXTS, VOCAB  # noqa: E402

HIDDEN, LAYERS, HEADS, INNER, BASE, EPS = 64, 2, 4, 96, 1000.0, 1e-12


def random_weights() -> dict:
    torch.manual_seed(1049)
    w = {"embeddings.word_embeddings.weight": torch.randn(len(VOCAB), HIDDEN) * 0.5,
         "embeddings.token_type_embeddings.weight": torch.randn(2, HIDDEN) * 0.5,
         "emb_ln.weight": 1 + 0.1 * torch.randn(HIDDEN), "emb_ln.bias": 0.1 * torch.randn(HIDDEN)}
    for i in range(LAYERS):
        p = f"encoder.layers.{i}."
        w[p + "attn.Wqkv.weight"] = torch.randn(3 * HIDDEN, HIDDEN) * 0.25
        w[p + "attn.out_proj.weight"] = torch.randn(HIDDEN, HIDDEN) * 0.15
        w[p + "mlp.fc11.weight"] = torch.randn(INNER, HIDDEN) * 0.15
        w[p + "mlp.fc12.weight"] = torch.randn(INNER, HIDDEN) * 0.15
        w[p + "mlp.fc2.weight"] = torch.randn(HIDDEN, INNER) * 0.15
        for norm in ("norm1", "norm2"):
            w[p + norm + ".weight"] = 1 + 0.1 * torch.randn(HIDDEN)
            w[p + norm + ".bias"] = 0.1 * torch.randn(HIDDEN)
    return {k: v.contiguous() for k, v in w.items()}


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


def main() -> None:
    llama_cpp = Path(sys.argv[1])
    out = Path(sys.argv[2] if len(sys.argv) > 2 else Path(__file__).parent.parent / "tests/golden/embeddings")
    out.mkdir(parents=True, exist_ok=True)
    weights = random_weights()
    tokenizer = BertTokenizerFast(vocab={token: i for i, token in enumerate(VOCAB)}, do_lower_case=True)
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = Path(tmp) / "tiny-nomic-bert"
        tokenizer.save_pretrained(model_dir)
        save_file(weights, str(model_dir / "model.safetensors"), metadata={"format": "pt"})
        (model_dir / "config.json").write_text(json.dumps({
            "architectures": ["NomicBertModel"], "model_type": "nomic_bert", "vocab_size": len(VOCAB),
            "n_embd": HIDDEN, "n_layer": LAYERS, "n_head": HEADS, "n_inner": INNER, "n_positions": 8192,
            "max_trained_positions": 2048, "type_vocab_size": 2, "layer_norm_epsilon": EPS,
            "rotary_emb_base": BASE, "rotary_emb_fraction": 1.0, "rotary_emb_interleaved": False,
            "rotary_emb_scale_base": None, "activation_function": "swiglu", "causal": False, "prenorm": False,
            "qkv_proj_bias": False, "mlp_fc1_bias": False, "mlp_fc2_bias": False, "torch_dtype": "float32",
            # The converter reads the sizes under BERT's names first, and fills those in from
            # BertConfig's defaults (768 wide, 12 layers) when a config lacks them.
            "hidden_size": HIDDEN, "num_hidden_layers": LAYERS, "num_attention_heads": HEADS,
            "intermediate_size": INNER}))
        (model_dir / "modules.json").write_text(json.dumps(
            [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
             {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]))
        (model_dir / "1_Pooling").mkdir()
        (model_dir / "1_Pooling/config.json").write_text(json.dumps({"pooling_mode_mean_tokens": True}))
        gguf_path = out / "tiny_nomic_bert.gguf"
        wrapper = ("import sys, runpy; sys.path.insert(0, sys.argv[1]); sys.argv = sys.argv[1:];"
                   "import conversion.base as b; b.TextModel.get_vocab_base_pre = lambda self, t: 'default';"
                   "runpy.run_path(sys.argv[0] + '/convert_hf_to_gguf.py', run_name='__main__')")
        subprocess.run([sys.executable, "-c", wrapper, str(llama_cpp), str(model_dir), "--outtype", "f32",
                        "--outfile", str(gguf_path)], check=True)
    cases = []
    for text in TEXTS:
        ids = tokenizer(text)["input_ids"]
        with torch.no_grad():
            pooled = nomic_forward(weights, ids).mean(dim=0)
        cases.append({"text": text, "ids": ids, "embedding": (pooled / pooled.norm()).tolist()})
    (out / "tiny_nomic_bert.json").write_text(json.dumps(
        {"about": "a torch nomic-bert forward pass (scripts/make_nomic_bert_embedding_golden.py) on "
                  "tiny_nomic_bert.gguf's weights: mean pooling, L2-normalised",
         "cases": cases}, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {gguf_path} ({gguf_path.stat().st_size} bytes) and tiny_nomic_bert.json")


if __name__ == "__main__":
    main()
