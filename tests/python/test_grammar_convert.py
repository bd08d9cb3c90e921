"""The JSON Schema and regex converters against independent references.

Every string a schema's grammar produces (random walks through the real matcher, by
grammar_convert_tool) must be JSON that validates with the `jsonschema` package; valid
instances written by hand, serialized in declared property order (as Python writes JSON:
default, compact and indented), must be accepted. Regex grammars must agree with Python's re.fullmatch on random strings.
"""
import json
import os
import random
import re
import subprocess
from pathlib import Path

import jsonschema
import pytest

TOOL = Path(os.environ.get("LUMEN_TOOLS_DIR", "build/release/tests/tools")) / "grammar_convert_tool"


def run_tool(*args, stdin=None):
    result = subprocess.run([str(TOOL), *args], input=stdin, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout


def walks(source, argument, count, seed=1):
    out = run_tool("walk", source, argument, "--count", str(count), "--seed", str(seed))
    return [json.loads(line) for line in out.split("\n") if line]


def accepted(source, argument, texts, *options):
    out = run_tool("accept", source, argument, *options, stdin="".join(json.dumps(t) + "\n" for t in texts))
    return [line == "1" for line in out.split("\n") if line]


# Schemas inside the subset the converter renders exactly; objects close with
# additionalProperties: false (absent means closed to the converter, open to JSON Schema).
SCHEMAS = {
    "nested_objects": {
        "type": "object",
        "properties": {
            "name": {"type": "string", "minLength": 1, "maxLength": 12},
            "age": {"type": "integer", "minimum": 0, "maximum": 130},
            "address": {
                "type": "object",
                "properties": {"street": {"type": "string"}, "zip": {"type": "string", "pattern": "^[0-9]{5}$"}},
                "required": ["zip"],
                "additionalProperties": False,
            },
            "active": {"type": "boolean"},
        },
        "required": ["name", "age"],
        "additionalProperties": False,
    },
    "arrays_with_bounds": {
        "type": "array",
        "items": {"type": "array", "items": {"type": "integer", "minimum": -50, "maximum": 50}, "maxItems": 3},
        "minItems": 1,
        "maxItems": 4,
    },
    "enums_and_consts": {
        "type": "object",
        "properties": {
            "color": {"enum": ["red", "green", "blue", None, 7, {"x": [1]}]},
            "kind": {"const": "q\"uote\\back\nslash é"},
        },
        "required": ["color", "kind"],
        "additionalProperties": False,
    },
    "recursive_tree": {
        "$defs": {
            "node": {
                "type": "object",
                "properties": {
                    "value": {"type": "integer", "exclusiveMinimum": -1000, "exclusiveMaximum": 1000},
                    "children": {"type": "array", "items": {"$ref": "#/$defs/node"}, "maxItems": 2},
                },
                "required": ["value"],
                "additionalProperties": False,
            }
        },
        "$ref": "#/$defs/node",
    },
    "patterns_and_formats": {
        "type": "object",
        "properties": {
            "code": {"type": "string", "pattern": "^[A-Z]{2,3}-\\d{3}(x|y)?$"},
            "loose": {"type": "string", "pattern": "a.b"},
            "day": {"type": "string", "format": "date"},
            "when": {"type": "string", "format": "date-time"},
            "at": {"type": "string", "format": "time"},
            "id": {"type": "string", "format": "uuid"},
            "mail": {"type": "string", "format": "email"},
        },
        "required": ["code", "loose", "day", "when", "at", "id", "mail"],
        "additionalProperties": False,
    },
    "integer_and_number_ranges": {
        "type": "array",
        "prefixItems": [
            {"type": "integer", "minimum": 15, "maximum": 300},
            {"type": "integer", "minimum": -123, "maximum": -7},
            {"type": "number", "exclusiveMinimum": 0, "maximum": 2.5},
            {"type": "number", "minimum": -10.5, "exclusiveMaximum": -0.25},
            {"type": "integer", "minimum": 1000000},
        ],
        "items": False,
    },
    "any_of_and_type_arrays": {
        "type": "object",
        "properties": {
            "v": {"anyOf": [{"type": "string", "maxLength": 3}, {"type": "integer", "minimum": 10}, {"type": "null"}]},
            "w": {"type": ["boolean", "number"]},
            "z": {"allOf": [{"type": "integer"}, {"minimum": 3}, {"maximum": 5}]},
        },
        "required": ["v", "w", "z"],
        "additionalProperties": False,
    },
    "additional_properties": {
        "type": "object",
        "properties": {"id": {"type": "integer"}, "idx": {"type": "string"}},
        "required": ["id"],
        "additionalProperties": {"type": "array", "items": {"type": "boolean"}, "maxItems": 2},
    },
}

CHECKER = jsonschema.Draft202012Validator.FORMAT_CHECKER


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_every_walk_validates(name):
    schema = SCHEMAS[name]
    texts = walks("--schema", json.dumps(schema), 120)
    assert len(texts) >= 60, f"only {len(texts)} walks ended"
    validator = jsonschema.Draft202012Validator(schema, format_checker=CHECKER)
    for text in texts:
        instance = json.loads(text)
        errors = list(validator.iter_errors(instance))
        assert not errors, f"{text!r}: {errors[0].message}"


# Valid instances of each schema (checked with jsonschema first), in declared property order.
INSTANCES = {
    "nested_objects": [
        {"name": "Ann", "age": 0},
        {"name": "é\"\\\n\u0001x", "age": 130, "address": {"zip": "01234"}, "active": False},
        {"name": "Bob", "age": 42, "address": {"street": "", "zip": "99999"}},
    ],
    "arrays_with_bounds": [[[]], [[-50, 50], [0], [], [1, 2, 3]]],
    "enums_and_consts": [
        {"color": c, "kind": "q\"uote\\back\nslash é"} for c in ["red", "blue", None, 7, {"x": [1]}]
    ],
    "recursive_tree": [
        {"value": 999},
        {"value": -999, "children": [{"value": 1}, {"value": 2, "children": [{"value": 3, "children": []}]}]},
    ],
    "patterns_and_formats": [
        {"code": "AB-123", "loose": "a-b", "day": "2024-02-29", "when": "2012-04-23T18:25:43.511Z",
         "at": "23:59:59+01:00", "id": "12345678-1234-1234-1234-1234567890ab", "mail": "first.last@mail.example-1.org"},
        {"code": "XYZ-000y", "loose": "a\"b", "day": "0001-12-31", "when": "1999-01-01t00:00:00-12:30",
         "at": "00:00:00.000001Z", "id": "ABCDEF01-abcd-ABCD-0000-ffffffffffff", "mail": "a+b%c@x.io"},
    ],
    # Decimals where their whole unit interval is inside the bounds (the converter's subset).
    "integer_and_number_ranges": [
        [15, -123, 0.5, -10, 1000000],
        [300, -7, 2, -1.5, 9999999999999999],
        [99, -50, 0.25, -9.999, 123456789],  # (no exponents under bounds)
        [200, -100, 0.30000000000000004, -3, 1000001],
    ],
    "any_of_and_type_arrays": [
        {"v": "abc", "w": True, "z": 3},
        {"v": 10, "w": -1.5e+30, "z": 5},
        {"v": None, "w": 0, "z": 4},
    ],
    "additional_properties": [
        {"id": 1},
        {"id": -5, "idx": "x", "i": [True], "idxx": [], "": [False, True]},
        {"id": 0, "ID": []},
    ],
}


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_valid_instances_are_accepted(name):
    schema = SCHEMAS[name]
    validator = jsonschema.Draft202012Validator(schema, format_checker=CHECKER)
    texts = []
    for instance in INSTANCES[name]:
        validator.validate(instance)
        texts.append(json.dumps(instance, ensure_ascii=False))
        texts.append(json.dumps(instance, ensure_ascii=False, separators=(",", ":")))
        texts.append(json.dumps(instance, ensure_ascii=False, indent=2))
        if name != "enums_and_consts":  # a const string is matched in one spelling: raw UTF-8
            texts.append(json.dumps(instance))  # non-ASCII as \\u escapes
    # Python's spellings (spaces after separators, indentation) in the loose form...
    verdicts = accepted("--schema", json.dumps(schema), texts, "--any-whitespace")
    refused = [t for t, ok in zip(texts, verdicts) if not ok]
    assert not refused, f"{len(refused)} of {len(texts)} refused, e.g. {refused[:3]}"
    # ...and the compact one in the default form, which refuses whitespace between tokens.
    compact = [json.dumps(i, ensure_ascii=False, separators=(",", ":")) for i in INSTANCES[name]]
    assert all(accepted("--schema", json.dumps(schema), compact)), compact
    spaced = [t for t in texts if t not in compact]
    assert not any(accepted("--schema", json.dumps(schema), spaced)), spaced


REGEXES = [
    "[a-c]+x?",
    "(ab|a)*c{1,3}",
    "\\d{2,4}-[^\\d\\n]",
    "(?:foo|ba[rz])+\\.?",
    "[\\w.]+@[a-z]+\\.(com|org)",
    "a.c|\\s+",
    "[^abc]{0,3}z*",
    "x{2,}y?",
]
ALPHABET = "abcxyz09.-@ _\t\nfoorz!é"


@pytest.mark.parametrize("pattern", REGEXES)
def test_regex_agrees_with_python(pattern):
    compiled = re.compile(pattern)
    rng = random.Random(pattern)
    candidates = ["".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 8))) for _ in range(1500)]
    produced = walks("--regex", pattern, 150)
    assert produced
    for text in produced:
        assert compiled.fullmatch(text), f"{pattern!r} produced {text!r}"
    texts = candidates + produced
    verdicts = accepted("--regex", pattern, texts)
    for text, ok in zip(texts, verdicts):
        assert ok == bool(compiled.fullmatch(text)), f"{pattern!r} on {text!r}: grammar {ok}"
