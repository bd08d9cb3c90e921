"""One set of default sampling parameters (docs/sampling-defaults.md): the CLI's flags default to
what Python's SamplingParams() holds, and with nothing but a seed given, `lumen run`, the
server's /v1/completions and LLM.generate draw the same text; the chat page sends no sampling
field it was not given, so the server's defaults are its defaults too."""
import json
import os
import re
import subprocess
import urllib.request
from pathlib import Path

import lumen

REPO = Path(__file__).resolve().parents[3]
PROMPT = "Once upon a time"
SEED = 11
TOKENS = 24

# `lumen run` flag -> SamplingParams attribute.
FLAGS = {"--temp": "temperature", "--top-k": "top_k", "--top-p": "top_p", "--min-p": "min_p",
         "--typical-p": "typical_p", "--repeat-penalty": "repetition_penalty",
         "--frequency-penalty": "frequency_penalty", "--presence-penalty": "presence_penalty",
         "--repeat-last-n": "penalty_last_n"}


def help_defaults(lumen_bin, command):
    """The default CLI11 prints with each flag of `lumen COMMAND --help` ("--temp FLOAT=1")."""
    text = subprocess.run([lumen_bin, command, "--help"], capture_output=True, text=True, check=True).stdout
    found = {}
    for flag in FLAGS:
        m = re.search(rf"{re.escape(flag)} [A-Z]+=(\S+)", text)
        assert m, f"no default shown for {flag} in `lumen {command} --help`"
        found[flag] = float(m.group(1))
    return found


def test_the_cli_flags_default_to_python_s_sampling_params(lumen_bin):
    defaults = lumen.SamplingParams()
    for command in ("run", "chat"):
        for flag, value in help_defaults(lumen_bin, command).items():
            assert value == getattr(defaults, FLAGS[flag]), f"lumen {command} {flag}"


def server_completion(lumen_bin, model_path, body):
    proc = subprocess.Popen([lumen_bin, "serve", "-m", str(model_path), "--port", "0", "--max-model-len", "1024",
                             "--kv-cache-memory", "128M"], stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    try:
        port = None
        for line in proc.stderr:
            if m := re.search(r"on http://[^:]+:(\d+)", line):
                port = int(m.group(1))
                break
        assert port, "lumen serve did not start"
        request = urllib.request.Request(f"http://127.0.0.1:{port}/v1/completions", data=json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=120) as response:
            return json.load(response)["choices"][0]["text"]
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def test_cli_server_and_python_sample_alike_with_only_a_seed(llm, model_path, lumen_bin):
    [python] = llm.generate(PROMPT, lumen.SamplingParams(seed=SEED, max_tokens=TOKENS))
    cli = subprocess.run([lumen_bin, "run", "-m", str(model_path), "-p", PROMPT, "-n", str(TOKENS), "--seed",
                          str(SEED)], capture_output=True, text=True, check=True, timeout=120).stdout
    cli = cli[:-1] if cli.endswith("\n") else cli  # run ends its line
    server = server_completion(lumen_bin, model_path, {"prompt": PROMPT, "max_tokens": TOKENS, "seed": SEED})
    assert len(python.outputs[0].text) > 20
    assert cli == python.outputs[0].text
    assert server == python.outputs[0].text


def test_the_chat_page_leaves_sampling_to_the_server():
    page = (REPO / "src" / "server" / "web" / "index.html").read_text()
    for field in ("temperature", "top-p", "max-tokens", "seed"):
        tag = re.search(rf'<input id="{field}"[^>]*>', page)
        assert tag, field
        assert "value=" not in tag.group(0), f"the page presets {field}: {tag.group(0)}"
