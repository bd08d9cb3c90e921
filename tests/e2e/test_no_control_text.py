"""No control token's text (<|im_end|>, <|endoftext|>, ...) reaches a client in `content` or `text`,
on any endpoint or delivery mode, for replies that end on their own (the end-of-generation token is
the last one generated). It may still appear among log-probability tokens, as OpenAI's do."""
import pytest

from conftest import MODEL_NAME

SYSTEM = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"
MESSAGES = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "Say hello."}]
# The same conversation as the chat endpoint renders it (SmolLM2's template), for /v1/completions.
RAW_PROMPT = (f"<|im_start|>system\n{SYSTEM}<|im_end|>\n<|im_start|>user\nSay hello.<|im_end|>\n"
              "<|im_start|>assistant\n")
# Every control token of the default model's vocabulary that a reply could end on or contain.
CONTROL_TEXTS = ["<|im_end|>", "<|im_start|>", "<|endoftext|>"]


def assert_clean(text):
    assert text, "empty reply"
    for control in CONTROL_TEXTS:
        assert control not in text, f"{control!r} in {text!r}"


@pytest.fixture(scope="module")
def control_ids(server):
    ids = [server.tokenize(prompt=t, add_special_tokens=False) for t in CONTROL_TEXTS]
    assert all(len(i) == 1 for i in ids), ids  # each is one control token
    return {i[0] for i in ids}


def test_chat_whole_stops_without_end_token_text(client):
    r = client.chat.completions.create(model=MODEL_NAME, messages=MESSAGES, max_tokens=200, temperature=0)
    assert r.choices[0].finish_reason == "stop"
    assert_clean(r.choices[0].message.content)


def test_chat_streamed_stops_without_end_token_text(client):
    pieces, finish = [], None
    for chunk in client.chat.completions.create(model=MODEL_NAME, messages=MESSAGES, max_tokens=200,
                                                temperature=0, stream=True):
        for choice in chunk.choices:
            pieces.append(choice.delta.content or "")
            finish = choice.finish_reason or finish
    assert finish == "stop"
    assert_clean("".join(pieces))


def test_chat_n_and_logprobs_keep_the_token_but_not_its_text(client):
    r = client.chat.completions.create(model=MODEL_NAME, messages=MESSAGES, max_tokens=200, temperature=0.7,
                                       seed=5, n=3, logprobs=True, top_logprobs=2)
    stopped = [c for c in r.choices if c.finish_reason == "stop"]
    assert stopped, "no choice ended on its own"
    for c in r.choices:
        assert_clean(c.message.content)
    # The end token is reported among the log-probabilities (OpenAI lists every generated token).
    assert any(t.token == "<|im_end|>" for t in stopped[0].logprobs.content)


@pytest.mark.parametrize("stream", [False, True])
def test_completions_stop_without_end_token_text(client, stream):
    kw = dict(model=MODEL_NAME, prompt=RAW_PROMPT, max_tokens=200, temperature=0)
    if not stream:
        r = client.completions.create(**kw)
        text, finish = r.choices[0].text, r.choices[0].finish_reason
    else:
        pieces, finish = [], None
        for chunk in client.completions.create(stream=True, **kw):
            for choice in chunk.choices:
                pieces.append(choice.text)
                finish = choice.finish_reason or finish
        text = "".join(pieces)
    assert finish == "stop"
    assert_clean(text)


def test_completions_best_of_and_beams(client):
    r = client.completions.create(model=MODEL_NAME, prompt=RAW_PROMPT, max_tokens=200, temperature=0.7,
                                  seed=3, n=2, best_of=4)
    for c in r.choices:
        assert_clean(c.text)
    r = client.completions.create(model=MODEL_NAME, prompt=RAW_PROMPT, max_tokens=200, n=2,
                                  extra_body={"use_beam_search": True, "best_of": 3, "early_stopping": True})
    for c in r.choices:
        assert c.finish_reason == "stop"
        assert_clean(c.text)


def test_echo_of_a_token_prompt_leaves_control_tokens_out(server, client, control_ids):
    ids = server.tokenize(prompt=RAW_PROMPT, add_special_tokens=False)
    assert control_ids & set(ids)
    r = client.completions.create(model=MODEL_NAME, prompt=ids, max_tokens=200, temperature=0, echo=True)
    assert r.choices[0].finish_reason == "stop"
    text = r.choices[0].text
    assert_clean(text)
    assert text.startswith("system\n" + SYSTEM)


def test_skip_special_tokens_false_keeps_the_text(client):
    r = client.completions.create(model=MODEL_NAME, prompt=RAW_PROMPT, max_tokens=200, temperature=0,
                                  extra_body={"skip_special_tokens": False})
    assert r.choices[0].finish_reason == "stop"
    assert r.choices[0].text.endswith("<|im_end|>")
