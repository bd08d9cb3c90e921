#!/usr/bin/env python3
"""Writes tests/golden/embeddings/tiny_llama.json: what Hugging Face transformers makes of a few
texts with tiny_llama's weights and vocabulary (scripts/make_tiny_embedding_models.py): the ids of
a tokenizers byte-level BPE (GPT-2's pre-tokenizer) built from the same vocabulary and merges, and
the last token's final hidden state (LlamaModel's last_hidden_state, after its final norm),
L2-normalised: the vector Lumen serves for a decoder whose file has no pooling_type. The GGUF
reorders Q and K rows for adjacent-pair rope, so this checks that path end to end.

Needs torch, transformers and tokenizers (CPU); CI only reads the output. With a llama.cpp
checkout, also checks that its convert_hf_to_gguf.py writes the same file from the same checkpoint:
python scripts/make_llama_embedding_golden.py [LLAMA_CPP_DIR]
"""
import json
import sys
import tempfile
from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers
from transformers import LlamaConfig, LlamaModel, PreTrainedTokenizerFast

from embedding_golden_common import check_against_converter, tiny, write_golden

TEXTS = tiny.BPE_CORPUS + ["Unseen words: zebra quartz!", "a"]


def tokenizer() -> PreTrainedTokenizerFast:
    vocab, merges = tiny.learn_bpe()
    bpe = Tokenizer(models.BPE(vocab={t: i for i, t in enumerate(vocab)}, merges=merges))
    bpe.add_special_tokens([tiny.END_OF_TEXT])
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    return PreTrainedTokenizerFast(tokenizer_object=bpe, bos_token=tiny.END_OF_TEXT, eos_token=tiny.END_OF_TEXT)


def main() -> None:
    cfg = tiny.LLAMA
    config = LlamaConfig(vocab_size=tiny.BPE_VOCAB_SIZE, hidden_size=tiny.HIDDEN, intermediate_size=cfg["ffn"],
                         num_hidden_layers=tiny.LAYERS, num_attention_heads=tiny.HEADS,
                         num_key_value_heads=cfg["kv_heads"], max_position_embeddings=cfg["positions"],
                         rope_theta=cfg["rope_base"], rms_norm_eps=cfg["eps"], tie_word_embeddings=True,
                         bos_token_id=0, eos_token_id=0)
    model = LlamaModel(config).eval()
    model.load_state_dict({k: torch.from_numpy(v) for k, v in tiny.hf_weights("tiny_llama").items()}, strict=True)
    tok = tokenizer()
    if len(sys.argv) > 1:
        with tempfile.TemporaryDirectory() as tmp:
            tok.save_pretrained(tmp)
            model.save_pretrained(tmp, safe_serialization=True)
            # LlamaModel's weights lack LlamaForCausalLM's "model." prefix; the converter reads
            # the architecture from config.json, so name the one it knows.
            conf = json.loads((Path(tmp) / "config.json").read_text())
            conf["architectures"] = ["LlamaForCausalLM"]
            (Path(tmp) / "config.json").write_text(json.dumps(conf))
            check_against_converter("tiny_llama", Path(tmp), Path(sys.argv[1]), "gpt-2")
    cases = []
    for text in TEXTS:
        ids = tok(text)["input_ids"]
        with torch.no_grad():
            hidden = model(input_ids=torch.tensor([ids])).last_hidden_state[0, -1].double()
        cases.append({"text": text, "ids": ids, "embedding": (hidden / hidden.norm()).tolist()})
    write_golden("tiny_llama", "transformers LlamaModel on tiny_llama's weights (scripts/make_tiny_embedding_models.py): "
                 "the last token's final hidden state, L2-normalised", cases)


if __name__ == "__main__":
    main()
