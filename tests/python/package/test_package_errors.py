"""Bad arguments raise ValueError (lumen.LumenError, with Lumen's message) or TypeError, and
leave the engine working."""
import pytest

import lumen
from conftest import ENGINE_OPTIONS, greedy


@pytest.mark.parametrize("kwargs, message", [
    ({"temperature": -1.0}, "temperature"),
    ({"top_p": 0.0}, "top_p"),
    ({"n": 2, "best_of": 1}, "best_of"),
    ({"max_tokens": 0}, "max_tokens"),
    ({"logprobs": 21}, "logprobs"),
    ({"stop": [""]}, "stop"),
    ({"seed": -3}, "seed"),
])
def test_bad_sampling_values_raise_value_error(kwargs, message):
    with pytest.raises(lumen.LumenError, match=message) as error:
        lumen.SamplingParams(**kwargs)
    assert isinstance(error.value, ValueError)


@pytest.mark.parametrize("kwargs", [
    {"max_tokens": "16"}, {"temperature": "hot"}, {"n": 1.5}, {"stop": 5}, {"stop": ["a", 3]},
    {"logit_bias": {"a": 1.0}}, {"not_a_field": 1},
])
def test_wrong_sampling_types_raise_type_error(kwargs):
    with pytest.raises(TypeError):
        lumen.SamplingParams(**kwargs)


def test_engine_options_are_checked(model_path):
    with pytest.raises(TypeError, match="max_num_sequences"):
        lumen.LLM(model=model_path, max_num_sequences=4)
    with pytest.raises(TypeError, match="max_num_seqs must be an int"):
        lumen.LLM(model=model_path, max_num_seqs="4")
    with pytest.raises(ValueError, match="kv_cache_dtype"):
        lumen.LLM(model=model_path, kv_cache_dtype="int3")
    with pytest.raises(ValueError, match="speculative_config: unknown key \"lookahead\""):
        lumen.LLM(model=model_path, speculative_config={"method": "ngram", "num_speculative_tokens": 3,
                                                        "lookahead": 1})
    with pytest.raises(ValueError, match="max_model_len"):
        lumen.LLM(model=model_path, max_model_len=10**9)


def test_bad_model_file(tmp_path):
    with pytest.raises(ValueError):
        lumen.LLM(model=tmp_path / "missing.gguf")
    not_gguf = tmp_path / "x.gguf"
    not_gguf.write_bytes(b"not a model at all")
    with pytest.raises(lumen.LumenError):
        lumen.LLM(model=not_gguf)


def test_bad_prompts_run_nothing(llm):
    vocab = llm.get_tokenizer().vocab_size
    with pytest.raises(ValueError, match="vocabulary|token"):
        llm.generate([[1, 2, 3], [vocab + 5]], greedy(4))
    with pytest.raises(ValueError, match="context|max_model_len|room"):
        llm.generate([1] * ENGINE_OPTIONS["max_model_len"], greedy(4))
    with pytest.raises(ValueError):  # a bias on a token the model does not have
        llm.generate("Hi", greedy(4, logit_bias={vocab + 1: 1.0}))
    with pytest.raises(TypeError):
        llm.generate(42, greedy(4))
    with pytest.raises(TypeError):
        llm.generate("Hi", {"temperature": 0})
    with pytest.raises(ValueError, match="2 sampling parameter sets for 3 prompts"):
        llm.generate(["a", "b", "c"], [greedy(2), greedy(2)])
    with pytest.raises(ValueError):
        llm.get_tokenizer().decode([vocab + 1])
    # The engine is untouched: the next request runs.
    [out] = llm.generate("Hi", greedy(4, ignore_eos=True))
    assert len(out.outputs[0].token_ids) == 4
