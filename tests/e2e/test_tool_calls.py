"""Tool calling through `lumen serve` with the official openai SDK: a full round trip (the model
calls a tool, the tool's result goes back as a `tool` message, the model answers), streamed and
not, in the three call formats Lumen speaks: Generic (SmolLM2's own template, which knows no
tools), Hermes (`--chat-template qwen2.5`) and Llama 3 JSON (`--chat-template llama3`). With
tool_choice "required" or a named function the call is constrained by the function's parameter
schema, so even this 135M model's calls always parse and validate. Lumen's own wrapper (the
Generic format's {"tool_calls": ...} / {"content": ...} JSON, a half-written call) never reaches
the client as content: a reply cut by max_tokens is reported as cut."""
import json

import jsonschema
import pytest

from conftest import LumenServer, MODEL_NAME

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "The current weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 30},
                                                    "unit": {"enum": ["celsius", "fahrenheit"]}},
                   "required": ["city", "unit"], "additionalProperties": False}}}
TIME = {"type": "function", "function": {
    "name": "get_time", "description": "The local time in a time zone",
    "parameters": {"type": "object", "properties": {"zone": {"type": "string", "maxLength": 30}},
                   "required": ["zone"], "additionalProperties": False}}}
TOOLS = [WEATHER, TIME]
QUESTION = [{"role": "user", "content": "What is the weather in Paris?"}]


def schema_of(name):
    return next(t["function"]["parameters"] for t in TOOLS if t["function"]["name"] == name)


def streamed(client, **kwargs):
    """The streamed reply, put together from its deltas: (content, [(id, name, arguments)], finish)."""
    content, calls, finish = [], {}, None
    for chunk in client.chat.completions.create(stream=True, **kwargs):
        for choice in chunk.choices:
            content.append(choice.delta.content or "")
            for call in choice.delta.tool_calls or []:
                entry = calls.setdefault(call.index, ["", "", ""])
                entry[0] += call.id or ""
                entry[1] += call.function.name or ""
                entry[2] += call.function.arguments or ""
            finish = choice.finish_reason or finish
    return "".join(content), [tuple(calls[k]) for k in sorted(calls)], finish


@pytest.fixture(scope="module", params=["generic", "qwen2.5", "llama3"])
def server(request):
    s = LumenServer() if request.param == "generic" else LumenServer("--chat-template", request.param)
    s.format = request.param
    yield s
    assert s.stop() == 0, "".join(s.log)


def test_round_trip_with_the_openai_sdk(server):
    client = server.client()
    # One call per reply: greedy decoding of a 135M model would repeat a call until max_tokens
    # where parallel calls are allowed (their parsing is covered by the unit tests).
    common = dict(model=MODEL_NAME, temperature=0, max_tokens=120, tools=TOOLS, parallel_tool_calls=False)

    # 1. The model must call a tool: a valid call of an offered function.
    r = client.chat.completions.create(messages=QUESTION, tool_choice="required", **common)
    choice = r.choices[0]
    assert choice.finish_reason == "tool_calls", choice
    assert choice.message.content is None
    calls = choice.message.tool_calls
    assert calls and all(c.type == "function" and c.id.startswith("call_") for c in calls)
    for c in calls:
        jsonschema.validate(json.loads(c.function.arguments), schema_of(c.function.name))

    # The same streamed: the same call, in delta form.
    content, streamed_calls, finish = streamed(client, messages=QUESTION, tool_choice="required", **common)
    assert finish == "tool_calls" and content == ""
    assert [(name, json.loads(args)) for _, name, args in streamed_calls] == \
        [(c.function.name, json.loads(c.function.arguments)) for c in calls]

    # 2. The tool's result goes back; the model answers (or calls again: both are valid replies).
    history = QUESTION + [
        {"role": "assistant", "content": None,
         "tool_calls": [{"id": c.id, "type": "function",
                         "function": {"name": c.function.name, "arguments": c.function.arguments}} for c in calls]},
    ] + [{"role": "tool", "tool_call_id": c.id, "content": "18 degrees, sunny"} for c in calls]
    r = client.chat.completions.create(messages=history, tool_choice="auto", **common)
    final = r.choices[0]
    assert final.finish_reason in ("stop", "tool_calls", "length")
    if final.finish_reason == "tool_calls":
        for c in final.message.tool_calls:
            jsonschema.validate(json.loads(c.function.arguments), schema_of(c.function.name))
    else:
        assert isinstance(final.message.content, str) and final.message.content.strip()
        assert "<tool_call>" not in final.message.content
    content, streamed_calls, finish = streamed(client, messages=history, tool_choice="auto", **common)
    assert finish == final.finish_reason
    assert content == (final.message.content or "")
    assert len(streamed_calls) == len(final.message.tool_calls or [])


def test_named_function_and_no_parallel_calls(server):
    client = server.client()
    r = client.chat.completions.create(
        model=MODEL_NAME, temperature=1.0, seed=5, n=4, max_tokens=120, messages=QUESTION, tools=TOOLS,
        tool_choice={"type": "function", "function": {"name": "get_time"}}, parallel_tool_calls=False)
    for choice in r.choices:
        if choice.finish_reason == "length":
            continue
        assert choice.finish_reason == "tool_calls"
        assert len(choice.message.tool_calls) == 1
        call = choice.message.tool_calls[0]
        assert call.function.name == "get_time"
        jsonschema.validate(json.loads(call.function.arguments), schema_of("get_time"))


def test_tool_choice_none_answers_in_text(server):
    r = server.client().chat.completions.create(model=MODEL_NAME, temperature=0, max_tokens=20, messages=QUESTION,
                                                tools=TOOLS, tool_choice="none")
    assert r.choices[0].message.tool_calls is None
    assert r.choices[0].finish_reason in ("stop", "length")


# What Lumen's wrappers look like as text: none of it may reach a client's content.
WRAPPER_MARKS = ('{"tool_calls"', '"tool_calls":', '{"content"', "tool_response", "<tool_call>", '{"name"')


def assert_no_wrapper(content):
    for mark in WRAPPER_MARKS:
        assert mark not in (content or ""), content


def test_required_always_gives_parsed_calls(server):
    # Sampled replies of every kind: each is a call (parsed, valid), never the wrapper as text.
    client = server.client()
    # With parallel calls the list closes after 8 (the model would repeat its call until
    # max_tokens): the reply ends with its calls.
    for parallel, most in ((False, 1), (True, 8)):
        r = client.chat.completions.create(model=MODEL_NAME, temperature=1.0, seed=12, n=4, max_tokens=400,
                                           messages=QUESTION, tools=TOOLS, tool_choice="required",
                                           parallel_tool_calls=parallel)
        for choice in r.choices:
            assert choice.message.tool_calls, choice
            assert_no_wrapper(choice.message.content)
            assert choice.finish_reason == "tool_calls" and len(choice.message.tool_calls) <= most, choice
            for c in choice.message.tool_calls:
                jsonschema.validate(json.loads(c.function.arguments), schema_of(c.function.name))


def test_a_call_cut_by_max_tokens_is_reported_as_cut(server):
    # 8 tokens end the reply inside its first call: finish_reason "length", no call, and no
    # half-written wrapper as content (SmolLM2 returned '{"tool_calls": [{"name": "get_wea').
    client = server.client()
    for choice_kind in ("required", "auto", {"type": "function", "function": {"name": "get_weather"}}):
        kw = dict(model=MODEL_NAME, temperature=0, max_tokens=8, messages=QUESTION, tools=TOOLS, tool_choice=choice_kind)
        choice = client.chat.completions.create(**kw).choices[0]
        assert_no_wrapper(choice.message.content)
        assert not choice.message.tool_calls
        if choice_kind != "auto":  # (auto may answer in a few words of text instead)
            assert choice.finish_reason == "length" and not choice.message.content, choice
        content, calls, finish = streamed(client, **kw)
        assert (content, calls, finish) == (choice.message.content or "", [], choice.finish_reason)


def test_tool_choice_none_after_a_tool_result_answers_in_plain_text(server):
    # Lumen's wrapper is the Generic format's JSON (a native template renders tool results in
    # its own markup, which is the model's to echo): there the reply was Lumen's
    # {"tool_response": ...} rewrite; now its text. Every format answers in content, no calls.
    wrapped = server.format == "generic"
    history = QUESTION + [
        {"role": "assistant", "content": None,
         "tool_calls": [{"id": "call_1", "type": "function",
                         "function": {"name": "get_weather", "arguments": '{"city": "Paris", "unit": "celsius"}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "18 degrees, sunny"}]
    client = server.client()
    kw = dict(model=MODEL_NAME, temperature=0, max_tokens=60, messages=history, tools=TOOLS, tool_choice="none")
    choice = client.chat.completions.create(**kw).choices[0]
    assert choice.message.tool_calls is None
    assert choice.finish_reason in ("stop", "length")
    assert isinstance(choice.message.content, str) and choice.message.content.strip()
    if wrapped:
        assert_no_wrapper(choice.message.content)
    content, calls, finish = streamed(client, **kw)
    assert (content, calls, finish) == (choice.message.content, [], choice.finish_reason)
    # Cut short, the answer so far is still plain text.
    cut = client.chat.completions.create(**{**kw, "max_tokens": 6}).choices[0]
    assert cut.finish_reason == "length"
    if wrapped:
        assert_no_wrapper(cut.message.content)
    assert choice.message.content.startswith(cut.message.content)
