"""Top-level request fields, through the official openai SDK: a field nobody defines (a typo) is a
400 naming it, as OpenAI answers; vLLM's and llama-server's extras that Lumen does not support are
accepted and named in the X-Lumen-Ignored-Fields header; and nothing the SDK itself sends is
refused (src/server/request_field_names.cc holds the lists)."""
import openai
import pytest

from conftest import MODEL_NAME

HEADER = "x-lumen-ignored-fields"
MESSAGES = [{"role": "user", "content": "Say hi"}]


@pytest.mark.parametrize("endpoint", ["chat", "completions"])
def test_a_misspelled_field_is_a_400_naming_it(client, endpoint):
    with pytest.raises(openai.BadRequestError) as info:
        if endpoint == "chat":
            client.chat.completions.create(model=MODEL_NAME, messages=MESSAGES, max_tokens=2,
                                           extra_body={"temprature": 0.2})
        else:
            client.completions.create(model=MODEL_NAME, prompt="Hi", max_tokens=2, extra_body={"temprature": 0.2})
    assert info.value.body["param"] == "temprature"
    assert info.value.body["type"] == "invalid_request_error"
    assert "'temprature' (did you mean 'temperature'?)" in info.value.body["message"]


def test_vllm_and_llama_server_extras_are_named_in_a_header(client):
    raw = client.chat.completions.with_raw_response.create(
        model=MODEL_NAME, messages=MESSAGES, max_tokens=2, temperature=0,
        extra_body={"include_stop_str_in_output": True, "mirostat": 2, "top_k": 5})
    assert raw.http_response.status_code == 200
    assert raw.headers[HEADER] == "include_stop_str_in_output, mirostat"  # top_k is read: not named
    assert raw.parse().choices[0].message.content is not None


def test_a_request_with_only_fields_lumen_reads_has_no_header(client):
    raw = client.completions.with_raw_response.create(model=MODEL_NAME, prompt="Hi", max_tokens=2, temperature=0,
                                                      extra_body={"top_k": 5, "min_tokens": 1})
    assert HEADER not in raw.headers


def test_every_argument_the_sdk_sends_is_accepted(client):
    raw = client.chat.completions.with_raw_response.create(
        model=MODEL_NAME, messages=MESSAGES, max_completion_tokens=3, temperature=0.5, top_p=0.9, n=2, seed=7,
        stop=["\n\n"], frequency_penalty=0.1, presence_penalty=0.1, logit_bias={"42": -1}, logprobs=True,
        top_logprobs=2, user="someone", metadata={"team": "a"}, store=False, service_tier="auto",
        parallel_tool_calls=True, response_format={"type": "text"}, stream=True,
        stream_options={"include_usage": True})
    assert raw.http_response.status_code == 200
    # What the SDK sends and Lumen does not act on is said, not refused.
    assert raw.headers[HEADER] == "metadata, service_tier, store, user"
    chunks = list(raw.parse())
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens > 0


def test_the_legacy_completion_arguments_are_accepted(client):
    r = client.completions.create(model=MODEL_NAME, prompt="Hi", max_tokens=2, best_of=2, n=1, echo=True, logprobs=1,
                                  user="someone", seed=3, stop="\n")
    assert r.choices[0].text.startswith("Hi")


@pytest.mark.parametrize("path,body", [("/tokenize", {"prompt": "Hi", "add_special_token": False}),
                                       ("/detokenize", {"tokens": [1], "add_special_token": False})])
def test_the_tokenizer_routes_name_unknown_fields_too(server, path, body):
    r = server.post(path, body)
    assert r.status_code == 400, r.text
    assert r.json()["error"]["param"] == "add_special_token"
