"""No control token's text ever reaches a client in `text` or `content`. Beside
test_no_control_text.py (replies that end on their own, three named tokens), this one takes EVERY
control token from the GGUF itself (gguf-py, not Lumen), and covers streamed n > 1 and requests
where end tokens are sampled mid-text (ignore_eos with a logit_bias towards <|im_end|>), on both
endpoints, streamed and not, with best_of, beams and echo."""
import gguf
import pytest

from conftest import MODEL_NAME, model_path

CHAT_PROMPT = ("<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
               "<|im_start|>user\nSay hello.<|im_end|>\n<|im_start|>assistant\n")
MESSAGES = [{"role": "user", "content": "Say hello."}]


def control_tokens():
    reader = gguf.GGUFReader(str(model_path()))
    tokens = reader.fields["tokenizer.ggml.tokens"]
    types = reader.fields["tokenizer.ggml.token_type"]
    out = {}
    for i, (t, k) in enumerate(zip(tokens.data, types.data)):
        if int(types.parts[k][0]) == gguf.TokenType.CONTROL:
            out[i] = bytes(tokens.parts[t]).decode("utf-8", errors="replace")
    return out


CONTROL = control_tokens()
EOS = next(i for i, s in CONTROL.items() if s == "<|im_end|>")


def assert_clean(text, where):
    assert text is not None
    for special in CONTROL.values():
        assert special not in text, f"{special!r} in {where}: {text!r}"


# Modes: (extra request fields, whether a choice must end naturally with finish_reason stop).
MODES = {
    "greedy": ({"temperature": 0}, True),
    "n3": ({"n": 3, "seed": 1, "temperature": 0.7}, False),
    "eos_sampled_midway": ({"n": 2, "seed": 3, "extra_body": {"ignore_eos": True}, "logit_bias": {str(EOS): 4}}, False),
}
NONSTREAM_ONLY = {
    "best_of": ({"n": 2, "seed": 5, "extra_body": {"best_of": 3}}, False),
    "beam": ({"n": 2, "temperature": 0, "extra_body": {"use_beam_search": True, "best_of": 3}}, False),
}


@pytest.mark.parametrize("mode", [*MODES, *NONSTREAM_ONLY])
def test_chat_nonstream(client, mode):
    extra, must_stop = {**MODES, **NONSTREAM_ONLY}[mode]
    r = client.chat.completions.create(model=MODEL_NAME, messages=MESSAGES, max_tokens=60, **extra)
    for c in r.choices:
        assert_clean(c.message.content, f"chat {mode} choice {c.index}")
    if must_stop:
        assert r.choices[0].finish_reason == "stop"


@pytest.mark.parametrize("mode", MODES)
def test_chat_stream(client, mode):
    extra, must_stop = MODES[mode]
    texts, finish = {}, {}
    for chunk in client.chat.completions.create(model=MODEL_NAME, messages=MESSAGES, max_tokens=60, stream=True, **extra):
        for c in chunk.choices:
            texts[c.index] = texts.get(c.index, "") + (c.delta.content or "")
            if c.finish_reason:
                finish[c.index] = c.finish_reason
    assert texts
    for i, text in texts.items():
        assert_clean(text, f"chat stream {mode} choice {i}")
    if must_stop:
        assert finish[0] == "stop"


@pytest.mark.parametrize("mode", [*MODES, *NONSTREAM_ONLY])
def test_completions_nonstream(client, mode):
    extra, must_stop = {**MODES, **NONSTREAM_ONLY}[mode]
    r = client.completions.create(model=MODEL_NAME, prompt=CHAT_PROMPT, max_tokens=60, **extra)
    for c in r.choices:
        assert_clean(c.text, f"completions {mode} choice {c.index}")
    if must_stop:
        assert r.choices[0].finish_reason == "stop"


@pytest.mark.parametrize("mode", MODES)
def test_completions_stream(client, mode):
    extra, must_stop = MODES[mode]
    texts, finish = {}, {}
    for chunk in client.completions.create(model=MODEL_NAME, prompt=CHAT_PROMPT, max_tokens=60, stream=True, **extra):
        for c in chunk.choices:
            texts[c.index] = texts.get(c.index, "") + c.text
            if c.finish_reason:
                finish[c.index] = c.finish_reason
    for i, text in texts.items():
        assert_clean(text, f"completions stream {mode} choice {i}")
    if must_stop:
        assert finish[0] == "stop"


@pytest.mark.parametrize("stream", [False, True])
def test_completions_echo_adds_no_control_text_after_the_prompt(client, stream):
    # The echoed prompt is the caller's own text; what follows it must be clean.
    prompt = "Say hello to the world."
    kwargs = dict(model=MODEL_NAME, prompt=prompt, max_tokens=40, temperature=0, echo=True,
                  logit_bias={str(EOS): 4}, extra_body={"ignore_eos": True})
    if stream:
        text = "".join(c.choices[0].text for c in client.completions.create(stream=True, **kwargs) if c.choices)
    else:
        text = client.completions.create(**kwargs).choices[0].text
    assert text.startswith(prompt)
    assert_clean(text[len(prompt):], f"echo stream={stream}")


def test_end_token_still_listed_in_logprobs(client):
    r = client.completions.create(model=MODEL_NAME, prompt=CHAT_PROMPT, max_tokens=80, temperature=0, logprobs=1)
    c = r.choices[0]
    assert c.finish_reason == "stop"
    assert_clean(c.text, "completions with logprobs")
    # As OpenAI does, the end token is in the token list even though it is not in the text.
    assert c.logprobs.tokens[-1] == "<|im_end|>"
