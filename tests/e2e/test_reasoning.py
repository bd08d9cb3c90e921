"""A reasoning model's replies through `lumen serve`: the <think> block goes to
message.reasoning_content (delta.reasoning_content when streamed) and the answer to content, as
llama-server and vLLM's reasoning parsers return them. The default model is no reasoning model,
so the server runs it with the built-in `deepseek` template (DeepSeek-R1's format: the prompt
opens the block unless enable_thinking is false) and each reply is forced by a one-way
guided_choice; what is tested is the split, the same streamed and not."""
import pytest

from conftest import LumenServer, MODEL_NAME

QUESTION = [{"role": "user", "content": "What is 2 + 2?"}]


@pytest.fixture(scope="module")
def server():
    s = LumenServer("--chat-template", "deepseek")
    yield s
    assert s.stop() == 0, "".join(s.log)


def chat(server, reply, **fields):
    body = {"model": MODEL_NAME, "messages": QUESTION, "max_tokens": 60, "temperature": 0, "guided_choice": [reply],
            **fields}
    r = server.post("/v1/chat/completions", body)
    assert r.status_code == 200, r.text
    return r.json()["choices"][0]


def streamed(server, reply, **fields):
    """(reasoning, content) put together from the deltas, and whether a delta ever held both."""
    client = server.client()
    reasoning, content, mixed = [], [], False
    extra = {"guided_choice": [reply], **fields}
    for chunk in client.chat.completions.create(model=MODEL_NAME, messages=QUESTION, max_tokens=60, temperature=0,
                                                stream=True, extra_body=extra):
        for choice in chunk.choices:
            r = getattr(choice.delta, "reasoning_content", None) or ""
            c = choice.delta.content or ""
            mixed = mixed or (bool(r) and bool(c))
            reasoning.append(r)
            content.append(c)
    return "".join(reasoning), "".join(content), mixed


def test_the_block_the_prompt_opened_is_reasoning(server):
    # enable_thinking: the template ends the prompt with "<think>\n", so the reply starts inside.
    reply = "Two and two make four.\n</think>\n\nFour."
    kwargs = {"chat_template_kwargs": {"enable_thinking": True}}
    choice = chat(server, reply, **kwargs)
    assert choice["message"]["reasoning_content"] == "Two and two make four.\n"
    assert choice["message"]["content"] == "Four."
    assert choice["finish_reason"] == "stop"
    reasoning, content, mixed = streamed(server, reply, **kwargs)
    assert (reasoning, content) == ("Two and two make four.\n", "Four.")
    assert not mixed  # reasoning and content never share a delta


def test_a_block_the_reply_opens_is_reasoning_too(server):
    # Without enable_thinking the prompt closes the block ("<think>\n</think>"); a reply that
    # opens its own (as Qwen3's do) is split the same way.
    reply = "<think>Count: 2, 3, 4.</think>\n\nFour."
    choice = chat(server, reply)
    assert choice["message"]["reasoning_content"] == "Count: 2, 3, 4."
    assert choice["message"]["content"] == "Four."
    assert streamed(server, reply)[:2] == ("Count: 2, 3, 4.", "Four.")
    # A plain answer has no reasoning_content at all.
    plain = chat(server, "Four.")
    assert plain["message"]["content"] == "Four." and "reasoning_content" not in plain["message"]


def test_reasoning_format_none_leaves_the_text_whole(server):
    reply = "<think>Count.</think>\n\nFour."
    choice = chat(server, reply, reasoning_format="none")
    assert choice["message"]["content"] == reply and "reasoning_content" not in choice["message"]
    assert streamed(server, reply, reasoning_format="none")[:2] == ("", reply)
    r = server.post("/v1/chat/completions", {"model": MODEL_NAME, "messages": QUESTION, "reasoning_format": "r1"})
    assert r.status_code == 400 and r.json()["error"]["param"] == "reasoning_format", r.text


def test_include_reasoning_false_drops_the_reasoning(server):
    # vLLM's field: the block is still taken out of content, and not returned.
    reply = "<think>Count.</think>\n\nFour."
    choice = chat(server, reply, include_reasoning=False)
    assert choice["message"]["content"] == "Four." and "reasoning_content" not in choice["message"]
    assert streamed(server, reply, include_reasoning=False)[:2] == ("", "Four.")


def test_a_template_without_reasoning_splits_nothing():
    # SmolLM2's own template writes no <think> blocks: its replies are never split.
    s = LumenServer()
    try:
        choice = chat(s, "<think>x</think>y")
        assert choice["message"]["content"] == "<think>x</think>y" and "reasoning_content" not in choice["message"]
    finally:
        assert s.stop() == 0, "".join(s.log)


def test_the_server_default_can_be_none():
    s = LumenServer("--chat-template", "deepseek", "--reasoning-format", "none")
    try:
        reply = "<think>x</think>\n\ny"
        assert chat(s, reply)["message"]["content"] == reply
        choice = chat(s, reply, reasoning_format="auto")  # a request may still ask for the split
        assert (choice["message"]["reasoning_content"], choice["message"]["content"]) == ("x", "y")
    finally:
        assert s.stop() == 0, "".join(s.log)
