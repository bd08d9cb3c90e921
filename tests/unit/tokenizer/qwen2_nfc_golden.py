#!/usr/bin/env python3
"""Regenerates qwen2_nfc_golden.txt: what Hugging Face tokenizers makes of text that NFC
normalization changes, with Qwen 2's vocabulary (which normalizes) and GPT-2's (which does not),
as the independent reference for Lumen's NFC normalizer (unicode_normalizer.cc).

No Qwen 2 tokenizer.json can be downloaded here, so the script rebuilds the pipeline that Qwen 2's
tokenizer.json declares from the shared vocab GGUF's tokenizer.ggml.* arrays: normalizer NFC,
pre-tokenizer Split(Qwen 2's regex, isolated) then ByteLevel(no prefix space, no regex), model
BPE with the GGUF's tokens and merges. GPT-2's is BPE with ByteLevel(regex) and no normalizer.
Added tokens are left out: the plain-text cases below hold none, and Lumen's Tokenizer facade
splits them out before its model sees the text.

Before writing anything it checks each construction on llama.cpp's vectors for that vocabulary
(expected ids from Hugging Face tokenizers), which it must reproduce exactly.

Invalid UTF-8 cannot reach Hugging Face (Python and Rust strings are valid); Lumen reads it as
U+FFFD, one per maximal ill-formed subpart, which is what bytes.decode("utf-8", "replace") does,
so those cases are tokenized by the reference in that decoded form and stored as raw bytes.

Output lines:
  VOCAB HEX ID...   the ids for the UTF-8 (or raw) bytes HEX, tokenized as one plain text

Needs: pip install tokenizers gguf numpy
Usage: qwen2_nfc_golden.py [TESTDATA_DIR]
"""
import os
import sys
import unicodedata

from gguf import GGUFReader
from tokenizers import Regex, Tokenizer, models, normalizers, pre_tokenizers

HERE = os.path.dirname(os.path.abspath(__file__))
SEPARATOR = "\n__ggml_vocab_test__\n"
QWEN2_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|"
                 r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")


def read_vocab(path):
    fields = GGUFReader(path).fields

    def strings(key):
        field = fields[key]
        return [bytes(field.parts[i]).decode("utf-8") for i in field.data]

    return strings("tokenizer.ggml.tokens"), strings("tokenizer.ggml.merges")


def build(path, qwen2):
    tokens, merges = read_vocab(path)
    vocab = {text: i for i, text in enumerate(tokens)}
    bpe = models.BPE(vocab=vocab, merges=[tuple(m.split(" ", 1)) for m in merges])
    tok = Tokenizer(bpe)
    if qwen2:
        tok.normalizer = normalizers.NFC()
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(QWEN2_PATTERN), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False),
        ])
    else:
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    return tok


def encode(tok, data):
    text = data.decode("utf-8", "replace")
    return tok.encode(text, add_special_tokens=False).ids if text else []


def check_construction(tok, path):
    with open(path + ".inp", encoding="utf-8") as f:
        cases = f.read().split(SEPARATOR)[:-1]
    with open(path + ".out", encoding="utf-8") as f:
        expected = f.read().split("\n")
    for text, ids in zip(cases, expected):
        if encode(tok, text.encode("utf-8")) != [int(x) for x in ids.split()]:
            sys.exit(f"reference construction disagrees with {path} on {text!r}")
    print(f"{os.path.basename(path)}: {len(cases)} vectors reproduced")


# Each changes under NFC (checked below), except the invalid UTF-8 cases' valid neighbours.
CASES = [
    "e\u0301", "cafe\u0301", "Cafe\u0301 de\u0301ja\u0300 vu, re\u0301sume\u0301",
    "A\u030a \u212b \u2126 \u00c5ngstr\u00f6m",  # Å from A + ring and from the Angstrom sign; Ohm sign
    "Z\u0351\u034c\u0342 a\u030a\u0301 o\u0308\u0304",  # marks that compose, one that does not
    "a\u0316\u0301 a\u0301\u0316",  # out of canonical order: both become á + U+0316
    "\u1100\u1161\u11a8 \u1100\u1161 \ud55c\uad6d\uc5b4",  # conjoining jamo -> Hangul syllables
    "\u0915\u093c \u0958",  # Devanagari QA is a composition exclusion: stays decomposed
    "\u03b1\u0313\u0300\u0345 \u1f00\u0300",  # Greek: four code points -> one
    "\uf900 \u2000 \u0344",  # CJK compatibility ideograph, en quad, a mark with a two-mark decomposition
    "Vie\u0323\u0302t Nam, Tie\u0302\u0301ng Vie\u0323\u0302t",
    "x" + "\u0316\u0301" * 40 + "y",  # a long run of marks in two classes (the counting sort)
    "e" + "\u0301\u0316\u0345\u05b0" * 30,  # four classes, interleaved
    "\u0301leading mark and trailing e\u0301",
    "n\u0303 " * 20 + "fin",
]
INVALID = [
    b"e\xcc\x81\xff\xcc\x81",  # a stray byte between two marks: U+FFFD blocks nothing it follows
    b"caf\xc3e\xcc\x81",  # a truncated sequence before the base letter
    b"\xcc e\xcc\x81 \xe0\x80",
]


def main():
    testdata = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        HERE, "..", "..", "..", "..", "shared", "testdata")
    tokdir = os.path.join(testdata, "tokenizer")
    lines = []
    for vocab, qwen2 in (("qwen2", True), ("gpt-2", False)):
        path = os.path.join(tokdir, f"ggml-vocab-{vocab}.gguf")
        tok = build(path, qwen2)
        check_construction(tok, path)
        for text in CASES:
            if unicodedata.normalize("NFC", text) == text:
                sys.exit(f"case {text!r} is in NFC already")
        for data in [t.encode("utf-8") for t in CASES] + INVALID:
            lines.append(f"{vocab} {data.hex()} " + " ".join(str(i) for i in encode(tok, data)))
    out = os.path.join(HERE, "qwen2_nfc_golden.txt")
    with open(out, "w", encoding="ascii") as f:
        f.write("\n".join(lines) + "\n")
    print(f"{out}: {len(lines)} lines")


if __name__ == "__main__":
    main()
