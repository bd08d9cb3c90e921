"""A vocabulary GGUF that tokenizes with GPT-4o's o200k pre-tokenizer (tokenizer.ggml.pre
"gpt-4o", gpt-oss's): Llama 3's byte-level BPE vocabulary from ../shared/testdata with only its
pre-tokenizer name changed. No o200k vocabulary ships in a package we can install, and the
pre-tokenizer is what differs: the same vocabulary split by another pattern gives other ids
wherever the two patterns split differently (case changes inside a word, digits, slashes).

Shared by scripts/make_gpt4o_tokenizer_golden.py (which tokenizes with Hugging Face tokenizers)
and tests/python/test_tokenizer_gpt4o.py (which tokenizes with `lumen tokenize`)."""
from pathlib import Path

import gguf

# tokenizer.json's Split pattern for o200k (gpt-oss, GPT-4o).
O200K_PATTERN = (
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
    r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
    r"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+")

# Beyond the shared test strings: where o200k's pattern splits unlike Llama 3's.
EXTRA_CASES = [
    "HelloWorld and camelCaseWords in JSONParser's code",
    "ÉCOLE normale, Ωmega, ǅemal and ÀBC's",
    "path/to/file.txt\n// comment //\n",
    "12345678 and 3.14159 then x=1/2",
    "I'M HERE, YOU'RE THERE, we'Ll see",
    "MixedCASEwords AND lowerUPPER",
    "naïve café résumé e\u0301te\u0301",
    # Words Llama 3's vocabulary holds whole that o200k's pattern cuts at the case change.
    "iPhone, JavaScript and YouTube",
    "GitHub and PowerPoint",
    "macOS or McDonald",
    "http://example.com/a/b//c\n",
]


def write_gpt4o_vocab(source: Path, out: Path) -> None:
    """Copies the vocabulary GGUF `source` to `out` with tokenizer.ggml.pre set to "gpt-4o"."""
    reader = gguf.GGUFReader(str(source))
    arch = reader.fields["general.architecture"].contents()
    writer = gguf.GGUFWriter(str(out), arch)
    for name, field in reader.fields.items():
        if name.startswith("GGUF.") or name == "general.architecture":
            continue
        value = "gpt-4o" if name == "tokenizer.ggml.pre" else field.contents()
        vtype = field.types[0]
        sub = field.types[-1] if vtype == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(name, value, vtype, sub_type=sub)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def test_strings(inp: Path) -> list[str]:
    """The shared test strings (llama.cpp's test-tokenizer-0 format) and EXTRA_CASES."""
    cases = inp.read_text(encoding="utf-8").split("\n__ggml_vocab_test__\n")
    if cases and cases[-1] == "":
        cases.pop()
    return cases + EXTRA_CASES
