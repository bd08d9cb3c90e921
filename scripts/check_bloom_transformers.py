#!/usr/bin/env python3
"""Checks Lumen's BLOOM forward pass (ALiBi attention, LayerNorm blocks) on a model that
llama.cpp's converter writes from a tiny random transformers BloomForCausalLM (4 layers, 6 heads:
not a power of two, so ALiBi's second slope series is used), against transformers (CPU torch,
f32) and llama.cpp (llama-cpp-python), on one prompt of fixed random token ids longer than a
prefill chunk. The golden test (scripts/make_alibi_golden.py) compares with llama.cpp on a
`lumen synth` file; this is the check that the synthetic file's layout is the converter's (its
reordering of BLOOM's per-head q/k/v interleave included) and that both match the model's own
implementation. Prints JSON as scripts/check_hybrid_transformers.py does, whose helpers it uses.

Needs what check_hybrid_transformers.py needs:
    TORCH_VENV/bin/python scripts/check_bloom_transformers.py --llama-cpp LLAMA --llama-python LLAMA_VENV/bin/python
The model directory has no tokenizer files, and BLOOM's converter has no built-in vocabulary to
fall back on as Mamba's has: this script gives it that one (GPT-NeoX's, padded to the config's
vocabulary size) and runs the converter otherwise as is; the prompt is token ids.
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
from transformers import BloomConfig, BloomForCausalLM

sys.path.insert(0, str(Path(__file__).resolve().parent))
import check_hybrid_transformers as hybrid  # noqa: E402

VOCAB = 50280
SEED = 5


def make_model(directory: Path) -> None:
    config = BloomConfig(vocab_size=VOCAB, hidden_size=96, n_layer=4, n_head=6, layer_norm_epsilon=1e-5,
                         initializer_range=0.1, bos_token_id=0, eos_token_id=0, pad_token_id=0,
                         tie_word_embeddings=True, seq_length=2048)  # the converter reads seq_length as the context
    torch.manual_seed(SEED)
    model = BloomForCausalLM(config).eval()
    with torch.no_grad():  # trained-looking norms and biases rather than the init's ones and zeros
        for name, p in model.named_parameters():
            if "layernorm" in name and name.endswith("weight"):
                p.uniform_(0.7, 1.3)
            elif name.endswith("bias"):
                p.normal_(0.0, 0.05)
    model.save_pretrained(directory, safe_serialization=True)


def transformers_logits(directory: Path, tokens: list[int]) -> np.ndarray:
    model = BloomForCausalLM.from_pretrained(directory, dtype=torch.float32).eval()
    with torch.no_grad():
        return model(torch.tensor([tokens])).logits[0].float().numpy()


CONVERT = """
import sys
sys.path.insert(0, sys.argv[1])
import conversion.bloom as bloom
bloom.BloomModel.set_vocab = lambda self: self._set_vocab_builtin("gpt-neox", self.hparams["vocab_size"])
import convert_hf_to_gguf
sys.argv = ["convert_hf_to_gguf.py", *sys.argv[2:]]
convert_hf_to_gguf.main()
"""


def convert(directory: Path, llama_cpp: Path, out: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(llama_cpp / "gguf-py"))
    converted = out.with_suffix(".converted.gguf")
    subprocess.run([sys.executable, "-c", CONVERT, str(llama_cpp), str(directory), "--outtype", "f32", "--outfile",
                    str(converted)], check=True, env=env, cwd=llama_cpp, stdout=subprocess.DEVNULL)
    # As check_hybrid_transformers.py: the built-in vocabulary names the 'mpt' pre-tokenizer,
    # which Lumen does not know; a copy names GPT-2's.
    subprocess.run([sys.executable, str(llama_cpp / "gguf-py" / "gguf" / "scripts" / "gguf_new_metadata.py"),
                    str(converted), str(out), "--pre-tokenizer", "gpt-2", "--force"], check=True, env=env,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--llama-cpp", type=Path, required=True, help="the mirror's converter and gguf-py")
    parser.add_argument("--llama-python", required=True, help="a python with llama-cpp-python")
    parser.add_argument("--lumen", type=Path, default=hybrid.REPO / "build" / "release" / "src" / "cli" / "lumen")
    parser.add_argument("--keep", type=Path, help="work in this folder and keep the models (default: a temporary one)")
    args = parser.parse_args()
    rng = np.random.default_rng(SEED)
    tokens = [int(t) for t in rng.integers(1, VOCAB - 3, size=hybrid.PROMPT_LENGTH)]
    with tempfile.TemporaryDirectory() as work:
        workdir = args.keep or Path(work)
        workdir.mkdir(parents=True, exist_ok=True)
        make_model(workdir / "hf")
        hf = hybrid.log_softmax(transformers_logits(workdir / "hf", tokens))
        gguf_path = workdir / "bloom-tiny.f32.gguf"
        convert(workdir / "hf", args.llama_cpp, gguf_path)
        llama = hybrid.log_softmax(hybrid.llama_logits(args.llama_python, gguf_path, tokens, workdir))
        listed = hybrid.lumen_prompt_logprobs(args.lumen, gguf_path, tokens)
    lumen = np.full_like(hf[1:], np.nan)
    for i, entry in enumerate(listed):
        for token, logprob in entry.items():
            lumen[i, token] = logprob
    lumen_argmax_rows = np.where(np.isnan(lumen), -np.inf, lumen)
    report = {
        "prompt_tokens": hybrid.PROMPT_LENGTH, "lumen_prefill_chunk": 32, "compared_tokens_per_position": hybrid.TOP,
        "transformers_logit_std_per_position": float(hf.std(axis=-1).mean()),
        "transformers_top1_prob_mean": float(np.exp(hf.max(axis=-1)).mean()),
        "lumen_vs_transformers": hybrid.compare(lumen_argmax_rows, hf[:-1], listed),
        "lumen_vs_llama_cpp": hybrid.compare(lumen_argmax_rows, llama[:-1], listed),
        "llama_cpp_vs_transformers": hybrid.compare(llama[:-1], hf[:-1], listed),
    }
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
