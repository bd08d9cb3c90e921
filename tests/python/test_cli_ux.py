"""The `lumen` command's rough edges as a new user meets them: help, --version, suggestions for
mistyped options, tokenize -p, detokenize on a terminal, chat-template render of a bare list, the
bench tables and URLs."""
import json
import os
import pty
import re
import socket
import subprocess

from conftest import lumen_bin, real_model

MODEL = "SmolLM2-135M-Instruct.Q4_1.gguf"


def lumen(*args, stdin=None, timeout=300):
    return subprocess.run([lumen_bin(), *args], input=stdin, capture_output=True, text=True, timeout=timeout)


def test_bare_lumen_prints_the_help_and_help_exits_0():
    bare = lumen()
    assert bare.returncode == 2
    assert "Subcommands:" in bare.stderr and "run" in bare.stderr
    help_ = lumen("help")
    assert help_.returncode == 0
    assert "Subcommands:" in help_.stdout and "serve" in help_.stdout


def test_version_names_commit_build_isa_and_cuda():
    r = lumen("--version")
    assert r.returncode == 0
    assert re.match(r"lumen \d+\.\d+\.\d+ \(\S+\)", r.stdout), r.stdout
    assert "build: " in r.stdout and "CPU kernels:" in r.stdout and "CUDA: " in r.stdout


def test_a_mistyped_option_gets_a_suggestion():
    r = lumen("run", "--temperature", "0.5", "-p", "x")
    assert r.returncode != 0
    assert "did you mean '--temp'?" in r.stderr
    r = lumen("serve", "--prot", "8081")
    assert "did you mean '--port'?" in r.stderr


def test_tokenize_takes_the_text_with_p():
    model = str(real_model(MODEL))
    from_flag = lumen("tokenize", "-m", model, "-p", "Hello world")
    from_stdin = lumen("tokenize", "-m", model, stdin="Hello world")
    assert from_flag.returncode == 0 and from_flag.stdout == from_stdin.stdout
    assert len(from_flag.stdout.split()) == 2


def test_detokenize_ends_with_a_newline_only_on_a_terminal():
    model = str(real_model(MODEL))
    ids = lumen("tokenize", "-m", model, "-p", "Hello world").stdout
    piped = lumen("detokenize", "-m", model, stdin=ids)
    assert piped.stdout == "Hello world"
    # On a terminal: run it with stdout on a pseudo-terminal.
    main, sub = pty.openpty()
    proc = subprocess.Popen([lumen_bin(), "detokenize", "-m", model], stdin=subprocess.PIPE, stdout=sub,
                            stderr=subprocess.PIPE)
    os.close(sub)
    proc.communicate(ids.encode(), timeout=120)
    out = b""
    while True:
        try:
            chunk = os.read(main, 4096)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    os.close(main)
    assert out == b"Hello world\r\n"  # the terminal turns \n into \r\n


def test_chat_template_render_takes_a_bare_list_for_a_reply():
    messages = [{"role": "user", "content": "Hi"}]
    bare = lumen("chat-template", "render", "--chat-template", "chatml", stdin=json.dumps(messages))
    assert bare.returncode == 0, bare.stderr
    assert bare.stdout.endswith("<|im_start|>assistant\n")
    explicit = lumen("chat-template", "render", "--chat-template", "chatml",
                     stdin=json.dumps({"messages": messages, "add_generation_prompt": False}))
    assert not explicit.stdout.endswith("assistant\n")
    assert "a JSON list of messages" in lumen("chat-template", "render", "--chat-template", "chatml",
                                              stdin='"hi"').stderr
    assert "add_generation_prompt" in lumen("chat-template", "render", "--help").stdout


def test_bench_latency_prints_a_markdown_table_with_backend_and_threads():
    r = lumen("bench", "latency", "-m", str(real_model(MODEL)), "-p", "16", "-n", "4", "-r", "1", "-t", "1")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    assert header == ["model", "size", "params", "backend", "threads", "test", "t/s"]
    assert set(lines[1].replace("|", "").replace(" ", "")) <= set("-:")
    row = [c.strip() for c in lines[2].strip("|").split("|")]
    assert row[3] == "CPU" and row[4] == "1" and row[5] == "pp16"


def test_bench_serve_exits_non_zero_when_every_request_failed():
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    r = lumen("bench", "serve", "--base-url", f"http://127.0.0.1:{port}/v1", "--num-prompts", "2",
              "--input-len", "4", "--output-len", "2", "--seed", "1", timeout=120)
    assert r.returncode != 0
    assert "every request failed" in r.stderr
    assert "could not connect to the server" in r.stderr  # not httplib's bare "Connection"
    # The SDK-style base URL was folded: requests went to /v1/completions, not /v1/v1/completions.
    assert "/v1/v1/" not in r.stderr and f"127.0.0.1:{port}/v1/completions" in r.stderr


def test_max_itl_ms_refuses_what_is_not_a_positive_number_of_milliseconds():
    # Checked while parsing, before any model is loaded: one line naming the flag and the value.
    for command in (["serve"], ["bench", "throughput", "--num-prompts", "1", "--input-len", "4", "--output-len", "1"]):
        for bad, why in (("abc", "not a number"), ("40x", "not a number"), ("nan", "not a number"),
                         ("inf", "not a number"), ("0", "out of range"), ("-5", "out of range"),
                         ("1e9", "out of range")):
            r = lumen(*command, "--max-itl-ms", bad, timeout=60)
            assert r.returncode != 0, (command, bad)
            assert f"--max-itl-ms: '{bad}' is {why}" in r.stderr, (command, bad, r.stderr)
        help_ = lumen(*command, "--help", timeout=60)
        assert "--max-itl-ms" in help_.stdout


def test_run_refuses_both_p_and_f_by_name(tmp_path):
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("Hello")
    r = lumen("run", "-m", str(real_model(MODEL)), "-p", "Hello", "-f", str(prompt))
    assert r.returncode == 1
    assert "-p and -f are exclusive" in r.stderr, r.stderr


def test_run_errors_name_the_flags_not_the_api_fields():
    r = lumen("run", "-m", str(real_model(MODEL)), "-p", "Hello", "--temp", "-1")
    assert r.returncode == 1
    assert "--temp must be" in r.stderr and "temperature" not in r.stderr, r.stderr
    r = lumen("run", "-m", str(real_model(MODEL)), "-p", "Hello", "--top-p", "2")
    assert "--top-p must be" in r.stderr, r.stderr


def test_speculative_config_errors_name_the_flag_once():
    r = lumen("run", "-m", str(real_model(MODEL)), "-p", "Hello", "--speculative-config",
              '{"method": "ngram", "num_speculative_tokens": -3}')
    assert r.returncode == 1
    assert "--speculative-config: num_speculative_tokens" in r.stderr, r.stderr
    assert "speculative config:" not in r.stderr, r.stderr


def test_run_speeds_count_in_words_and_say_na_for_no_rate():
    # One generated token: its count is singular and there is no rate to give over its 0 s.
    r = lumen("run", "-m", str(real_model(MODEL)), "-p", "Hello there, friend", "-n", "1", "--temp", "0")
    assert r.returncode == 0, r.stderr
    assert re.search(r"^generation: 1 token in [0-9.]+ s, n/a$", r.stderr, re.M), r.stderr
    assert re.search(r"^prompt: [2-9] tokens in [0-9.]+ s, [0-9.]+ tokens/s$", r.stderr, re.M), r.stderr
    r = lumen("run", "-m", str(real_model(MODEL)), "-p", "Hello", "-n", "1", "--temp", "0")
    assert re.search(r"^prompt: 1 token in [0-9.]+ s, [0-9.]+ tokens/s$", r.stderr, re.M), r.stderr


def test_run_says_when_the_context_ended_the_text():
    # -n -1 runs to the end of a 24-token context: the user learns why it stopped and what to do.
    r = lumen("run", "-m", str(real_model(MODEL)), "-p", "Count: 1, 2, 3,", "-n", "-1", "-c", "24", "--temp", "0",
              "--ignore-eos")
    assert r.returncode == 0, r.stderr
    assert "generation stopped at the end of the context (24 tokens" in r.stderr, r.stderr
    r = lumen("run", "-m", str(real_model(MODEL)), "-p", "Count: 1, 2, 3,", "-n", "4", "--temp", "0")
    assert "end of the context" not in r.stderr, r.stderr


def test_serve_chat_template_file_errors_are_clear(tmp_path):
    # A missing file, a template that does not parse, and a file beside a built-in name: each
    # stops `lumen serve` before it listens, saying what is wrong.
    model = str(real_model(MODEL))
    r = lumen("serve", "-m", model, "--port", "0", "--chat-template-file", str(tmp_path / "none.jinja"), timeout=60)
    assert r.returncode == 1 and "chat template file" in r.stderr and "none.jinja" in r.stderr, r.stderr
    broken = tmp_path / "broken.jinja"
    broken.write_text("{% for m in messages %}{{ m.content }")
    r = lumen("serve", "-m", model, "--port", "0", "--chat-template-file", str(broken), timeout=60)
    assert r.returncode == 1 and "the chat template given cannot be used" in r.stderr, r.stderr
    r = lumen("serve", "-m", model, "--port", "0", "--chat-template", "chatml", "--chat-template-file", str(broken),
              timeout=60)
    assert r.returncode != 0 and "excludes" in r.stderr, r.stderr
