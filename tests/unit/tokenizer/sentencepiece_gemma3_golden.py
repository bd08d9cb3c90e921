#!/usr/bin/env python3
"""Regenerates sentencepiece_gemma3_golden.txt: what Google's sentencepiece library makes of
Gemma 3's vocabulary, as an independent reference for Lumen's SentencePiece BPE model.

The script rebuilds a SentencePiece BPE model (ModelProto) from the GGUF's tokenizer.ggml.*
arrays: the same pieces, scores and types, byte fallback on, an identity normalizer that only
escapes spaces as U+2581, and the dummy prefix as the GGUF says (off for Gemma 3). User-defined
pieces go in as normal ones: Lumen's model sees one plain segment, the Tokenizer facade splits
user-defined tokens out before (as llama.cpp does), so the reference must not do that itself.

Before writing anything it checks the construction on llama.cpp's Llama 2 and Phi-3 vectors
(expected ids from Hugging Face tokenizers), which it must reproduce exactly.

Output lines:
  text HEX ID...   the ids for the UTF-8 bytes HEX (one segment, start of text)
  token ID ID...   a normal token whose own text does not encode as that token alone

Needs: pip install sentencepiece protobuf gguf numpy
Usage: sentencepiece_gemma3_golden.py [GEMMA_GGUF] [TESTDATA_DIR]
"""
import os
import random
import sys

from gguf import GGUFReader
from sentencepiece import SentencePieceProcessor
from sentencepiece import sentencepiece_model_pb2 as pb

HERE = os.path.dirname(os.path.abspath(__file__))
SEPARATOR = "\n__ggml_vocab_test__\n"


def read_vocab(path):
    fields = GGUFReader(path).fields

    def array(key, convert):
        field = fields[key]
        return [convert(field.parts[i]) for i in field.data]

    def scalar(key):
        if key not in fields:
            return None
        field = fields[key]
        return field.parts[field.data[0]].tolist()[0]

    tokens = array("tokenizer.ggml.tokens", lambda part: bytes(part).decode("utf-8"))
    types = array("tokenizer.ggml.token_type", lambda part: int(part[0]))
    scores = array("tokenizer.ggml.scores", lambda part: float(part[0]))
    unknown = scalar("tokenizer.ggml.unknown_token_id")
    prefix = scalar("tokenizer.ggml.add_space_prefix")
    return tokens, types, scores, unknown, True if prefix is None else bool(prefix)


def build_processor(path):
    tokens, types, scores, unknown, add_prefix = read_vocab(path)
    kind = pb.ModelProto.SentencePiece.Type
    # ggml token types: 1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte.
    by_ggml_type = {1: kind.NORMAL, 2: kind.CONTROL, 3: kind.CONTROL, 4: kind.NORMAL,
                    5: kind.UNUSED, 6: kind.BYTE}
    model = pb.ModelProto()
    for i, (text, ggml_type, score) in enumerate(zip(tokens, types, scores)):
        piece = model.pieces.add()
        piece.piece = text
        piece.score = score
        # sentencepiece wants exactly one UNKNOWN piece: the one the GGUF names.
        piece.type = kind.UNKNOWN if i == unknown else by_ggml_type[ggml_type]
    trainer = model.trainer_spec
    trainer.model_type = pb.TrainerSpec.BPE
    trainer.byte_fallback = True
    trainer.unk_id = unknown
    trainer.bos_id = trainer.eos_id = trainer.pad_id = -1
    normalizer = model.normalizer_spec
    normalizer.name = "identity"
    normalizer.add_dummy_prefix = add_prefix
    normalizer.remove_extra_whitespaces = False
    normalizer.escape_whitespaces = True
    processor = SentencePieceProcessor()
    processor.LoadFromSerializedProto(model.SerializeToString())
    return processor, tokens, types


def encode(processor, text):
    return processor.EncodeAsIds(text) if text else []


def check_construction(testdata):
    for name in ("ggml-vocab-llama-spm.gguf", "ggml-vocab-phi-3.gguf"):
        path = os.path.join(testdata, "tokenizer", name)
        processor, _, _ = build_processor(path)
        with open(path + ".inp", encoding="utf-8") as f:
            cases = f.read().split(SEPARATOR)[:-1]
        with open(path + ".out", encoding="utf-8") as f:
            expected = f.read().split("\n")
        for text, ids in zip(cases, expected):
            want = [int(x) for x in ids.split()]
            if encode(processor, text) != want:
                sys.exit(f"reference construction disagrees with {name} on {text!r}")
        print(f"{name}: {len(cases)} vectors reproduced")
    return cases  # the .inp texts are good Gemma inputs too


CORPUS = [
    "Hello world", " Hello world", "Hello, world! How are you today?",
    "The quick brown fox jumps over the lazy dog.",
    "int main(int argc, char** argv) {\n    return argv[0][0] == '\\0';\n}\n",
    "def f(x):\n\tif x:\n\t\treturn [i ** 2 for i in range(x)]  # squares\n",
    "for (auto& [key, value] : map) { std::cout << key << \" -> \" << value << '\\n'; }",
    "<html><body><table><tr><td>cell</td></tr></table></body></html>",
    "<td> </td><b> </b> x > </y> >  </  >\t</ a >   </",  # Gemma 3 has the piece ">▁</"
    "SELECT name, COUNT(*) FROM users WHERE age >= 18 GROUP BY name;",
    "東京は日本の首都です。", "我想在apple工作1314151天～", "한국어 텍스트도 있습니다.",
    "Emoji: 🦙🚀😶‍🌫️ 👩🏽‍💻 🇫🇷 ✅", "🦙🦙🦙 🦙", "😀😃😄😁😆😅😂🤣",
    "     leading, trailing and  double   spaces     ", "a  b   c    d",
    "\n\n\n", "\t\t \r\n \u00a0\u2003\u3000", "line one\nline two\r\nline three\n\n",
    "Mixed: Ελληνικά русский עברית العربية हिन्दी ไทย ភាសាខ្មែរ",
    "Combining: e\u0301 a\u030a\u0301 Z\u0351\u034c\u0342",
    "Private use \ue000 and plane 16 \U0010ffff and U+FFFD \ufffd",
    "<start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\n",
    "<bos><eos><pad><unk><mask> <unused0> [multimodal] <start_of_image>",
    "<0x41> <0xFF> <0x", "1234567890 3.14159 1e-9 0xDEADBEEF 1,000,000",
    "YYYY-MM-DD yyyy diffformul ::::::::", "https://example.com/path?q=1&r=two#frag",
    "C'est déjà l'été. Über Größe. ¿Qué tal? Cửa Việt",
    "x" * 300, " " * 40, "ab" * 100, "!" * 64, "-" * 80 + "=" * 80,
]


def random_texts(tokens, types, count, seed=1234):
    """Concatenations of random normal pieces: many competing merges across boundaries."""
    rng = random.Random(seed)
    normal = [t.replace("\u2581", " ") for t, ty in zip(tokens, types) if ty == 1]
    return ["".join(rng.choice(normal) for _ in range(rng.randint(5, 40))) for _ in range(count)]


def main():
    gemma = sys.argv[1] if len(sys.argv) > 1 else os.path.expanduser(
        "~/.cache/lumen/models/gemma-3-270m-q4_k_m.gguf")
    testdata = sys.argv[2] if len(sys.argv) > 2 else os.path.join(
        HERE, "..", "..", "..", "..", "shared", "testdata")
    inp_cases = check_construction(testdata)
    processor, tokens, types = build_processor(gemma)
    lines = []
    texts = CORPUS + inp_cases + random_texts(tokens, types, 40)
    for text in dict.fromkeys(texts):  # unique, in order
        if not text:
            continue
        ids = " ".join(str(i) for i in encode(processor, text))
        lines.append(f"text {text.encode('utf-8').hex()} {ids}")
    exceptions = 0
    for i, (text, ggml_type) in enumerate(zip(tokens, types)):
        if ggml_type != 1:
            continue
        ids = encode(processor, text.replace("\u2581", " "))
        if ids != [i]:
            lines.append(f"token {i} " + " ".join(str(x) for x in ids))
            exceptions += 1
    out = os.path.join(HERE, "sentencepiece_gemma3_golden.txt")
    with open(out, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    print(f"{out}: {len(lines) - exceptions} texts, {exceptions} token exceptions")


if __name__ == "__main__":
    main()
