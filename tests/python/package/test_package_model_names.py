"""LLM(model=...) takes what `lumen run -m` takes: a path, or a catalog name resolved to its file
in the cache ($LUMEN_CACHE), with `lumen pull NAME` named when the model is not there."""
import pytest

import lumen
from conftest import ENGINE_OPTIONS, greedy


def test_a_catalog_name_loads_the_pulled_model(llm, model_path, monkeypatch):
    monkeypatch.setenv("LUMEN_CACHE", str(model_path.parent))
    by_name = lumen.LLM(model="smollm2", **ENGINE_OPTIONS)
    [out] = by_name.generate("The capital of France is", greedy(8))
    [expected] = llm.generate("The capital of France is", greedy(8))
    assert out.outputs[0].text == expected.outputs[0].text


def test_a_name_that_is_not_pulled_says_how_to_get_it(tmp_path, monkeypatch):
    monkeypatch.setenv("LUMEN_CACHE", str(tmp_path))
    with pytest.raises(lumen.LumenError, match="run `lumen pull smollm2`"):
        lumen.LLM(model="smollm2")


def test_an_existing_file_wins_over_a_catalog_name(model_path, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "smollm2").symlink_to(model_path)
    monkeypatch.setenv("LUMEN_CACHE", str(tmp_path / "empty"))
    assert lumen.LLM(model="smollm2", **ENGINE_OPTIONS).get_tokenizer().vocab_size == 49152
