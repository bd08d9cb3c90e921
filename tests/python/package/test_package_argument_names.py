"""A misspelled keyword of LLM, AsyncEngine or SamplingParams raises lumen.UnknownArgumentError
(a LumenError, and a TypeError as Python's own) saying which name was meant."""
import pytest

import lumen
from conftest import ENGINE_OPTIONS


@pytest.mark.parametrize("typo, meant", [("temprature", "temperature"), ("max_token", "max_tokens"),
                                         ("top_kk", "top_k"), ("stop_token_id", "stop_token_ids")])
def test_a_misspelled_sampling_keyword_says_what_was_meant(typo, meant):
    with pytest.raises(lumen.UnknownArgumentError, match=f"'{typo}'; did you mean {meant}\\?") as error:
        lumen.SamplingParams(**{typo: 1})
    assert isinstance(error.value, lumen.LumenError) and isinstance(error.value, TypeError)


def test_a_keyword_like_no_other_lists_them_all():
    with pytest.raises(lumen.UnknownArgumentError, match="it has: .*temperature.*early_stopping"):
        lumen.SamplingParams(zzzzzz=1)


def test_every_attribute_is_a_keyword():
    # The accepted names are the attributes: each one round-trips through the constructor.
    defaults = lumen.SamplingParams()
    for name in ("n", "temperature", "top_p", "top_k", "min_p", "typical_p", "penalty_last_n", "max_tokens",
                 "min_tokens", "ignore_eos", "skip_special_tokens", "use_beam_search", "length_penalty",
                 "early_stopping", "presence_penalty", "frequency_penalty", "repetition_penalty"):
        assert getattr(lumen.SamplingParams(**{name: getattr(defaults, name)}), name) == getattr(defaults, name)


def test_a_misspelled_engine_option_says_what_was_meant(model_path):
    with pytest.raises(lumen.UnknownArgumentError, match="LLM has no argument 'max_num_seq'; did you mean max_num_seqs"):
        lumen.LLM(model=model_path, max_num_seq=4)
    with pytest.raises(lumen.UnknownArgumentError, match="AsyncEngine has no argument 'kv_cache_dtpye'"):
        lumen.AsyncEngine(model_path, kv_cache_dtpye="q8_0", **ENGINE_OPTIONS)


def test_wrong_types_are_still_type_errors_not_unknown_names():
    with pytest.raises(TypeError) as error:
        lumen.SamplingParams(temperature="hot")
    assert not isinstance(error.value, lumen.UnknownArgumentError)
