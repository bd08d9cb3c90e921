#!/usr/bin/env python3
"""Writes tests/golden/embeddings/tiny_llama.{gguf,json}: a tiny random LlamaModel (Hugging Face
transformers: hidden 64, 2 layers, 4 query heads on 2 KV heads) with a small byte-level BPE
vocabulary (GPT-2's pre-tokenizer, trained here on a few sentences), converted to GGUF (F32) by
llama.cpp's convert_hf_to_gguf.py, and what transformers makes of a few texts: the tokenizer's ids
and the last token's final hidden state (LlamaModel's last_hidden_state, after its final norm),
L2-normalised: the vector Lumen serves for a decoder whose file has no pooling_type. The
converter permutes Q and K for llama.cpp's rope, so this checks that path end to end.

Needs torch, transformers and tokenizers (CPU) and a llama.cpp checkout:
python scripts/make_llama_embedding_golden.py LLAMA_CPP_DIR [OUT_DIR]. CI only reads the output.
"""
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import LlamaConfig, LlamaModel, PreTrainedTokenizerFast

CORPUS = [
    "The quick brown fox jumps over the lazy dog.",
    "Embeddings turn sentences into vectors; similar meaning, nearby points.",
    "def add(a, b):\n    return a + b",
    "Lumen serves OpenAI's API on a CPU.",
]
TEXTS = CORPUS + ["Unseen words: zebra quartz!", "a"]


def main() -> None:
    llama_cpp = Path(sys.argv[1])
    out = Path(sys.argv[2] if len(sys.argv) > 2 else Path(__file__).parent.parent / "tests/golden/embeddings")
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = Path(tmp) / "tiny-llama"
        bpe = Tokenizer(models.BPE())
        bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        bpe.decoder = decoders.ByteLevel()
        bpe.train_from_iterator(CORPUS, trainers.BpeTrainer(
            vocab_size=320, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), special_tokens=["<|endoftext|>"]))
        tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe, bos_token="<|endoftext|>", eos_token="<|endoftext|>")
        tokenizer.save_pretrained(model_dir)
        torch.manual_seed(49)
        config = LlamaConfig(vocab_size=bpe.get_vocab_size(), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                             num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
                             rope_theta=10000.0, rms_norm_eps=1e-5, initializer_range=0.2, tie_word_embeddings=True,
                             bos_token_id=0, eos_token_id=0)
        model = LlamaModel(config).eval()
        model.save_pretrained(model_dir, safe_serialization=True)
        # LlamaModel's weights are named without the "model." prefix LlamaForCausalLM's have; the
        # converter reads the architecture from config.json, so name the one it knows.
        cfg = json.loads((model_dir / "config.json").read_text())
        cfg["architectures"] = ["LlamaForCausalLM"]
        (model_dir / "config.json").write_text(json.dumps(cfg))
        gguf_path = out / "tiny_llama.gguf"
        # The converter knows pre-tokenizers by a hash of known vocabularies' output; this one is
        # GPT-2's pre-tokenizer over a new vocabulary.
        wrapper = ("import sys, runpy; sys.path.insert(0, sys.argv[1]); sys.argv = sys.argv[1:];"
                   "import conversion.base as b; b.TextModel.get_vocab_base_pre = lambda self, t: 'gpt-2';"
                   "runpy.run_path(sys.argv[0] + '/convert_hf_to_gguf.py', run_name='__main__')")
        subprocess.run([sys.executable, "-c", wrapper, str(llama_cpp), str(model_dir), "--outtype", "f32",
                        "--outfile", str(gguf_path)], check=True)
        cases = []
        for text in TEXTS:
            ids = tokenizer(text)["input_ids"]
            with torch.no_grad():
                hidden = model(input_ids=torch.tensor([ids])).last_hidden_state[0, -1].double()
            cases.append({"text": text, "ids": ids, "embedding": (hidden / hidden.norm()).tolist()})
    (out / "tiny_llama.json").write_text(json.dumps(
        {"about": "transformers LlamaModel on tiny_llama.gguf's weights (made by "
                  "scripts/make_llama_embedding_golden.py): the last token's final hidden state, L2-normalised",
         "cases": cases}, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {gguf_path} ({gguf_path.stat().st_size} bytes) and tiny_llama.json")


if __name__ == "__main__":
    main()
