"""seed=-1 asks for a random seed, as `lumen run --seed -1` and the server's "seed": -1 do; before,
Python refused it. Seeds up to 2^64-1 are taken, as the server takes them."""
import pytest

import lumen

PROMPT = "Once upon a time"


def sample(llm, seed):
    [out] = llm.generate(PROMPT, lumen.SamplingParams(seed=seed, max_tokens=12, temperature=1.0))
    return out.outputs[0].text


def test_minus_one_is_random(llm):
    assert lumen.SamplingParams(seed=-1).seed is None
    assert len({sample(llm, -1) for _ in range(4)}) > 1


def test_a_seed_still_replays_up_to_the_largest(llm):
    assert sample(llm, 2**64 - 1) == sample(llm, 2**64 - 1)
    assert lumen.SamplingParams(seed=2**64 - 1).seed == 2**64 - 1


@pytest.mark.parametrize("seed", [-2, 2**64])
def test_other_seeds_out_of_range_are_refused(seed):
    with pytest.raises(lumen.LumenError, match="-1 \\(a random seed\\) or an integer from 0 to 18446744073709551615"):
        lumen.SamplingParams(seed=seed)


def test_the_engine_seed_takes_minus_one_too(model_path):
    from conftest import ENGINE_OPTIONS
    llm = lumen.LLM(model=model_path, seed=-1, **ENGINE_OPTIONS)
    assert len({sample(llm, None) for _ in range(3)}) > 1
