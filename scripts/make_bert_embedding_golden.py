#!/usr/bin/env python3
"""Writes tests/golden/embeddings/: a tiny random BERT (Hugging Face transformers' BertModel,
hidden 64, 2 layers, 4 heads) with a small uncased WordPiece vocabulary, converted to GGUF (F32)
by llama.cpp's own convert_hf_to_gguf.py, and what transformers makes of a few texts: the
BertTokenizerFast ids and the mean-pooled, L2-normalised last hidden states (what
sentence-transformers computes for a mean-pooling model). tests/python/test_embed_transformers_golden.py,
tests/e2e/test_embeddings.py and tests/python/package/test_package_embed.py compare Lumen with them.

Needs torch and transformers (CPU) and a llama.cpp checkout (for convert_hf_to_gguf.py and its
conversion/ and gguf-py/): python scripts/make_bert_embedding_golden.py LLAMA_CPP_DIR [OUT_DIR].
Run once; CI only reads the output.
"""
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import torch
from transformers import BertConfig, BertModel, BertTokenizerFast

TEXTS = [
    "Hello, world!",
    "The quick brown fox jumps over the lazy dog.",
    "Unaffable CAFÉ owners don't serve tea; they're playing.",
    "a",
    "Embeddings turn sentences into vectors: similar meaning, nearby points.",
    "中文 text, naïve résumé — rare-word xylophonist zebra",
]

# A vocabulary that spells the texts in whole words, in pieces and not at all ([UNK]).
WORDS = ("the quick brown fox jumps over lazy dog hello world un ##aff ##able cafe owners don t serve tea they re "
         "play ##ing a em ##bed ##ding ##s turn sentence ##s into vector similar meaning near ##by point text "
         "na ##ive res ##ume rare word x ##yl ##o ##phon ##ist 中 文 ' , . ! ; : - — e s n")
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + list(dict.fromkeys(WORDS.split()))


def main() -> None:
    llama_cpp = Path(sys.argv[1])
    out = Path(sys.argv[2] if len(sys.argv) > 2 else Path(__file__).parent.parent / "tests/golden/embeddings")
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = Path(tmp) / "tiny-bert"
        model_dir.mkdir()
        (model_dir / "vocab.txt").write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
        tokenizer = BertTokenizerFast(vocab={token: i for i, token in enumerate(VOCAB)}, do_lower_case=True)
        tokenizer.save_pretrained(model_dir)
        torch.manual_seed(49)
        # A larger initial spread than BERT's 0.02, so attention is far from uniform and a wrong
        # mask, scale or norm changes the output visibly.
        config = BertConfig(vocab_size=len(VOCAB), hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                            intermediate_size=128, max_position_embeddings=64, type_vocab_size=2,
                            initializer_range=0.2, hidden_act="gelu")
        model = BertModel(config, add_pooling_layer=False).eval()
        model.save_pretrained(model_dir, safe_serialization=True)
        # sentence-transformers' module files: the converter reads the pooling from them.
        (model_dir / "modules.json").write_text(json.dumps(
            [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
             {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]))
        (model_dir / "1_Pooling").mkdir()
        (model_dir / "1_Pooling/config.json").write_text(json.dumps({"pooling_mode_mean_tokens": True}))
        gguf_path = out / "tiny_bert.gguf"
        # The converter knows pre-tokenizers by a hash of known vocabularies' output; this vocabulary
        # is none of them, and a WordPiece model ignores the name, so it gets "default".
        wrapper = ("import sys, runpy; sys.path.insert(0, sys.argv[1]); sys.argv = sys.argv[1:];"
                   "import conversion.base as b; b.TextModel.get_vocab_base_pre = lambda self, t: 'default';"
                   "runpy.run_path(sys.argv[0] + '/convert_hf_to_gguf.py', run_name='__main__')")
        subprocess.run([sys.executable, "-c", wrapper, str(llama_cpp), str(model_dir), "--outtype", "f32",
                        "--outfile", str(gguf_path)], check=True)
        cases = []
        for text in TEXTS:
            encoded = tokenizer(text, return_tensors="pt")
            with torch.no_grad():
                hidden = model(**encoded).last_hidden_state[0].double()
            pooled = hidden.mean(dim=0)
            pooled = pooled / pooled.norm()
            cases.append({"text": text, "ids": encoded["input_ids"][0].tolist(), "embedding": pooled.tolist()})
    (out / "tiny_bert.json").write_text(json.dumps(
        {"about": "transformers BertModel + BertTokenizerFast on tiny_bert.gguf's weights (made by "
                  "scripts/make_bert_embedding_golden.py): mean pooling, L2-normalised",
         "cases": cases}, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {gguf_path} ({gguf_path.stat().st_size} bytes) and tiny_bert.json")


if __name__ == "__main__":
    main()
