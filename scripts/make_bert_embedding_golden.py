#!/usr/bin/env python3
"""Writes tests/golden/embeddings/tiny_bert.json: what Hugging Face transformers makes of a few
texts with tiny_bert's weights (scripts/make_tiny_embedding_models.py, loaded into a BertModel):
BertTokenizerFast's ids and the mean-pooled, L2-normalised last hidden states (what
sentence-transformers computes for a mean-pooling model), beside the GGUF's sha256.
tests/python/test_embed_transformers_golden.py, tests/e2e/test_embeddings.py and
tests/python/package/test_package_embed.py compare Lumen with them.

Needs torch and transformers (CPU); CI only reads the output. With a llama.cpp checkout, also
checks that its convert_hf_to_gguf.py writes the same file from the same checkpoint:
python scripts/make_bert_embedding_golden.py [LLAMA_CPP_DIR]
"""
import sys
import tempfile
from pathlib import Path

import torch
from transformers import BertConfig, BertModel, BertTokenizerFast

from embedding_golden_common import TEXTS, check_against_converter, save_sentence_transformers_mean_pooling, \
    tiny, write_golden


def tokenizer() -> BertTokenizerFast:
    return BertTokenizerFast(vocab={token: i for i, token in enumerate(tiny.WORDPIECE)}, do_lower_case=True)


def main() -> None:
    config = BertConfig(vocab_size=len(tiny.WORDPIECE), hidden_size=tiny.HIDDEN, num_hidden_layers=tiny.LAYERS,
                        num_attention_heads=tiny.HEADS, intermediate_size=tiny.BERT["ffn"],
                        max_position_embeddings=tiny.BERT["positions"], type_vocab_size=2,
                        layer_norm_eps=tiny.BERT["eps"], hidden_act="gelu")
    model = BertModel(config, add_pooling_layer=False).eval()
    weights = {k: torch.from_numpy(v) for k, v in tiny.hf_weights("tiny_bert").items()}
    missing, unexpected = model.load_state_dict(weights, strict=False)
    # position_ids is a buffer, not a weight.
    assert not unexpected and all("position_ids" in k for k in missing), (missing, unexpected)
    tok = tokenizer()
    if len(sys.argv) > 1:
        with tempfile.TemporaryDirectory() as tmp:
            tok.save_pretrained(tmp)
            model.save_pretrained(tmp, safe_serialization=True)
            save_sentence_transformers_mean_pooling(Path(tmp))
            check_against_converter("tiny_bert", Path(tmp), Path(sys.argv[1]), "default")
    cases = []
    for text in TEXTS:
        encoded = tok(text, return_tensors="pt")
        with torch.no_grad():
            hidden = model(**encoded).last_hidden_state[0].double()
        pooled = hidden.mean(dim=0)
        cases.append({"text": text, "ids": encoded["input_ids"][0].tolist(), "embedding": (pooled / pooled.norm()).tolist()})
    write_golden("tiny_bert", "transformers BertModel + BertTokenizerFast on tiny_bert's weights "
                 "(scripts/make_tiny_embedding_models.py): mean pooling, L2-normalised", cases)


if __name__ == "__main__":
    main()
