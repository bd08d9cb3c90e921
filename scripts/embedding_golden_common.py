"""What scripts/make_*_embedding_golden.py share: writing the golden JSON beside the generated
model's sha256, and an optional check that llama.cpp's own converter, given the same weights in
the Hugging Face layout, writes the same tensors and vocabulary as scripts/make_tiny_embedding_models.py
(so the generated files are what a real conversion would give, not just what Lumen expects).

Needs torch and transformers (CPU): run from a venv that has them, never in CI."""
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from gguf import GGUFReader

sys.path.insert(0, str(Path(__file__).parent))
import make_tiny_embedding_models as tiny  # noqa: E402

TEXTS = [
    "Hello, world!",
    "The quick brown fox jumps over the lazy dog.",
    "Unaffable CAFÉ owners don't serve tea; they're playing.",
    "a",
    "Embeddings turn sentences into vectors: similar meaning, nearby points.",
    "中文 text, naïve résumé — rare-word xylophonist zebra",
]

# The converter names pre-tokenizers by a hash of known vocabularies' output; ours are none of
# them, so its guess is replaced by the name the generator writes.
CONVERT = ("import sys, runpy; root, pre = sys.argv[1], sys.argv[2]; sys.path.insert(0, root);"
           "sys.argv = [root + '/convert_hf_to_gguf.py'] + sys.argv[3:];"
           "import conversion.base as b; b.TextModel.get_vocab_base_pre = lambda self, t: pre;"
           "runpy.run_path(sys.argv[0], run_name='__main__')")

# Fields that name the file rather than describe the model.
NAMING = ("general.name", "general.size_label", "general.type", "general.basename", "general.finetune")


def fields(reader: GGUFReader) -> dict:
    return {f.name: f.contents() for f in reader.fields.values()
            if not f.name.startswith("GGUF.") and f.name not in NAMING}


def check_against_converter(name: str, hf_dir: Path, llama_cpp: Path, pre: str) -> None:
    """Converts HF_DIR with llama.cpp's convert_hf_to_gguf.py and asserts every tensor and every
    metadata field equals the generator's file."""
    with tempfile.TemporaryDirectory() as tmp:
        theirs_path, ours_path = Path(tmp) / "theirs.gguf", Path(tmp) / "ours.gguf"
        run = subprocess.run([sys.executable, "-c", CONVERT, str(llama_cpp), pre, str(hf_dir), "--outtype", "f32",
                              "--outfile", str(theirs_path)], capture_output=True, text=True)
        if run.returncode != 0:
            raise RuntimeError(f"convert_hf_to_gguf.py failed:\n{run.stderr[-3000:]}")
        tiny.write_gguf(name, ours_path)
        theirs, ours = GGUFReader(str(theirs_path)), GGUFReader(str(ours_path))
        a, b = fields(theirs), fields(ours)
        assert a.keys() == b.keys(), f"{name}: metadata keys differ: {sorted(a.keys() ^ b.keys())}"
        for key in a:
            same = np.allclose(a[key], b[key], rtol=1e-7) if isinstance(a[key], float) else a[key] == b[key]
            assert same, f"{name}: {key} is {a[key]!r} converted, {b[key]!r} generated"
        ta, tb = {t.name: t for t in theirs.tensors}, {t.name: t for t in ours.tensors}
        assert ta.keys() == tb.keys(), f"{name}: tensors differ: {sorted(ta.keys() ^ tb.keys())}"
        for key, t in ta.items():
            assert t.tensor_type == tb[key].tensor_type and list(t.shape) == list(tb[key].shape), key
            assert np.array_equal(np.asarray(t.data), np.asarray(tb[key].data)), f"{name}: {key} differs"
    print(f"{name}: llama.cpp's converter writes the same {len(ta)} tensors and {len(a)} fields")


def write_golden(name: str, about: str, cases: list) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        sha = tiny.write_gguf(name, Path(tmp) / f"{name}.gguf")
    out = tiny.GOLDEN_DIR / f"{name}.json"
    out.write_text(json.dumps({"about": about, "gguf_sha256": sha, "cases": cases}, indent=1, ensure_ascii=False)
                   + "\n", encoding="utf-8")
    print(f"wrote {out} (model sha256 {sha})")


def save_sentence_transformers_mean_pooling(model_dir: Path) -> None:
    """sentence-transformers' module files: the converter reads the pooling type from them."""
    (model_dir / "modules.json").write_text(json.dumps(
        [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
         {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]))
    (model_dir / "1_Pooling").mkdir()
    (model_dir / "1_Pooling/config.json").write_text(json.dumps({"pooling_mode_mean_tokens": True}))
