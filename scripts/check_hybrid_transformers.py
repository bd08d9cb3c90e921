#!/usr/bin/env python3
"""Checks Lumen's granite-hybrid forward pass on a model that llama.cpp's converter writes from a
tiny random transformers GraniteMoeHybridForCausalLM (dense FFN, 4 layers: Mamba 2, attention,
Mamba 2, attention; no rope, Granite's multipliers), against transformers (CPU torch, f32) and
llama.cpp (llama-cpp-python), on one prompt of fixed random token ids longer than a prefill
chunk. The golden test (scripts/make_hybrid_golden.py) compares with llama.cpp on a `lumen synth`
file; this is the check that the synthetic file's layout is the converter's and that both match
the model's own implementation. Prints JSON: per engine pair, the largest difference of
log-probabilities over every position's 20 most probable tokens (Lumen's prompt_logprobs) and
the share of positions whose most probable token agrees.

Needs: a venv with torch and transformers (>= 4.54), the llama-cpp-python venv
make_logits_golden.py describes, the converter and gguf-py from the llama.cpp mirror, and a
built `lumen`:
    git -C /work/.mirror/ngxson+llama.cpp/repo archive HEAD convert_hf_to_gguf.py conversion gguf-py | tar -x -C LLAMA
    mkdir -p LLAMA/models && git -C ... show HEAD:models/ggml-vocab-gpt-neox.gguf > LLAMA/models/ggml-vocab-gpt-neox.gguf
    TORCH_VENV/bin/python scripts/check_hybrid_transformers.py --llama-cpp LLAMA --llama-python LLAMA_VENV/bin/python
(The model directory has no tokenizer files, so the converter writes its built-in GPT-NeoX
vocabulary; the prompt is token ids.)
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path

import numpy as np
import torch
from transformers import GraniteMoeHybridConfig, GraniteMoeHybridForCausalLM

REPO = Path(__file__).resolve().parent.parent
PROMPT_LENGTH = 80  # the server's prefill chunk is set to 32 below: three chunks
TOP = 20
SEED = 3


def make_model(directory: Path) -> None:
    config = GraniteMoeHybridConfig(
        vocab_size=50280, hidden_size=64, intermediate_size=128, shared_intermediate_size=128, num_hidden_layers=4,
        num_attention_heads=4, num_key_value_heads=2, layer_types=["mamba", "attention", "mamba", "attention"],
        num_local_experts=0, num_experts_per_tok=0, position_embedding_type="nope", mamba_n_heads=8,
        mamba_d_head=16, mamba_n_groups=2, mamba_d_state=16, mamba_d_conv=4, mamba_expand=2, mamba_chunk_size=16,
        embedding_multiplier=12.0, residual_multiplier=0.246, attention_multiplier=0.0625, logits_scaling=3.0,
        tie_word_embeddings=True, rms_norm_eps=1e-5, initializer_range=0.1, max_position_embeddings=4096,
        bos_token_id=0, eos_token_id=0, pad_token_id=0)
    torch.manual_seed(SEED)
    model = GraniteMoeHybridForCausalLM(config).eval()
    with torch.no_grad():  # trained-looking decays and step sizes rather than the init's constants
        for layer in model.model.layers:
            if getattr(layer, "mamba", None) is not None:
                layer.mamba.dt_bias.uniform_(-2.0, 0.5)
                layer.mamba.D.uniform_(0.5, 1.5)
    model.save_pretrained(directory, safe_serialization=True)
    # transformers 5 saves the layer types as "linear_attention" / "full_attention"; the
    # published configs (and the converter, which looks for "attention") spell them
    # "mamba" / "attention".
    config_path = directory / "config.json"
    saved = json.loads(config_path.read_text())
    saved["layer_types"] = ["attention" if t in ("attention", "full_attention") else "mamba"
                            for t in saved["layer_types"]]
    config_path.write_text(json.dumps(saved, indent=1))


def transformers_logits(directory: Path, tokens: list[int]) -> np.ndarray:
    model = GraniteMoeHybridForCausalLM.from_pretrained(directory, dtype=torch.float32).eval()
    with torch.no_grad():
        return model(torch.tensor([tokens])).logits[0].float().numpy()


def convert(directory: Path, llama_cpp: Path, out: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(llama_cpp / "gguf-py"))
    converted = out.with_suffix(".converted.gguf")
    subprocess.run([sys.executable, str(llama_cpp / "convert_hf_to_gguf.py"), str(directory), "--outtype", "f32",
                    "--outfile", str(converted)], check=True, env=env, cwd=llama_cpp, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    # The built-in GPT-NeoX vocabulary names the 'mpt' pre-tokenizer, which Lumen does not know;
    # the prompt is token ids, so pre-tokenization plays no part: both engines read a copy that
    # names GPT-2's (gguf-py's own metadata editor writes it).
    subprocess.run([sys.executable, str(llama_cpp / "gguf-py" / "gguf" / "scripts" / "gguf_new_metadata.py"),
                    str(converted), str(out), "--pre-tokenizer", "gpt-2", "--force"], check=True, env=env,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


LLAMA_SCRIPT = """
import sys, numpy as np
from llama_cpp import Llama
llm = Llama(model_path=sys.argv[1], n_ctx=512, n_batch=512, n_threads=2, logits_all=True, verbose=False)
tokens = [int(t) for t in sys.argv[3].split(",")]
llm.eval(tokens)
np.save(sys.argv[2], np.array(llm.scores[:len(tokens)], dtype=np.float32))
"""


def llama_logits(python: str, model: Path, tokens: list[int], workdir: Path) -> np.ndarray:
    out = workdir / "llama.npy"
    subprocess.run([python, "-c", LLAMA_SCRIPT, str(model), str(out), ",".join(map(str, tokens))], check=True)
    return np.load(out)


def lumen_prompt_logprobs(lumen: Path, model: Path, tokens: list[int]) -> list[dict[int, float]]:
    """Per position after the first: {token: logprob} for its TOP most probable tokens and the
    prompt's own, as `lumen serve` reports them (prompt_logprobs), prefilled in chunks of 32."""
    proc = subprocess.Popen([str(lumen), "serve", "-m", str(model), "--port", "0", "--kv-cache-memory", "64M",
                             "--max-model-len", "512", "--max-num-batched-tokens", "32"],
                            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    try:
        port = None
        for line in proc.stderr:
            if m := re.search(r"on http://[^:]+:(\d+)", line):
                port = int(m.group(1))
                break
        assert port, "lumen serve did not start"
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=30) as r:
            name = json.load(r)["data"][0]["id"]
        body = json.dumps({"model": name, "prompt": tokens, "max_tokens": 1, "temperature": 0,
                           "prompt_logprobs": TOP}).encode()
        request = urllib.request.Request(f"http://127.0.0.1:{port}/v1/completions", body,
                                         {"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=120) as r:
            choice = json.load(r)["choices"][0]
        return [{int(t): v["logprob"] for t, v in entry.items()} for entry in choice["prompt_logprobs"][1:]]
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def log_softmax(logits: np.ndarray) -> np.ndarray:
    shifted = logits - logits.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def compare(a: np.ndarray, b: np.ndarray, lumen: list[dict[int, float]]) -> dict:
    """Two engines' log-probabilities, over the tokens Lumen listed at each position."""
    worst, agree = 0.0, 0
    for i, listed in enumerate(lumen):
        ids = list(listed)
        worst = max(worst, float(np.abs(a[i, ids] - b[i, ids]).max()))
        agree += int(a[i].argmax() == b[i].argmax())
    return {"max_logprob_diff": worst, "top1_agreement": agree / len(lumen)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--llama-cpp", type=Path, required=True, help="the mirror's converter and gguf-py")
    parser.add_argument("--llama-python", required=True, help="a python with llama-cpp-python")
    parser.add_argument("--lumen", type=Path, default=REPO / "build" / "release" / "src" / "cli" / "lumen")
    parser.add_argument("--keep", type=Path, help="work in this folder and keep the models (default: a temporary one)")
    args = parser.parse_args()
    rng = np.random.default_rng(SEED)
    tokens = [int(t) for t in rng.integers(1, 50277, size=PROMPT_LENGTH)]
    with tempfile.TemporaryDirectory() as work:
        workdir = args.keep or Path(work)
        workdir.mkdir(parents=True, exist_ok=True)
        make_model(workdir / "hf")
        hf = log_softmax(transformers_logits(workdir / "hf", tokens))
        gguf_path = workdir / "granite-hybrid-tiny.f32.gguf"
        convert(workdir / "hf", args.llama_cpp, gguf_path)
        llama = log_softmax(llama_logits(args.llama_python, gguf_path, tokens, workdir))
        listed = lumen_prompt_logprobs(args.lumen, gguf_path, tokens)
    # Lumen's rows as dense arrays over the listed tokens (the rest never read).
    lumen = np.full_like(hf[1:], np.nan)
    for i, entry in enumerate(listed):
        for token, logprob in entry.items():
            lumen[i, token] = logprob
    # Position i of the prompt logprobs is the distribution after tokens[:i + 1], row i of hf.
    lumen_argmax_rows = np.where(np.isnan(lumen), -np.inf, lumen)
    report = {
        "prompt_tokens": PROMPT_LENGTH, "lumen_prefill_chunk": 32, "compared_tokens_per_position": TOP,
        # How far from flat the distributions are (a difference means little on flat ones).
        "transformers_logit_std_per_position": float(hf.std(axis=-1).mean()),
        "transformers_top1_prob_mean": float(np.exp(hf.max(axis=-1)).mean()),
        "lumen_vs_transformers": compare(lumen_argmax_rows, hf[:-1], listed),
        "lumen_vs_llama_cpp": compare(lumen_argmax_rows, llama[:-1], listed),
        "llama_cpp_vs_transformers": compare(llama[:-1], hf[:-1], listed),
    }
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
