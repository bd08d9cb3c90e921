#!/usr/bin/env python3
"""The embedding tests' tiny random models, written from fixed seeds with gguf-py and numpy only,
so that no model file is committed and CI needs no torch.

  tiny_bert        BERT (hidden 64, 2 layers, 4 heads, mean pooling) with a small uncased
                   WordPiece vocabulary
  tiny_llama       a Llama decoder (4 query heads on 2 KV heads, no pooling_type) with a byte-level
                   BPE vocabulary learned here from a few sentences
  tiny_nomic_bert  nomic-bert (rotary positions, fused QKV, SwiGLU, mean pooling), the BERT
                   vocabulary

Each model's weights exist first in the Hugging Face layout (hf_weights()); the GGUF is written
from them the way llama.cpp's converter lays them out (tensor names, Q/K row order, the WordPiece
spelling). scripts/make_*_embedding_golden.py load the same arrays into transformers (or a torch
forward pass) and write tests/golden/embeddings/NAME.json with the expected vectors and the
GGUF's sha256. At test time golden_model(NAME) writes the file into the build tree and checks that
sha256, so a test never compares against a file other than the one the golden was made from.

  python scripts/make_tiny_embedding_models.py OUT_DIR   # writes the three files, prints sha256s
"""
import hashlib
import json
import os
import re
import sys
import tempfile
from pathlib import Path

import gguf
import numpy as np

REPO = Path(__file__).resolve().parent.parent
GOLDEN_DIR = REPO / "tests" / "golden" / "embeddings"
NAMES = ("tiny_bert", "tiny_llama", "tiny_nomic_bert")

# --- vocabularies -------------------------------------------------------------------------------

# A WordPiece vocabulary that spells the golden texts in whole words, in pieces and not at all ([UNK]).
WORDS = ("the quick brown fox jumps over lazy dog hello world un ##aff ##able cafe owners don t serve tea they re "
         "play ##ing a em ##bed ##ding ##s turn sentence ##s into vector similar meaning near ##by point text "
         "na ##ive res ##ume rare word x ##yl ##o ##phon ##ist 中 文 ' , . ! ; : - — e s n")
WORDPIECE = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + list(dict.fromkeys(WORDS.split()))

BPE_CORPUS = [
    "The quick brown fox jumps over the lazy dog.",
    "Embeddings turn sentences into vectors; similar meaning, nearby points.",
    "def add(a, b):\n    return a + b",
    "Lumen serves OpenAI's API on a CPU.",
]
BPE_VOCAB_SIZE = 320
END_OF_TEXT = "<|endoftext|>"


def byte_level_alphabet() -> dict:
    """GPT-2's byte-to-character table: printable bytes stand for themselves, the others are
    moved to code points from 256 on, in byte order."""
    kept = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    table, extra = {}, 0
    for b in range(256):
        if b in kept:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return table


def learn_bpe() -> tuple:
    """A byte-level BPE vocabulary: the end-of-text token, the 256 byte characters in code point
    order, then one token per merge, each merge the most frequent adjacent pair in the corpus's
    words (ties to the smaller pair, so the result is the same everywhere)."""
    alphabet = byte_level_alphabet()
    # GPT-2's pre-tokenizer, spelled for Python's re (the corpus is ASCII, where it is exact).
    split = re.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?[^\W\d_]+| ?\d+| ?[^\s\w]+|\s+(?!\S)|\s+""")
    words = {}
    for line in BPE_CORPUS:
        for piece in split.findall(line):
            word = tuple(alphabet[b] for b in piece.encode("utf-8"))
            words[word] = words.get(word, 0) + 1
    vocab = [END_OF_TEXT] + sorted(alphabet.values())
    known, merges = set(vocab), []
    while len(vocab) < BPE_VOCAB_SIZE:
        counts = {}
        for word, n in words.items():
            for pair in zip(word, word[1:]):
                if pair[0] + pair[1] not in known:
                    counts[pair] = counts.get(pair, 0) + n
        if not counts:
            break
        best = min(counts, key=lambda p: (-counts[p], p))
        merges.append(best)
        vocab.append(best[0] + best[1])
        known.add(vocab[-1])
        merged = {}
        for word, n in words.items():
            out, i = [], 0
            while i < len(word):
                if i + 1 < len(word) and (word[i], word[i + 1]) == best:
                    out.append(word[i] + word[i + 1])
                    i += 2
                else:
                    out.append(word[i])
                    i += 1
            merged[tuple(out)] = merged.get(tuple(out), 0) + n
        words = merged
    return vocab, merges


# --- weights (Hugging Face names and shapes) ----------------------------------------------------

HIDDEN, LAYERS, HEADS = 64, 2, 4
BERT = {"seed": 49, "ffn": 128, "positions": 64, "eps": 1e-12}
LLAMA = {"seed": 149, "ffn": 128, "kv_heads": 2, "positions": 128, "eps": 1e-5, "rope_base": 10000.0}
NOMIC = {"seed": 1049, "ffn": 96, "positions": 2048, "eps": 1e-12, "rope_base": 1000.0}


class Draw:
    """Float32 draws from numpy's legacy RandomState, whose streams numpy keeps fixed across
    versions. Spreads are wider than real inits (0.02), so attention is far from uniform and a
    wrong mask, scale or norm moves the output visibly."""

    def __init__(self, seed: int):
        self.rng = np.random.RandomState(seed)

    def normal(self, *shape, scale=0.2):
        return (self.rng.standard_normal(shape) * scale).astype(np.float32)

    def norm(self, n):
        return (1.0 + self.rng.standard_normal(n) * 0.1).astype(np.float32)


def bert_weights() -> dict:
    d, f, w = Draw(BERT["seed"]), BERT["ffn"], {}
    w["embeddings.word_embeddings.weight"] = d.normal(len(WORDPIECE), HIDDEN)
    w["embeddings.position_embeddings.weight"] = d.normal(BERT["positions"], HIDDEN)
    w["embeddings.token_type_embeddings.weight"] = d.normal(2, HIDDEN)
    w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"] = d.norm(HIDDEN), d.normal(HIDDEN, scale=0.1)
    for i in range(LAYERS):
        p = f"encoder.layer.{i}."
        for name, rows, cols in (("attention.self.query", HIDDEN, HIDDEN), ("attention.self.key", HIDDEN, HIDDEN),
                                 ("attention.self.value", HIDDEN, HIDDEN), ("attention.output.dense", HIDDEN, HIDDEN),
                                 ("intermediate.dense", f, HIDDEN), ("output.dense", HIDDEN, f)):
            w[p + name + ".weight"], w[p + name + ".bias"] = d.normal(rows, cols), d.normal(rows, scale=0.1)
        for name in ("attention.output.LayerNorm", "output.LayerNorm"):
            w[p + name + ".weight"], w[p + name + ".bias"] = d.norm(HIDDEN), d.normal(HIDDEN, scale=0.1)
    return w


def llama_weights() -> dict:
    d, f, kv = Draw(LLAMA["seed"]), LLAMA["ffn"], LLAMA["kv_heads"] * HIDDEN // HEADS
    w = {"embed_tokens.weight": d.normal(BPE_VOCAB_SIZE, HIDDEN)}
    for i in range(LAYERS):
        p = f"layers.{i}."
        w[p + "input_layernorm.weight"] = d.norm(HIDDEN)
        for name, rows, cols in (("self_attn.q_proj", HIDDEN, HIDDEN), ("self_attn.k_proj", kv, HIDDEN),
                                 ("self_attn.v_proj", kv, HIDDEN), ("self_attn.o_proj", HIDDEN, HIDDEN),
                                 ("mlp.gate_proj", f, HIDDEN), ("mlp.up_proj", f, HIDDEN), ("mlp.down_proj", HIDDEN, f)):
            w[p + name + ".weight"] = d.normal(rows, cols)
        w[p + "post_attention_layernorm.weight"] = d.norm(HIDDEN)
    w["norm.weight"] = d.norm(HIDDEN)
    return w


def nomic_weights() -> dict:
    d, f = Draw(NOMIC["seed"]), NOMIC["ffn"]
    w = {"embeddings.word_embeddings.weight": d.normal(len(WORDPIECE), HIDDEN, scale=0.5),
         "embeddings.token_type_embeddings.weight": d.normal(2, HIDDEN, scale=0.5),
         "emb_ln.weight": d.norm(HIDDEN), "emb_ln.bias": d.normal(HIDDEN, scale=0.1)}
    for i in range(LAYERS):
        p = f"encoder.layers.{i}."
        w[p + "attn.Wqkv.weight"] = d.normal(3 * HIDDEN, HIDDEN, scale=0.25)
        w[p + "attn.out_proj.weight"] = d.normal(HIDDEN, HIDDEN, scale=0.15)
        w[p + "mlp.fc11.weight"] = d.normal(f, HIDDEN, scale=0.15)
        w[p + "mlp.fc12.weight"] = d.normal(f, HIDDEN, scale=0.15)
        w[p + "mlp.fc2.weight"] = d.normal(HIDDEN, f, scale=0.15)
        for norm in ("norm1", "norm2"):
            w[p + norm + ".weight"], w[p + norm + ".bias"] = d.norm(HIDDEN), d.normal(HIDDEN, scale=0.1)
    return w


def hf_weights(name: str) -> dict:
    return {"tiny_bert": bert_weights, "tiny_llama": llama_weights, "tiny_nomic_bert": nomic_weights}[name]()


# --- GGUF files, laid out as llama.cpp's convert_hf_to_gguf.py lays them ------------------------

def interleave_rope_rows(weight: np.ndarray, heads: int) -> np.ndarray:
    """Hugging Face's Llama rotates dimension i with i + d/2 in each head; GGUF Llama files rotate
    adjacent pairs, so each head's rows are reordered 0, d/2, 1, d/2 + 1, ..."""
    d = weight.shape[0] // heads
    order = np.arange(d).reshape(2, d // 2).T.reshape(-1)
    return np.concatenate([weight[h * d:(h + 1) * d][order] for h in range(heads)])


def wordpiece_tokenizer(out: gguf.GGUFWriter) -> None:
    # llama.cpp's spelling of a WordPiece vocabulary: a word start gets "▁", a "##" piece loses it.
    tokens = [t if t.startswith("[") else (t[2:] if t.startswith("##") else "\u2581" + t) for t in WORDPIECE]
    out.add_token_type_count(2)
    out.add_tokenizer_model("bert")
    out.add_tokenizer_pre("default")
    out.add_token_list(tokens)
    out.add_token_types([3 if t.startswith("[") else 1 for t in WORDPIECE])
    ids = {t: i for i, t in enumerate(WORDPIECE)}
    out.add_bos_token_id(ids["[CLS]"])
    out.add_eos_token_id(ids["[SEP]"])
    out.add_unk_token_id(ids["[UNK]"])
    out.add_sep_token_id(ids["[SEP]"])
    out.add_pad_token_id(ids["[PAD]"])
    out.add_mask_token_id(ids["[MASK]"])
    out.add_add_bos_token(True)
    out.add_add_eos_token(True)
    out.add_add_sep_token(False)
    out.add_bool("tokenizer.ggml.normalizer.lowercase", True)


def encoder_header(out: gguf.GGUFWriter, cfg: dict) -> None:
    out.add_block_count(LAYERS)
    out.add_context_length(cfg["positions"])
    out.add_embedding_length(HIDDEN)
    out.add_feed_forward_length(cfg["ffn"])
    out.add_head_count(HEADS)
    out.add_layer_norm_eps(cfg["eps"])
    out.add_causal_attention(False)
    out.add_pooling_type(gguf.PoolingType.MEAN)


def write_bert(out: gguf.GGUFWriter, w: dict) -> None:
    encoder_header(out, BERT)
    wordpiece_tokenizer(out)
    names = {"embeddings.word_embeddings": "token_embd", "embeddings.position_embeddings": "position_embd",
             "embeddings.token_type_embeddings": "token_types", "embeddings.LayerNorm": "token_embd_norm",
             "attention.self.query": "attn_q", "attention.self.key": "attn_k", "attention.self.value": "attn_v",
             "attention.output.dense": "attn_output", "attention.output.LayerNorm": "attn_output_norm",
             "intermediate.dense": "ffn_up", "output.dense": "ffn_down", "output.LayerNorm": "layer_output_norm"}
    for key, value in w.items():
        stem, kind = key.rsplit(".", 1)
        if stem.startswith("encoder.layer."):
            _, _, layer, rest = stem.split(".", 3)
            out.add_tensor(f"blk.{layer}.{names[rest]}.{kind}", value)
        else:
            out.add_tensor(f"{names[stem]}.{kind}", value)


def write_llama(out: gguf.GGUFWriter, w: dict) -> None:
    vocab, merges = learn_bpe()
    kv_heads = LLAMA["kv_heads"]
    out.add_block_count(LAYERS)
    out.add_context_length(LLAMA["positions"])
    out.add_embedding_length(HIDDEN)
    out.add_feed_forward_length(LLAMA["ffn"])
    out.add_head_count(HEADS)
    out.add_head_count_kv(kv_heads)
    out.add_rope_freq_base(LLAMA["rope_base"])
    out.add_layer_norm_rms_eps(LLAMA["eps"])
    out.add_key_length(HIDDEN // HEADS)
    out.add_value_length(HIDDEN // HEADS)
    out.add_vocab_size(len(vocab))
    out.add_rope_dimension_count(HIDDEN // HEADS)
    out.add_tokenizer_model("gpt2")
    out.add_tokenizer_pre("gpt-2")
    out.add_token_list(vocab)
    out.add_token_types([3 if t == END_OF_TEXT else 1 for t in vocab])
    out.add_token_merges([f"{a} {b}" for a, b in merges])
    out.add_bos_token_id(0)
    out.add_eos_token_id(0)
    names = {"input_layernorm": "attn_norm", "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k",
             "self_attn.v_proj": "attn_v", "self_attn.o_proj": "attn_output", "mlp.gate_proj": "ffn_gate",
             "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down", "post_attention_layernorm": "ffn_norm"}
    out.add_tensor("token_embd.weight", w["embed_tokens.weight"])
    for i in range(LAYERS):
        for hf, ours in names.items():
            value = w[f"layers.{i}.{hf}.weight"]
            if ours == "attn_q":
                value = interleave_rope_rows(value, HEADS)
            elif ours == "attn_k":
                value = interleave_rope_rows(value, kv_heads)
            out.add_tensor(f"blk.{i}.{ours}.weight", value)
    # The output matrix is tied to the embeddings, so the file has none (as the converter writes it).
    out.add_tensor("output_norm.weight", w["norm.weight"])


def write_nomic_bert(out: gguf.GGUFWriter, w: dict) -> None:
    encoder_header(out, NOMIC)
    out.add_rope_freq_base(NOMIC["rope_base"])
    out.add_key_length(HIDDEN // HEADS)
    out.add_value_length(HIDDEN // HEADS)
    wordpiece_tokenizer(out)
    out.add_tensor("token_embd_norm.bias", w["emb_ln.bias"])
    out.add_tensor("token_embd_norm.weight", w["emb_ln.weight"])
    out.add_tensor("token_types.weight", w["embeddings.token_type_embeddings.weight"])
    out.add_tensor("token_embd.weight", w["embeddings.word_embeddings.weight"])
    names = {"attn.Wqkv": "attn_qkv", "attn.out_proj": "attn_output", "mlp.fc11": "ffn_up", "mlp.fc12": "ffn_gate",
             "mlp.fc2": "ffn_down", "norm1": "attn_output_norm", "norm2": "layer_output_norm"}
    for i in range(LAYERS):
        for hf, ours in names.items():
            for kind in ("weight", "bias"):
                key = f"encoder.layers.{i}.{hf}.{kind}"
                if key in w:
                    out.add_tensor(f"blk.{i}.{ours}.{kind}", w[key])


ARCH = {"tiny_bert": ("bert", write_bert), "tiny_llama": ("llama", write_llama),
        "tiny_nomic_bert": ("nomic-bert", write_nomic_bert)}


def write_gguf(name: str, path: Path) -> str:
    """Writes NAME's GGUF (F32) to PATH and returns its sha256."""
    arch, write = ARCH[name]
    out = gguf.GGUFWriter(str(path), arch)
    out.add_name(name)
    out.add_file_type(gguf.LlamaFileType.ALL_F32)
    out.add_quantization_version(gguf.GGML_QUANT_VERSION)
    write(out, hf_weights(name))
    out.write_header_to_file()
    out.write_kv_data_to_file()
    out.write_tensors_to_file()
    out.close()
    return hashlib.sha256(path.read_bytes()).hexdigest()


def golden_model(name: str) -> Path:
    """NAME's GGUF for a test: written into the build tree (LUMEN_GENERATED_DIR, set by CMake) and
    held to the sha256 its golden JSON was made from."""
    want = json.loads((GOLDEN_DIR / f"{name}.json").read_text(encoding="utf-8"))["gguf_sha256"]
    folder = Path(os.environ.get("LUMEN_GENERATED_DIR") or REPO / "build" / "generated")
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.gguf"
    if path.exists() and hashlib.sha256(path.read_bytes()).hexdigest() == want:
        return path
    # Tests run in parallel: each writes its own file and renames it into place (atomic).
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{name}.", suffix=".gguf")
    os.close(fd)
    got = write_gguf(name, Path(tmp))
    if got != want:
        os.unlink(tmp)
        raise AssertionError(f"{name}.gguf written by {Path(__file__).name} has sha256 {got}, but "
                             f"tests/golden/embeddings/{name}.json was made from {want}: the generator (or "
                             f"gguf/numpy) changed; rerun scripts/make_{name[5:]}_embedding_golden.py")
    os.replace(tmp, path)
    return path


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    for name in NAMES:
        print(name, write_gguf(name, out / f"{name}.gguf"))


if __name__ == "__main__":
    main()
