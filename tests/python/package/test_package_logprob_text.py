"""Logprob.decoded_token holds the token's text (the server's decoded_token), for the chosen
token and every alternative, in generated and prompt log-probabilities."""
import lumen
from conftest import greedy


def test_generated_logprobs_carry_each_tokens_text(llm):
    [out] = llm.generate("The capital of France is", greedy(6, logprobs=3))
    completion = out.outputs[0]
    tokenizer = llm.get_tokenizer()
    for token, entry in zip(completion.token_ids, completion.logprobs):
        assert len(entry) >= 3
        for token_id, logprob in entry.items():
            assert logprob.decoded_token is not None
            # SmolLM2's tokens here are whole characters: each decodes alone to its own text.
            assert logprob.decoded_token == tokenizer.decode([token_id])
    assert "".join(entry[t].decoded_token for t, entry in zip(completion.token_ids, completion.logprobs)) \
        == completion.text


def test_prompt_logprobs_carry_each_tokens_text(llm):
    [out] = llm.generate("Paris is a city", lumen.SamplingParams(max_tokens=1, prompt_logprobs=1, temperature=0))
    ids = out.prompt_token_ids
    assert out.prompt_logprobs[0] is None
    tokenizer = llm.get_tokenizer()
    for token, entry in zip(ids[1:], out.prompt_logprobs[1:]):
        assert entry[token].decoded_token == tokenizer.decode([token])
