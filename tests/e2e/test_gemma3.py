"""`lumen serve` on Gemma 3 270M: the chat endpoint renders the built-in gemma template (the file
has none), replies with llama.cpp's greedy continuation (tests/golden/logits/gemma3.json), and no
control-token text (<end_of_turn>) reaches the client, streamed or not."""
import json
import os
from pathlib import Path

import pytest

from conftest import LumenServer

GOLDEN = json.loads((Path(__file__).parents[1] / "golden" / "logits" / "gemma3.json").read_text())
SYSTEM = "You are a helpful assistant who answers briefly."
STEPS = 32
MODEL_NAME = "gemma-3-270m-q4_k_m"


def gemma_path() -> Path:
    cache = os.environ.get("LUMEN_CACHE") or str(Path.home() / ".cache" / "lumen" / "models")
    path = Path(cache) / "gemma-3-270m-q4_k_m.gguf"
    assert path.exists(), f"{path} is missing: run scripts/fetch_models.py"
    return path


@pytest.fixture(scope="module")
def gemma():
    s = LumenServer(model=gemma_path())
    yield s
    assert s.stop() == 0, "".join(s.log)


def chat_case():
    case = next(c for c in GOLDEN["cases"] if c["prompt"].startswith("<start_of_turn>user\n" + SYSTEM))
    return case, case["prompt"].split("\n\n", 1)[1].split("<end_of_turn>")[0]


def expected_text(server):
    case, _ = chat_case()
    r = server.post("/detokenize", {"tokens": case["greedy"][:STEPS]})
    assert r.status_code == 200, r.text
    return r.json()["prompt"]


def test_chat_completion_is_llama_cpp_greedy(gemma):
    _, question = chat_case()
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": question}]
    reply = gemma.client().chat.completions.create(model=MODEL_NAME, messages=messages, max_tokens=STEPS, temperature=0)
    assert reply.choices[0].message.content == expected_text(gemma)
    assert reply.choices[0].finish_reason == "length"
    stream = gemma.client().chat.completions.create(model=MODEL_NAME, messages=messages, max_tokens=STEPS,
                                                    temperature=0, stream=True)
    assert "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices) == expected_text(gemma)


@pytest.mark.parametrize("end_token", ["<end_of_turn>", "<eos>"])
def test_the_turn_and_generation_ends_stop_and_leave_no_text(gemma, end_token):
    # The 270M model is a base model that rarely ends a turn by itself: a logit bias makes the
    # end token the second one generated. Either ends the reply (stop), and neither's text shows.
    end_id = gemma.tokenize(prompt=end_token)[-1]
    first = gemma.client().chat.completions.create(
        model=MODEL_NAME, messages=[{"role": "user", "content": "Hi"}], max_tokens=1, temperature=0)
    reply = gemma.client().chat.completions.create(
        model=MODEL_NAME, messages=[{"role": "user", "content": "Hi"}], max_tokens=16, temperature=0,
        logit_bias={str(end_id): 100}, extra_body={"min_tokens": 1})
    choice = reply.choices[0]
    assert choice.finish_reason == "stop", choice
    assert choice.message.content == first.choices[0].message.content
    assert end_token not in choice.message.content


WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "The current weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 30}},
                   "required": ["city"], "additionalProperties": False}}}


@pytest.mark.parametrize("tool_choice", ["required", "auto", {"type": "function", "function": {"name": "get_weather"}}])
def test_tool_calls_come_back_parsed(gemma, tool_choice):
    # Gemma's template knows no tools (Lumen's Generic format): its reply was Lumen's own
    # {"tool_calls": [...]} JSON as content, repeated until max_tokens. Now: parsed tool_calls
    # (or, under auto, a plain answer), never the wrapper.
    r = gemma.client().chat.completions.create(
        model=MODEL_NAME, temperature=0, max_tokens=200, tools=[WEATHER], tool_choice=tool_choice,
        messages=[{"role": "user", "content": "What is the weather in Paris?"}])
    choice = r.choices[0]
    for mark in ('"tool_calls"', '{"content"', '{"name"'):
        assert mark not in (choice.message.content or ""), choice.message.content
    if tool_choice != "auto":
        assert choice.message.tool_calls, choice
    for call in choice.message.tool_calls or []:
        assert call.function.name == "get_weather"
        assert isinstance(json.loads(call.function.arguments)["city"], str)
    if choice.message.tool_calls:
        assert choice.finish_reason in ("tool_calls", "length"), choice
