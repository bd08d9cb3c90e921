#!/usr/bin/env python3
"""Checks Lumen's qwen3, gemma2, phi3, smollm3, granite and gpt-oss forward passes on models that llama.cpp's converter writes from
tiny random transformers models, against transformers (CPU torch, f32, eager attention) and
llama.cpp (llama-cpp-python), on one prompt of fixed random token ids longer than a prefill chunk
(and, for Gemma 2, than its sliding window):
  qwen3:  Qwen3ForCausalLM, 4 layers of 64, 4 query heads of 32 on 2 KV heads (a query width
          twice the embedding's), QK-norm, tied embeddings
  gemma2: Gemma2ForCausalLM, 4 layers of 64, 4 query heads of 16 on 2 KV heads, an 8-position
          window on layers 0 and 2, attention and final soft caps of 2 and 3 (low enough to bend
          a random model's scores and logits), query_pre_attn_scalar = head_dim as in 2B and 9B
  phi3:   Phi3ForCausalLM as Phi-4-mini is laid out: 4 layers of 128, 4 query heads of 32 on 2 KV
          heads, 24 of 32 dims rotating, LongRoPE (long and short factor sets, 1024 positions
          stretched to 8192); the prompt and every engine's context stay within the original
          1024, where all three rotate with the short set (transformers switches by the
          sequence's length, llama.cpp and Lumen by their context; the long set is held to
          llama.cpp by the golden)
  smollm3: SmolLM3ForCausalLM, 4 layers of 64, 4 query heads of 16 on 2 KV heads, the fourth
          layer without rope (no_rope_layer_interval 4, as every published SmolLM3)
  granite: GraniteForCausalLM, 4 layers of 64, 4 query heads of 16 on 2 KV heads, Granite 3's
          multipliers (embedding 12, residual 0.246, attention 0.0625, logits divided by 3)
  gpt_oss: GptOssForCausalLM, 4 layers of 64, 4 query heads of 32 on 2 KV heads (a query twice the
          embedding), an 8-position window on layers 0 and 2, gpt-oss's YaRN (x32 from 4096,
          truncate off as its config has it), 8 experts of 64, top 2; every bias, the sinks and
          the router's bias drawn at random (the init leaves them 0)
The golden test (scripts/make_arch_golden.py) compares with llama.cpp on `lumen synth` files; this
is the check that the synthetic files' layout is the converter's and that all three engines
compute the models' own function. Prints JSON as scripts/check_hybrid_transformers.py does, whose
helpers it uses.

Needs what check_hybrid_transformers.py needs (transformers with Qwen3, Gemma 2, Phi-3, SmolLM3 and Granite):
    TORCH_VENV/bin/python scripts/check_arch_transformers.py --llama-cpp LLAMA --llama-python LLAMA_VENV/bin/python [NAME ...]
The model directories have no tokenizer files: the converter is given its built-in GPT-NeoX
vocabulary (padded to the config's size) instead, and the prompt is token ids.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch
from transformers import (Gemma2Config, Gemma2ForCausalLM, GptOssConfig, GptOssForCausalLM, GraniteConfig,
                          GraniteForCausalLM, Phi3Config, Phi3ForCausalLM, Qwen3Config, Qwen3ForCausalLM, SmolLM3Config,
                          SmolLM3ForCausalLM)

sys.path.insert(0, str(Path(__file__).resolve().parent))
import check_hybrid_transformers as hybrid  # noqa: E402

VOCAB = 50280
SEED = 11


def qwen3(directory: Path) -> None:
    config = Qwen3Config(vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=4,
                         num_attention_heads=4, num_key_value_heads=2, head_dim=32, rms_norm_eps=1e-6,
                         rope_theta=1000000.0, max_position_embeddings=2048, tie_word_embeddings=True,
                         initializer_range=0.1, bos_token_id=0, eos_token_id=0, pad_token_id=0)
    save(Qwen3ForCausalLM(config), directory)


def gemma2(directory: Path) -> None:
    config = Gemma2Config(vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=4,
                          num_attention_heads=4, num_key_value_heads=2, head_dim=16, query_pre_attn_scalar=16,
                          sliding_window=8, attn_logit_softcapping=2.0, final_logit_softcapping=3.0,
                          rms_norm_eps=1e-6, rope_theta=10000.0, max_position_embeddings=2048,
                          tie_word_embeddings=True, initializer_range=0.1, hidden_activation="gelu_pytorch_tanh",
                          bos_token_id=0, eos_token_id=0, pad_token_id=0)
    save(Gemma2ForCausalLM(config), directory)


def phi3(directory: Path) -> None:
    pairs = 12  # 0.75 x 32 dims rotate
    short = [1.0 + 0.5 * (i / (pairs - 1)) ** 2 for i in range(pairs)]
    long = [1.0 + 11.0 * (i / (pairs - 1)) ** 2 for i in range(pairs)]
    config = Phi3Config(vocab_size=VOCAB, hidden_size=128, intermediate_size=256, num_hidden_layers=4,
                        num_attention_heads=4, num_key_value_heads=2, rms_norm_eps=1e-5,
                        max_position_embeddings=8192, original_max_position_embeddings=1024,
                        rope_parameters={"rope_type": "longrope", "rope_theta": 10000.0, "partial_rotary_factor": 0.75,
                                         "short_factor": short, "long_factor": long,
                                         "original_max_position_embeddings": 1024},
                        tie_word_embeddings=False, initializer_range=0.1, bos_token_id=0, eos_token_id=0,
                        pad_token_id=0)
    save(Phi3ForCausalLM(config), directory)


def smollm3(directory: Path) -> None:
    # Every layer's queries scaled 4x sharper than the init gives (below): with the init's tiny
    # scores attention is near uniform and whether a layer rotates would barely show.
    config = SmolLM3Config(vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=4,
                           num_attention_heads=4, num_key_value_heads=2, no_rope_layer_interval=4,
                           rms_norm_eps=1e-6, rope_theta=10000.0, max_position_embeddings=2048,
                           tie_word_embeddings=True, initializer_range=0.1, bos_token_id=0, eos_token_id=0,
                           pad_token_id=0)
    model = SmolLM3ForCausalLM(config)
    assert model.config.no_rope_layers == [1, 1, 1, 0], model.config.no_rope_layers
    sharpen_queries(model)
    save(model, directory)


def granite(directory: Path) -> None:
    config = GraniteConfig(vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=4,
                           num_attention_heads=4, num_key_value_heads=2, embedding_multiplier=12.0,
                           residual_multiplier=0.246, attention_multiplier=0.0625, logits_scaling=3.0,
                           rms_norm_eps=1e-5, rope_theta=10000.0, max_position_embeddings=4096,
                           tie_word_embeddings=True, initializer_range=0.1, bos_token_id=0, eos_token_id=0,
                           pad_token_id=0)
    save(GraniteForCausalLM(config), directory)


def gpt_oss(directory: Path) -> None:
    config = GptOssConfig(vocab_size=VOCAB, hidden_size=64, intermediate_size=64, num_hidden_layers=4,
                          num_attention_heads=4, num_key_value_heads=2, head_dim=32, num_local_experts=8,
                          num_experts_per_tok=2, sliding_window=8, rms_norm_eps=1e-5, max_position_embeddings=131072,
                          rope_parameters={"rope_type": "yarn", "rope_theta": 150000.0, "factor": 32.0,
                                           "original_max_position_embeddings": 4096, "beta_fast": 32.0,
                                           "beta_slow": 1.0, "truncate": False},
                          tie_word_embeddings=False, initializer_range=0.1, bos_token_id=0, eos_token_id=0,
                          pad_token_id=0)
    model = GptOssForCausalLM(config)
    assert model.config.layer_types[:2] == ["sliding_attention", "full_attention"], model.config.layer_types
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("bias") or name.endswith("sinks"):
                p.uniform_(-0.5, 0.5) if not name.endswith("sinks") else p.uniform_(-1.0, 2.0)
    sharpen_queries(model)
    save(model, directory)


def sharpen_queries(model) -> None:
    with torch.no_grad():
        for layer in model.model.layers:
            layer.self_attn.q_proj.weight.mul_(4.0)


MODELS = {"qwen3": (qwen3, Qwen3ForCausalLM, "conversion.qwen", "Qwen3Model"),
          "gemma2": (gemma2, Gemma2ForCausalLM, "conversion.gemma", "Gemma2Model"),
          "phi3": (phi3, Phi3ForCausalLM, "conversion.phi", "Phi3MiniModel"),
          "smollm3": (smollm3, SmolLM3ForCausalLM, "conversion.llama", "SmolLM3Model"),
          "granite": (granite, GraniteForCausalLM, "conversion.granite", "GraniteModel"),
          "gpt_oss": (gpt_oss, GptOssForCausalLM, "conversion.gpt_oss", "GptOssModel")}


def save(model, directory: Path) -> None:
    # Trained-looking norm weights rather than the init's ones: 0.7 to 1.3 (Gemma's norms store w
    # of 1 + w, initialized to 0).
    low, high = (-0.3, 0.3) if isinstance(model, Gemma2ForCausalLM) else (0.7, 1.3)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                p.uniform_(low, high)
    model.eval().save_pretrained(directory, safe_serialization=True)


def transformers_logits(cls, directory: Path, tokens: list[int]) -> np.ndarray:
    # Eager attention: the path that applies Gemma 2's attention soft cap.
    model = cls.from_pretrained(directory, dtype=torch.float32, attn_implementation="eager").eval()
    with torch.no_grad():
        return model(torch.tensor([tokens])).logits[0].float().numpy()


CONVERT = """
import importlib, sys
sys.path.insert(0, sys.argv[1])
module = importlib.import_module(sys.argv[2])
getattr(module, sys.argv[3]).set_vocab = lambda self: self._set_vocab_builtin("gpt-neox", self.hparams["vocab_size"])
import convert_hf_to_gguf
sys.argv = ["convert_hf_to_gguf.py", *sys.argv[4:]]
convert_hf_to_gguf.main()
"""


def convert(module: str, cls: str, directory: Path, llama_cpp: Path, out: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(llama_cpp / "gguf-py"))
    converted = out.with_suffix(".converted.gguf")
    # A neutral general.name: llama.cpp sets attributes on Phi-3's special tokens when the name says
    # phi3, and the built-in vocabulary has none of them.
    subprocess.run([sys.executable, "-c", CONVERT, str(llama_cpp), module, cls, str(directory), "--outtype", "f32",
                    "--model-name", "tiny-random", "--outfile", str(converted)], check=True, env=env, cwd=llama_cpp,
                   stdout=subprocess.DEVNULL)
    # As check_hybrid_transformers.py: the built-in vocabulary names the 'mpt' pre-tokenizer,
    # which Lumen does not know; a copy names GPT-2's.
    subprocess.run([sys.executable, str(llama_cpp / "gguf-py" / "gguf" / "scripts" / "gguf_new_metadata.py"),
                    str(converted), str(out), "--pre-tokenizer", "gpt-2", "--force"], check=True, env=env,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def check(name: str, args, workdir: Path) -> dict:
    make, cls, module, converter_class = MODELS[name]
    rng = np.random.default_rng(SEED)
    tokens = [int(t) for t in rng.integers(1, VOCAB - 3, size=hybrid.PROMPT_LENGTH)]
    torch.manual_seed(SEED)
    make(workdir / name)
    hf = hybrid.log_softmax(transformers_logits(cls, workdir / name, tokens))
    gguf_path = workdir / f"{name}-tiny.f32.gguf"
    convert(module, converter_class, workdir / name, args.llama_cpp, gguf_path)
    llama = hybrid.log_softmax(hybrid.llama_logits(args.llama_python, gguf_path, tokens, workdir))
    listed = hybrid.lumen_prompt_logprobs(args.lumen, gguf_path, tokens)
    lumen = np.full_like(hf[1:], np.nan)
    for i, entry in enumerate(listed):
        for token, logprob in entry.items():
            lumen[i, token] = logprob
    lumen_argmax_rows = np.where(np.isnan(lumen), -np.inf, lumen)
    return {
        "prompt_tokens": hybrid.PROMPT_LENGTH, "lumen_prefill_chunk": 32, "compared_tokens_per_position": hybrid.TOP,
        # How far from flat the distributions are (a difference means little on flat ones).
        "transformers_logit_std_per_position": float(hf.std(axis=-1).mean()),
        "transformers_top1_prob_mean": float(np.exp(hf.max(axis=-1)).mean()),
        "lumen_vs_transformers": hybrid.compare(lumen_argmax_rows, hf[:-1], listed),
        "lumen_vs_llama_cpp": hybrid.compare(lumen_argmax_rows, llama[:-1], listed),
        "llama_cpp_vs_transformers": hybrid.compare(llama[:-1], hf[:-1], listed),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--llama-cpp", type=Path, required=True, help="the mirror's converter and gguf-py")
    parser.add_argument("--llama-python", required=True, help="a python with llama-cpp-python")
    parser.add_argument("--lumen", type=Path, default=hybrid.REPO / "build" / "release" / "src" / "cli" / "lumen")
    parser.add_argument("--keep", type=Path, help="work in this folder and keep the models (default: a temporary one)")
    parser.add_argument("names", nargs="*", default=list(MODELS), choices=list(MODELS))
    args = parser.parse_args()
    report = {}
    with tempfile.TemporaryDirectory() as work:
        workdir = args.keep or Path(work)
        workdir.mkdir(parents=True, exist_ok=True)
        for name in args.names:
            report[name] = check(name, args, workdir)
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
