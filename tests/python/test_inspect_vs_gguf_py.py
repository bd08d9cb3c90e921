"""`lumen inspect --json` must agree with gguf-py's reading of the same file, on the real models
and on synthetic ones."""
import json

import numpy as np
import pytest
from gguf import GGUFReader, GGUFValueType

from conftest import REAL_MODELS, real_model, run_lumen


def inspect(path):
    return json.loads(run_lumen("inspect", "--json", path).stdout)


def scalar(reader, key, default=None):
    field = reader.fields.get(key)
    if field is None:
        return default
    return field.contents()


def compare_with_gguf_py(path):
    """Lumen's report on the file, and gguf-py's reader of it (parsing a vocabulary of 150k
    tokens takes gguf-py seconds: callers reuse it)."""
    report = inspect(path)
    reader = GGUFReader(path)

    user_fields = [k for k in reader.fields if not k.startswith("GGUF.")]
    assert report["version"] == scalar(reader, "GGUF.version")
    assert report["metadata_count"] == len(user_fields)
    assert report["alignment"] == scalar(reader, "general.alignment", 32)
    assert report["architecture"] == scalar(reader, "general.architecture")
    assert report["name"] == scalar(reader, "general.name", "")

    # Tensor table: names, types, shapes, sizes and absolute offsets, in file order.
    assert len(report["tensors"]) == len(reader.tensors)
    totals = {}
    for ours, theirs in zip(report["tensors"], reader.tensors):
        assert ours["name"] == theirs.name
        assert ours["type"] == theirs.tensor_type.name
        assert ours["shape"] == [int(d) for d in theirs.shape]
        assert ours["elements"] == int(theirs.n_elements)
        assert ours["bytes"] == int(theirs.n_bytes)
        assert report["data_offset"] + ours["offset"] == int(theirs.data_offset)
        t = totals.setdefault(theirs.tensor_type.name, [0, 0, 0])
        t[0] += 1
        t[1] += int(theirs.n_elements)
        t[2] += int(theirs.n_bytes)
    assert {t["type"]: [t["count"], t["elements"], t["bytes"]] for t in report["totals_by_type"]} == totals
    assert report["total_bytes"] == sum(t[2] for t in totals.values())

    # Hyperparameters: each value is the file's key, or the documented default.
    arch = report["architecture"]
    hp = report["hparams"]
    k = lambda suffix, default=None: scalar(reader, f"{arch}.{suffix}", default)
    assert hp["context_length"] == k("context_length")
    assert hp["block_count"] == k("block_count")
    assert hp["embedding_length"] == k("embedding_length")
    assert hp["feed_forward_length"] == k("feed_forward_length")
    assert hp["head_count"] == k("attention.head_count")
    assert hp["head_count_kv"] == k("attention.head_count_kv", hp["head_count"])
    assert hp["head_dim"] == k("attention.key_length", hp["embedding_length"] // hp["head_count"])
    n_tokens = len(reader.fields["tokenizer.ggml.tokens"].data)
    assert hp["vocab_size"] == k("vocab_size", n_tokens)
    assert np.float32(hp["rope_freq_base"]) == np.float32(k("rope.freq_base", 10000.0))
    assert np.float32(hp["norm_eps"]) == np.float32(k("attention.layer_norm_rms_epsilon"))
    assert hp["sliding_window"] == k("attention.sliding_window", 0)

    tok = report["tokenizer"]
    assert tok["model"] == scalar(reader, "tokenizer.ggml.model")
    assert tok["pre"] == scalar(reader, "tokenizer.ggml.pre", "")
    assert tok["tokens"] == n_tokens
    merges = reader.fields.get("tokenizer.ggml.merges")
    assert tok["merges"] == (len(merges.data) if merges else 0)
    assert tok["bos_id"] == scalar(reader, "tokenizer.ggml.bos_token_id")
    assert tok["eos_id"] == scalar(reader, "tokenizer.ggml.eos_token_id")
    return report, reader


@pytest.mark.parametrize("name", REAL_MODELS)
def test_real_model_matches_gguf_py(name):
    report, _ = compare_with_gguf_py(real_model(name))
    assert report["tensors"], "a real model has tensors"


def test_text_output_names_the_essentials():
    out = run_lumen("inspect", real_model(REAL_MODELS[0])).stdout.decode()
    for needle in ["architecture:  llama", "layers:        30", "heads:         9 query, 3 key/value",
                   "vocab:         49152", "byte-level BPE", "token_embd.weight", "Q4_1", "total"]:
        assert needle in out, needle


@pytest.mark.parametrize("preset,type_name", [("smollm2-135m", "Q4_K"), ("qwen2-0.5b", "Q8_0"),
                                              ("llama-1b", "Q4_0")])
def test_synthetic_model_matches_gguf_py(preset, type_name, tmp_gguf):
    run_lumen("synth", preset, "-o", tmp_gguf, "--type", type_name, "--layers", "1")
    report, reader = compare_with_gguf_py(tmp_gguf)
    assert report["architecture"] == ("qwen2" if preset.startswith("qwen2") else "llama")
    # gguf-py dequantizes our random weights to sane values: mean ~0, std ~0.02.
    from gguf.quants import dequantize
    tensor = next(t for t in reader.tensors if t.name == "blk.0.attn_v.weight")
    values = dequantize(tensor.data, tensor.tensor_type)
    assert abs(float(values.mean())) < 2e-3
    assert 0.015 < float(values.std()) < 0.025
