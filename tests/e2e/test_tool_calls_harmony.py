"""gpt-oss's harmony tool calls through `lumen serve --chat-template-file`, with OpenAI's own
gpt-oss template (llama.cpp's copy, from the llama-cpp-python sdist) on SmolLM2 and the official
openai SDK. SmolLM2 knows no harmony (its markers are plain text in its vocabulary), so what it
writes freely is content; tool_choice "required" or a named function constrains the reply to a
harmony call (analysis optional, then `<|channel|>commentary to=functions.NAME <|constrain|>json
<|message|>ARGS`), which the server reads into tool_calls, whole and streamed. The call and its
result then go back through the template (arguments as objects, one call per message)."""
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import jsonschema
import pytest

from conftest import LumenServer, MODEL_NAME
from test_tool_calls import streamed

LLAMA_CPP_PYTHON = "llama-cpp-python==0.3.36"
SDIST = "llama_cpp_python-0.3.36.tar.gz"
TEMPLATE = "llama_cpp_python-0.3.36/vendor/llama.cpp/models/templates/openai-gpt-oss-120b.jinja"

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


def gpt_oss_template(tmp_dir: Path) -> Path:
    refs = Path(os.environ.get("LUMEN_REFS") or Path.home() / ".cache" / "lumen" / "refs")
    sdist = refs / SDIST
    if not sdist.exists():  # downloaded once (test_chat_templates.py uses the same file)
        refs.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                        LLAMA_CPP_PYTHON, "-d", str(refs)], check=True, capture_output=True)
    path = tmp_dir / "gpt-oss.jinja"
    with tarfile.open(sdist) as tar:
        path.write_bytes(tar.extractfile(TEMPLATE).read())
    return path


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    s = LumenServer("--chat-template-file", gpt_oss_template(tmp_path_factory.mktemp("harmony")))
    yield s
    assert s.stop() == 0, "".join(s.log)


def schema_of(name):
    return next(t["function"]["parameters"] for t in TOOLS if t["function"]["name"] == name)


def test_required_and_named_calls_come_back_as_tool_calls(server):
    client = server.client()
    common = dict(model=MODEL_NAME, temperature=0, max_tokens=200, tools=TOOLS, messages=QUESTION)
    for choice in ["required", {"type": "function", "function": {"name": "get_time"}}]:
        reply = client.chat.completions.create(tool_choice=choice, **common)
        message = reply.choices[0].message
        assert reply.choices[0].finish_reason == "tool_calls", message
        assert len(message.tool_calls) == 1, message
        call = message.tool_calls[0]
        if choice != "required":
            assert call.function.name == "get_time"
        jsonschema.validate(json.loads(call.function.arguments), schema_of(call.function.name))
        assert "<|" not in (message.content or "") and "functions." not in (message.content or "")
        # Streamed: the same call (greedy), no marker ever sent as content.
        content, calls, finish = streamed(client, tool_choice=choice, **common)
        assert finish == "tool_calls"
        assert [(name, json.loads(args)) for _, name, args in calls] == \
            [(call.function.name, json.loads(call.function.arguments))]
        assert "<|" not in content


def test_a_call_and_its_result_go_back_through_the_template(server):
    client = server.client()
    first = client.chat.completions.create(model=MODEL_NAME, temperature=0, max_tokens=200, tools=TOOLS,
                                           tool_choice="required", messages=QUESTION)
    call = first.choices[0].message.tool_calls[0]
    # The arguments go back as the JSON text OpenAI's clients send; the template wants an object.
    history = QUESTION + [
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": call.id, "type": "function",
             "function": {"name": call.function.name, "arguments": call.function.arguments}}]},
        {"role": "tool", "tool_call_id": call.id, "content": "18 degrees, sunny"}]
    reply = client.chat.completions.create(model=MODEL_NAME, temperature=0, max_tokens=24, tools=TOOLS,
                                           messages=history)
    assert reply.choices[0].finish_reason in ("stop", "length", "tool_calls")
    # Two calls in one assistant message, their results in another order: each result follows its
    # own call in the prompt (the template names a result by the call before it).
    two = QUESTION + [
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "get_weather",
                                                         "arguments": '{"city": "Paris", "unit": "celsius"}'}},
            {"id": "b", "type": "function", "function": {"name": "get_time", "arguments": '{"zone": "CET"}'}}]},
        {"role": "tool", "tool_call_id": "b", "content": "noon"},
        {"role": "tool", "tool_call_id": "a", "content": "sunny"}]
    reply = client.chat.completions.create(model=MODEL_NAME, temperature=0, max_tokens=8, tools=TOOLS,
                                           messages=two)
    assert reply.usage.prompt_tokens > 0
    # A tool without a description (OpenAI's is optional; the template writes one), and the
    # earlier turn's reasoning passed back: both render.
    bare = {"type": "function", "function": {"name": "get_time", "parameters": TIME["function"]["parameters"]}}
    history[1]["reasoning_content"] = "The user wants the weather."
    reply = client.chat.completions.create(model=MODEL_NAME, temperature=0, max_tokens=8, tools=[bare],
                                           messages=history)
    assert reply.usage.prompt_tokens > 0


def test_free_replies_are_content(server):
    # auto: SmolLM2 writes no harmony, so its reply is content and calls nothing.
    client = server.client()
    reply = client.chat.completions.create(model=MODEL_NAME, temperature=0, max_tokens=16, tools=TOOLS,
                                           messages=QUESTION)
    message = reply.choices[0].message
    assert not message.tool_calls
    assert message.content
