"""Structured output through `lumen serve`, driven by the openai SDK: every sampled reply
(temperature 1) to a request with a JSON schema validates against it with the `jsonschema`
package; json_object replies parse; regex, choice and GBNF constrain /v1/completions too; an
invalid schema or grammar is a 400 naming the field. JSON is compact by default and ends where
its root value closes (`lumen run --json-schema` too); vLLM's disable_any_whitespace=false
allows whitespace between tokens. (scripts/check_structured_output.py runs
the same with 200 samples per schema; CI runs fewer.)"""
import json
import os
import re
import subprocess

import jsonschema
import pytest

from conftest import LumenServer, MODEL_NAME, httpx, model_path
from structured_schemas import SCHEMAS

SAMPLES = 8  # per schema, as n in one request (scripts/check_structured_output.py runs 200)

@pytest.fixture(scope="module")
def server():
    s = LumenServer()
    yield s
    assert s.stop() == 0, "".join(s.log)


def sampled_replies(client, schema, n, max_tokens=200, stream=False):
    r = client.chat.completions.create(
        model=MODEL_NAME, n=n, temperature=1.0, max_tokens=max_tokens, seed=8,
        messages=[{"role": "user", "content": "Answer in JSON."}],
        response_format={"type": "json_schema", "json_schema": {"name": "answer", "schema": schema, "strict": True}})
    return [(c.message.content, c.finish_reason) for c in r.choices]


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_every_sampled_reply_validates(server, name):
    schema = SCHEMAS[name]
    client = server.client()
    complete = 0
    for text, finish in sampled_replies(client, schema, SAMPLES):
        if finish == "length":
            continue  # cut short: a prefix, nothing to validate
        assert finish == "stop"
        value = json.loads(text)
        jsonschema.validate(value, schema, format_checker=jsonschema.FormatChecker())
        if isinstance(value, dict) and "properties" in schema:  # written in the declared order
            assert list(value) == [k for k in schema["properties"] if k in value], text
        complete += 1
    assert complete >= SAMPLES // 4, "a good share of the replies should complete within max_tokens"


def test_json_object_and_streaming(server):
    client = server.client()
    r = client.chat.completions.create(model=MODEL_NAME, temperature=1.0, max_tokens=120, seed=3, n=4,
                                       messages=[{"role": "user", "content": "Describe a cat in JSON."}],
                                       response_format={"type": "json_object"})
    for c in r.choices:
        if c.finish_reason == "stop":
            assert isinstance(json.loads(c.message.content), dict)
    stream = client.chat.completions.create(
        model=MODEL_NAME, temperature=0, max_tokens=200, stream=True,
        messages=[{"role": "user", "content": "Give me a person."}],
        response_format={"type": "json_schema", "json_schema": {"name": "p", "schema": SCHEMAS["person"]}})
    text = "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)
    jsonschema.validate(json.loads(text), SCHEMAS["person"])


def test_regex_choice_and_grammar_on_completions(server):
    def complete(**fields):
        r = server.post("/v1/completions", {"model": MODEL_NAME, "prompt": "The answer is", "max_tokens": 40,
                                             "temperature": 1.0, "n": 6, "seed": 11, **fields})
        assert r.status_code == 200, r.text
        return [c["text"] for c in r.json()["choices"] if c["finish_reason"] == "stop"]

    for text in complete(structured_outputs={"regex": r"[0-9]{3}-[0-9]{2}"}):
        assert re.fullmatch(r"[0-9]{3}-[0-9]{2}", text), text
    choices = ["yes", "no", "maybe so"]
    outs = complete(guided_choice=choices)
    assert outs and all(text in choices for text in outs)
    grammar = 'root ::= "(" num (" + " num)* ")"\nnum ::= [1-9] [0-9]?'
    for text in complete(grammar=grammar):
        assert re.fullmatch(r"\([1-9][0-9]?( \+ [1-9][0-9]?)*\)", text), text


def test_invalid_constraints_are_400s_naming_the_field(server):
    cases = [
        ({"grammar": 'root ::= "a" | undefined_rule'}, "grammar"),
        ({"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "bogus"}}}},
         "response_format"),
        ({"structured_outputs": {"regex": "(unclosed"}}, "structured_outputs.regex"),
        ({"grammar": "root ::= \"a\"", "guided_regex": "a"}, "grammar"),
    ]
    for fields, param in cases:
        r = server.post("/v1/chat/completions", {"model": MODEL_NAME, "max_tokens": 5,
                                                  "messages": [{"role": "user", "content": "hi"}], **fields})
        assert r.status_code == 400, (fields, r.text)
        assert r.json()["error"]["param"] == param, r.text
    # The server is fine afterwards.
    r = server.post("/v1/chat/completions", {"model": MODEL_NAME, "max_tokens": 3,
                                              "messages": [{"role": "user", "content": "hi"}]})
    assert r.status_code == 200


CITY = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 40}, "country": {"type": "string", "maxLength": 40}},
        "required": ["name", "country"], "additionalProperties": False}
CITY_QUESTION = [{"role": "user", "content": "Which city is the capital of France? Answer in JSON."}]


def city_reply(client, **fields):
    return client.chat.completions.create(
        model=MODEL_NAME, temperature=0, max_tokens=120, messages=CITY_QUESTION,
        response_format={"type": "json_schema", "json_schema": {"name": "city", "schema": CITY}}, **fields).choices[0]


def test_json_is_compact_and_ends_with_the_root_value(server):
    # The reply used to be "Paris"\n\n,\n"country"... and to pad after the closing brace until
    # its EOS: now not a byte of whitespace between tokens, and the end right after the root.
    client = server.client()
    for n, choice in enumerate([city_reply(client), *client.chat.completions.create(
            model=MODEL_NAME, temperature=1.0, seed=9, n=6, max_tokens=120, messages=CITY_QUESTION,
            response_format={"type": "json_schema", "json_schema": {"name": "city", "schema": CITY}}).choices]):
        if n > 0 and choice.finish_reason == "length":
            continue
        assert choice.finish_reason == "stop", choice
        text = choice.message.content
        value = json.loads(text)
        jsonschema.validate(value, CITY)
        assert text == json.dumps(value, separators=(",", ":"), ensure_ascii=False), repr(text)
    # Streamed: the same text.
    stream = client.chat.completions.create(
        model=MODEL_NAME, temperature=0, max_tokens=120, messages=CITY_QUESTION, stream=True,
        response_format={"type": "json_schema", "json_schema": {"name": "city", "schema": CITY}})
    assert "".join(c.choices[0].delta.content or "" for c in stream if c.choices) == city_reply(client).message.content
    # json_object too, and on /v1/completions (vLLM's structured_outputs.json).
    obj = client.chat.completions.create(model=MODEL_NAME, temperature=0, max_tokens=120, messages=CITY_QUESTION,
                                         response_format={"type": "json_object"}).choices[0]
    if obj.finish_reason == "stop":
        assert obj.message.content == json.dumps(json.loads(obj.message.content), separators=(",", ":"),
                                                 ensure_ascii=False)
    r = server.post("/v1/completions", {"model": MODEL_NAME, "prompt": "The capital of France as JSON:", "max_tokens": 80,
                                         "temperature": 0, "structured_outputs": {"json": CITY}})
    assert r.status_code == 200, r.text
    done = r.json()["choices"][0]
    assert done["finish_reason"] == "stop", done
    assert done["text"] == json.dumps(json.loads(done["text"]), separators=(",", ":"), ensure_ascii=False)


def test_any_whitespace_on_request_still_ends_with_the_root_value(server):
    # vLLM's structured_outputs.disable_any_whitespace = false brings back whitespace between
    # tokens (beside response_format too); nothing may follow the closing brace either way.
    client = server.client()
    r = client.chat.completions.create(
        model=MODEL_NAME, temperature=1.0, seed=4, n=6, max_tokens=160, messages=CITY_QUESTION,
        response_format={"type": "json_schema", "json_schema": {"name": "city", "schema": CITY}},
        extra_body={"structured_outputs": {"disable_any_whitespace": False}})
    finished = [c for c in r.choices if c.finish_reason == "stop"]
    assert finished
    for c in finished:
        jsonschema.validate(json.loads(c.message.content), CITY)
        assert c.message.content.endswith("}"), repr(c.message.content)
    bad = server.post("/v1/chat/completions", {"model": MODEL_NAME, "max_tokens": 5, "messages": CITY_QUESTION,
                                                "response_format": {"type": "json_object"},
                                                "structured_outputs": {"disable_any_whitespace": "no"}})
    assert bad.status_code == 400 and bad.json()["error"]["param"] == "structured_outputs.disable_any_whitespace"


def test_cli_json_schema_stops_at_the_root_value():
    # `lumen run --json-schema` padded 17 tokens of JSON with "\n\n\t\t\t..." to 47 before its EOS.
    schema = json.dumps(CITY)
    common = [os.environ["LUMEN_BIN"], "run", "-m", str(model_path()), "-p", "The capital of France as JSON:",
              "-n", "100", "--temp", "0", "--json-schema", schema]
    out = subprocess.run(common, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    value = json.loads(out.stdout)
    jsonschema.validate(value, CITY)
    assert out.stdout.rstrip("\n") == json.dumps(value, separators=(",", ":"), ensure_ascii=False), repr(out.stdout)
    loose = subprocess.run(common + ["--json-any-whitespace"], capture_output=True, text=True, timeout=300)
    assert loose.returncode == 0, loose.stderr
    jsonschema.validate(json.loads(loose.stdout), CITY)
    assert loose.stdout.rstrip("\n").endswith("}"), repr(loose.stdout)
