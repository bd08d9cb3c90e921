"""Lumen's chat templates against Python's jinja2, rendering exactly as Hugging Face transformers does.

The reference renderer below is transformers' own setup (ImmutableSandboxedEnvironment with
trim_blocks and lstrip_blocks, the loopcontrols extension, its json.dumps-based tojson,
raise_exception and strftime_now), with the clock fixed so Llama 3.2's date line is stable.

The vendor templates are never committed. They come from:
  * the SmolLM2 GGUF's tokenizer.chat_template (read with gguf-py);
  * llama.cpp's models/templates/*.jinja inside the llama-cpp-python source package from PyPI,
    downloaded once into ~/.cache/lumen/refs (Llama 3.1/3.2/3.3, Qwen 2.5, Mistral Nemo,
    Phi-3.5, DeepSeek R1-distill and V3.1, and Gemma: the Gemma 3 270M GGUF carries no template,
    so Gemma's turn format is checked with the Gemma (2) template llama.cpp ships).

Every template renders every conversation with add_generation_prompt on and off. Where jinja2
raises (raise_exception, or a conversation shape the template cannot take), Lumen must fail
too, with an error; everywhere else the bytes must be identical. Lumen's built-in templates
(`--chat-template NAME`) are held to the same standard against the vendor template they stand
in for.
"""
import datetime
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import jinja2
import jinja2.ext
import pytest
from jinja2.sandbox import ImmutableSandboxedEnvironment

from conftest import lumen_bin, real_model

LLAMA_CPP_PYTHON = "llama-cpp-python==0.3.36"
SDIST = "llama_cpp_python-0.3.36.tar.gz"
TEMPLATE_DIR = "llama_cpp_python-0.3.36/vendor/llama.cpp/models/templates/"
NOW = 1721988000  # 2024-07-26 10:00 UTC, for strftime_now

VENDOR_FILES = {
    "llama3.1": "meta-llama-Llama-3.1-8B-Instruct.jinja",
    "llama3.2": "meta-llama-Llama-3.2-3B-Instruct.jinja",
    "llama3.3": "meta-llama-Llama-3.3-70B-Instruct.jinja",
    "qwen2.5": "Qwen-Qwen2.5-7B-Instruct.jinja",
    "qwen3": "Qwen-Qwen3-0.6B.jinja",
    "mistral-nemo": "mistralai-Mistral-Nemo-Instruct-2407.jinja",
    "phi3.5": "microsoft-Phi-3.5-mini-instruct.jinja",
    "deepseek-r1-llama": "deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja",
    "deepseek-r1-qwen": "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja",
    "deepseek-v3.1": "deepseek-ai-DeepSeek-V3.1.jinja",
    "gemma": "google-gemma-2-2b-it.jinja",
    "gpt-oss": "openai-gpt-oss-120b.jinja",
}

# The special tokens each family's tokenizer defines (what transformers passes as bos/eos_token).
SPECIAL = {
    "smollm2": ("<|im_start|>", "<|im_end|>"),
    "llama3": ("<|begin_of_text|>", "<|eot_id|>"),
    "qwen2.5": ("", "<|im_end|>"),
    "mistral": ("<s>", "</s>"),
    "phi3.5": ("<s>", "<|endoftext|>"),
    "deepseek": ("<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"),
    "gemma": ("<bos>", "<eos>"),
    "gpt-oss": ("<|startoftext|>", "<|return|>"),
}
FAMILY = {"smollm2": "smollm2", "llama3.1": "llama3", "llama3.2": "llama3", "llama3.3": "llama3",
          "qwen2.5": "qwen2.5", "qwen3": "qwen2.5", "mistral-nemo": "mistral", "phi3.5": "phi3.5",
          "deepseek-r1-llama": "deepseek", "deepseek-r1-qwen": "deepseek",
          "deepseek-v3.1": "deepseek", "gemma": "gemma", "gpt-oss": "gpt-oss"}

# Built-in name -> the vendor template it must match.
BUILTINS = {"chatml": "smollm2", "llama3": "llama3.1", "gemma": "gemma", "qwen2.5": "qwen2.5",
            "mistral": "mistral-nemo", "phi3": "phi3.5", "deepseek": "deepseek-r1-qwen"}

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "City name, e.g. Zürich"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                "days": {"type": "integer", "minimum": 1, "maximum": 7.5},
            },
            "required": ["city"],
        },
    },
}
TOOLS = [WEATHER_TOOL, {"type": "function", "function": {
    "name": "search", "description": "Search the web", "parameters": {
        "type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}}}]


def tool_call(arguments):
    return {"id": "call12345", "type": "function",
            "function": {"name": "get_weather", "arguments": arguments}}


CONVERSATIONS = {
    "system_user": {"messages": [
        {"role": "system", "content": "You are a terse assistant."},
        {"role": "user", "content": "What is 2+2?"}]},
    "multi_turn": {"messages": [
        {"role": "user", "content": "Hi!"},
        {"role": "assistant", "content": "Hello. How can I help?"},
        {"role": "user", "content": "Tell me a joke."}]},
    "system_multi_turn": {"messages": [
        {"role": "system", "content": "Be kind.\nAnswer briefly."},
        {"role": "user", "content": "  padded question  \n"},
        {"role": "assistant", "content": "\nA padded answer.\n\n"},
        {"role": "user", "content": "Thanks"}]},
    "user_only": {"messages": [{"role": "user", "content": "One question only"}]},
    "unicode_and_jinja_text": {"messages": [
        {"role": "system", "content": "Réponds en français. 日本語も OK 😀"},
        {"role": "user", "content": "Is {{ x }} or {% if y %}z{% endif %} or {# c #} literal? \"quotes\" 'too' \\ back"},
        {"role": "assistant", "content": "Yes: {{ x }} stays {{ x }}. ☃ \u00a0nbsp"},
        {"role": "user", "content": "\t tabs\tand\r\nCRLF \u2028 sep"}]},
    "thinking_answer": {"messages": [
        {"role": "user", "content": "Solve it."},
        {"role": "assistant", "content": "<think>\nLet me think.\n</think>\n\nThe answer is 4."},
        {"role": "user", "content": "And now?"}]},
    "tools_call_and_result": {"tools": TOOLS, "messages": [
        {"role": "system", "content": "You can use tools."},
        {"role": "user", "content": "Weather in Zürich?"},
        {"role": "assistant", "content": None,
         "tool_calls": [tool_call({"city": "Zürich", "unit": "celsius"})]},
        {"role": "tool", "tool_call_id": "call12345", "name": "get_weather",
         "content": "{\"temperature\": 21.5, \"sky\": \"clear\"}"},
        {"role": "assistant", "content": "It is 21.5 °C and clear."},
        {"role": "user", "content": "And tomorrow?"}]},
    "tools_call_string_arguments": {"tools": TOOLS, "messages": [
        {"role": "user", "content": "Weather in Oslo?"},
        {"role": "assistant", "content": None,
         "tool_calls": [tool_call("{\"city\": \"Oslo\"}")]},
        {"role": "tool", "tool_call_id": "call12345", "content": "cold"}]},
    "tools_no_system": {"tools": TOOLS, "messages": [
        {"role": "user", "content": "Search for cats"}]},
    "two_tool_calls": {"tools": TOOLS, "messages": [
        {"role": "user", "content": "Weather in A and B?"},
        {"role": "assistant", "content": "",
         "tool_calls": [tool_call({"city": "A"}), tool_call({"city": "B", "days": 2})]},
        {"role": "tool", "tool_call_id": "call12345", "content": "sunny"},
        {"role": "tool", "tool_call_id": "call12345", "content": "rain"}]},
    "bad_alternation": {"messages": [
        {"role": "user", "content": "one"}, {"role": "user", "content": "two"}]},
    "extra_context": {"messages": [{"role": "user", "content": "hi"}],
                      "context": {"enable_thinking": True, "date_string": "01 Jan 2025",
                                  "thinking": True}},
}


# ---------------------------------------------------------------- references

def refs_dir() -> Path:
    return Path(os.environ.get("LUMEN_REFS") or Path.home() / ".cache" / "lumen" / "refs")


def sdist_path() -> Path:
    path = refs_dir() / SDIST
    if not path.exists():  # downloaded once, then reused by every run
        refs_dir().mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                        LLAMA_CPP_PYTHON, "-d", str(refs_dir())], check=True, capture_output=True)
    return path


@pytest.fixture(scope="module")
def vendor_templates():
    templates = {}
    with tarfile.open(sdist_path()) as tar:
        for name, file in VENDOR_FILES.items():
            templates[name] = tar.extractfile(TEMPLATE_DIR + file).read().decode()
    from gguf import GGUFReader
    reader = GGUFReader(str(real_model("SmolLM2-135M-Instruct.Q4_1.gguf")))
    field = reader.fields["tokenizer.chat_template"]
    templates["smollm2"] = bytes(field.parts[field.data[0]]).decode()
    return templates


def hf_environment():
    """The jinja2 environment transformers compiles chat templates in."""
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[jinja2.ext.loopcontrols])

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                          sort_keys=sort_keys)

    def strftime_now(fmt):
        return datetime.datetime.fromtimestamp(NOW, tz=datetime.timezone.utc).strftime(fmt)

    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def render_reference(template: str, request: dict):
    """(text, None) or (None, error) as transformers' apply_chat_template would give."""
    bos, eos = request["bos_token"], request["eos_token"]
    try:
        text = hf_environment().from_string(template).render(
            messages=request["messages"], tools=request.get("tools"), documents=None,
            add_generation_prompt=request["add_generation_prompt"], bos_token=bos, eos_token=eos,
            **request.get("context", {}))
        return text, None
    except jinja2.exceptions.TemplateError as e:
        return None, str(e)
    except (TypeError, ValueError, AttributeError, IndexError, KeyError) as e:
        return None, str(e)


def render_lumen(args: list, request: dict):
    result = subprocess.run([lumen_bin(), "chat-template", "render", *args],
                            input=json.dumps({**request, "now": NOW}).encode(), capture_output=True)
    if result.returncode != 0:
        return None, result.stderr.decode(errors="replace")
    return result.stdout.decode(), None


def make_request(template_name: str, conversation: dict, generation_prompt: bool) -> dict:
    bos, eos = SPECIAL[FAMILY[template_name]]
    return {**conversation, "add_generation_prompt": generation_prompt, "bos_token": bos,
            "eos_token": eos}


def starts_with_system(conversation: dict) -> bool:
    return conversation["messages"][0]["role"] == "system"


def compare(template_text: str, template_name: str, lumen_args: list, select=lambda c: True,
            may_extend=lambda c: False, same_errors=True) -> int:
    """Renders every selected conversation both ways; returns how many rendered (not errors).

    `may_extend(conversation)`: where the reference refuses the conversation, Lumen may render it
    (a built-in that deliberately accepts more, e.g. Gemma 3's system prompt). `same_errors`:
    a template's own raise_exception message must come through unchanged."""
    rendered = 0
    for conv_name, conversation in CONVERSATIONS.items():
        if not select(conversation):
            continue
        for generation_prompt in (False, True):
            request = make_request(template_name, conversation, generation_prompt)
            want, want_error = render_reference(template_text, request)
            got, got_error = render_lumen(lumen_args, request)
            where = f"{template_name} / {conv_name} / add_generation_prompt={generation_prompt}"
            if want_error is not None and may_extend(conversation):
                continue
            if want_error is not None:
                assert got_error is not None, f"{where}: jinja2 failed ({want_error}), Lumen rendered {got!r}"
                assert "lumen: error: chat template" in got_error, f"{where}: {got_error}"
                if same_errors and ("raise" in want_error or "raised" in got_error):
                    assert want_error in got_error, f"{where}: {want_error!r} vs {got_error!r}"
                continue
            assert got_error is None, f"{where}: Lumen failed: {got_error}\njinja2 gave {want!r}"
            assert got == want, f"{where}: output differs\njinja2: {want!r}\nlumen:  {got!r}"
            rendered += 1
    return rendered


# Minimum renders each template must produce, so a template that errors everywhere cannot pass.
@pytest.mark.parametrize("name", ["smollm2", *VENDOR_FILES])
def test_vendor_template_matches_jinja2(name, vendor_templates, tmp_path):
    path = tmp_path / "template.jinja"
    path.write_text(vendor_templates[name], encoding="utf-8", newline="")
    rendered = compare(vendor_templates[name], name, ["--template-file", str(path)])
    print(f"{name}: {rendered} identical renders")
    assert rendered >= 8, f"{name}: only {rendered} conversations rendered"


@pytest.mark.parametrize("builtin", sorted(BUILTINS))
def test_builtin_template_matches_vendor(builtin, vendor_templates):
    vendor = BUILTINS[builtin]
    select, may_extend = (lambda c: True), (lambda c: False)
    if builtin == "chatml":
        # SmolLM2's template is ChatML plus a default system prompt of its own: compare where
        # the conversation brings its system prompt.
        select = starts_with_system
    if builtin == "gemma":
        # The reference is Gemma 2's template, which refuses system messages; Gemma 3 (and so
        # the built-in) folds them into the first user turn, checked in the test below.
        # Gemma 3 also checks the content type before the turn order, so it may refuse a
        # conversation for a different reason than Gemma 2 does.
        may_extend = starts_with_system
    rendered = compare(vendor_templates[vendor], vendor, ["--chat-template", builtin], select,
                       may_extend, same_errors=builtin != "gemma")
    print(f"{builtin} (vs {vendor}): {rendered} identical renders")
    assert rendered >= 6


def test_builtin_gemma_folds_the_system_prompt_like_gemma3():
    # Gemma 3's template puts the system text, then a blank line, at the start of the first
    # user turn (google/gemma-3-*-it); the rest is Gemma 2's format, compared above.
    request = {**CONVERSATIONS["system_user"], "add_generation_prompt": True, "bos_token": "<bos>"}
    got, err = render_lumen(["--chat-template", "gemma"], request)
    assert err is None, err
    assert got == ("<bos><start_of_turn>user\nYou are a terse assistant.\n\nWhat is 2+2?<end_of_turn>\n"
                   "<start_of_turn>model\n")


def test_builtin_list_names_every_builtin():
    result = subprocess.run([lumen_bin(), "chat-template", "list"], capture_output=True, check=True)
    assert sorted(result.stdout.decode().split()) == sorted(BUILTINS)


def test_model_template_from_gguf_matches(vendor_templates):
    # -m reads tokenizer.chat_template and the bos/eos token texts from the GGUF itself.
    request = {**CONVERSATIONS["system_multi_turn"], "add_generation_prompt": True}
    got, err = render_lumen(["-m", str(real_model("SmolLM2-135M-Instruct.Q4_1.gguf"))], request)
    assert err is None, err
    want, _ = render_reference(vendor_templates["smollm2"],
                               {**request, "bos_token": "<|im_start|>", "eos_token": "<|im_end|>"})
    assert got == want


def test_model_without_template_is_a_clear_error(tmp_path):
    # A llama file could be any of several chat formats: no guess.
    import gguf
    path = tmp_path / "no_template.gguf"
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_token_list(["<s>", "</s>", "hi"])
    writer.add_bos_token_id(0)
    writer.add_eos_token_id(1)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    _, err = render_lumen(["-m", str(path)], {"messages": [{"role": "user", "content": "hi"}]})
    assert err is not None and "no tokenizer.chat_template" in err and "--chat-template" in err


def test_gemma_without_template_uses_the_builtin_gemma_one():
    # Gemma 3's GGUF carries no tokenizer.chat_template; its family has one format.
    request = {"messages": [{"role": "user", "content": "hi"}], "add_generation_prompt": True}
    implicit, err = render_lumen(["-m", str(real_model("gemma-3-270m-q4_k_m.gguf"))], request)
    assert err is None, err
    explicit, err = render_lumen(["-m", str(real_model("gemma-3-270m-q4_k_m.gguf")), "--chat-template", "gemma"],
                                 request)
    assert err is None, err
    # The Gemma 3 GGUF's own special tokens: <bos> / <eos>.
    assert implicit == explicit == "<bos><start_of_turn>user\nhi<end_of_turn>\n<start_of_turn>model\n"


@pytest.mark.parametrize("template, message", [
    ("{% include 'x' %}", "unsupported or unknown tag 'include'"),
    ("{{ 1 +", "line 1"),
    ("line\n{% for %}", "line 2"),
    ("{{ x.y }}", "'x' is undefined"),
    ("{{ 'a' * 100000000 }}", "size limit"),
    ("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}", "nest too deeply"),
    ("{{ " + "(" * 5000 + "1" + ")" * 5000 + " }}", "nests too deeply"),
])
def test_unrunnable_templates_fail_cleanly(template, message, tmp_path):
    path = tmp_path / "bad.jinja"
    path.write_text(template)
    _, err = render_lumen(["--template-file", str(path)], {"messages": []})
    assert err is not None and message in err, err
    assert err.count("\n") == 1  # one line, no crash trace
