"""`lumen run` as a user meets it: the text ends its line before the speeds, Ctrl-C still prints
them, -n -1 generates until the end, -f reads the prompt, --logprobs K lists K alternatives, and no
control token's text is printed on any path."""
import re
import signal
import subprocess
import time

from conftest import lumen_bin, real_model, run_lumen

MODEL = "SmolLM2-135M-Instruct.Q4_1.gguf"
# A chat turn the default model answers greedily in about 30 tokens and ends with <|im_end|>.
CHAT_PROMPT = ("<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face"
               "<|im_end|>\n<|im_start|>user\nSay hello.<|im_end|>\n<|im_start|>assistant\n")


def run(*args, **kw):
    cmd = [lumen_bin(), "run", "-m", str(real_model(MODEL)), "--temp", "0", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, **kw)


def run_merged(*args):
    """stdout and stderr into one pipe, as a terminal shows them."""
    cmd = [lumen_bin(), "run", "-m", str(real_model(MODEL)), "--temp", "0", *args]
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)


def test_text_ends_its_line_before_the_speeds():
    out = run_merged("-p", "Once upon a time", "-n", "8").stdout
    assert re.search(r"\nprompt: \d+ tokens", out), out
    assert "\ngeneration: 8 tokens" in out


def test_minus_one_generates_until_the_end_of_generation():
    r = run("-p", CHAT_PROMPT, "-n", "-1")
    assert r.returncode == 0, r.stderr
    generated = int(re.search(r"generation: (\d+) tokens", r.stderr).group(1))
    assert 5 < generated < 200  # ended on its own, well before the context
    assert "<|im_end|>" not in r.stdout


def test_minus_two_is_refused():
    r = run("-p", "Hi", "-n", "-2")
    assert r.returncode == 1 and "-n must be" in r.stderr


def test_prompt_from_a_file(tmp_path):
    path = tmp_path / "prompt.txt"
    path.write_bytes(b"Once upon a time")
    assert run("-f", str(path), "-n", "6").stdout == run("-p", "Once upon a time", "-n", "6").stdout
    r = run("-n", "4")
    assert r.returncode == 1 and "-p TEXT or -f FILE" in r.stderr
    r = run("-f", str(tmp_path / "missing.txt"))
    assert r.returncode == 1 and "cannot read the prompt file" in r.stderr


def test_prompt_file_that_is_no_text_file_is_a_clear_error(tmp_path):
    # A directory used to leak libstdc++'s "basic_filebuf::underflow"; /dev/zero read forever.
    r = run("-f", str(tmp_path))
    assert r.returncode == 1 and r.stderr.strip() == f"lumen: error: the prompt file '{tmp_path}' is a directory"
    r = run("-f", "/dev/zero")
    assert r.returncode == 1 and "larger than 64 MiB" in r.stderr


def test_logprobs_lists_k_alternatives():
    r = run("-p", "The capital of France is", "-n", "4", "--logprobs", "3")
    assert r.returncode == 0, r.stderr
    lines = [l for l in r.stderr.splitlines() if re.match(r"\s+\d+ '", l)]
    assert len(lines) == 4
    for line in lines:
        assert len(re.findall(r"\d+:'", line)) == 3, line


def test_engine_paths_print_no_end_token_text():
    for extra in (["--logprobs", "1"], ["--completions", "2", "--top-k", "3", "--seed", "3"],
                  ["--beam-width", "2", "--early-stopping"]):
        r = run("-p", CHAT_PROMPT, "-n", "200", *extra)
        assert r.returncode == 0, r.stderr
        assert "<|im_end|>" not in r.stdout and "<|im_start|>" not in r.stdout, (extra, r.stdout)


def interrupt_after(seconds, *args):
    cmd = [lumen_bin(), "run", "-m", str(real_model(MODEL)), "--temp", "0", "--ignore-eos", *args]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(seconds)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    return proc.returncode, out, err


def test_ctrl_c_ends_the_text_and_prints_the_speeds():
    rc, out, err = interrupt_after(3, "-p", "Count: 1, 2, 3,", "-n", "100000", "-c", "8192")
    assert rc == 0, err
    assert out.endswith("\n") and len(out) > 10
    assert "generation:" in err


def test_ctrl_c_in_the_engine_path_prints_what_was_generated():
    rc, out, err = interrupt_after(3, "-p", "Count: 1, 2, 3,", "-n", "-1", "-c", "8192", "--logprobs", "0")
    assert rc == 0, err
    assert len(out) > 10
    assert "1 completions" in err


def test_malformed_or_impossible_kv_eviction_is_refused():
    # Malformed, an overflowing count, a zero window, and sinks plus window past the context:
    # each a one-line error before anything runs, never a crash.
    for value in ["sink:4", "sink:-1,window:64", "window:64,sink:4", "sink:4,window:0",
                  "sink:4,window:99999999999999999999999", "sink:4,window:64x", "sink:1000,window:5000"]:
        r = run("-p", "Hi", "-n", "4", "-c", "256", "--kv-eviction", value)
        assert r.returncode == 1, (value, r.stderr)
        assert r.stderr.strip().count("\n") == 0 and ("kv-eviction" in r.stderr or "room to shift" in r.stderr), \
            (value, r.stderr)
    r = run("-p", "Hi", "-n", "4", "-c", "256", "--context-overflow", "shift", "--context-keep", "100000")
    assert r.returncode != 0 and "room to shift" in r.stderr, r.stderr


def test_kv_eviction_generates_past_the_context():
    r = run("-p", "1, 2, 3, 4, 5,", "-n", "400", "-c", "128", "--kv-eviction", "sink:4,window:64", "--ignore-eos")
    assert r.returncode == 0, r.stderr
    assert "generation: 400 tokens" in r.stderr


SPEC = '{"method": "ngram", "num_speculative_tokens": 5, "prompt_lookup_max": 4, "prompt_lookup_min": 2}'


def test_speculative_config_gives_the_same_text_and_reports_acceptance():
    # A prompt the answer copies from: drafts are found and accepted, and greedy output is unchanged.
    prompt = ("<|im_start|>user\nRepeat exactly: the keeper climbed the spiral stairs every evening, counting "
              "the steps as his father had taught him.<|im_end|>\n<|im_start|>assistant\n")
    plain = run("-p", prompt, "-n", "40")
    spec = run("-p", prompt, "-n", "40", "--speculative-config", SPEC)
    assert plain.returncode == 0 and spec.returncode == 0, spec.stderr
    assert spec.stdout == plain.stdout
    m = re.search(r"speculative decoding: (\d+) drafts, (\d+) of (\d+) draft tokens accepted", spec.stderr)
    assert m and int(m.group(2)) > 0, spec.stderr


def test_draft_model_and_layer_skip_give_the_same_text(tmp_path):
    # The real model's first 26 layers as its draft, in place (layer_skip) and as a pruned file
    # (draft_model): the same greedy text as without, and drafts accepted.
    prompt = "<|im_start|>user\nWhat is a lighthouse for?<|im_end|>\n<|im_start|>assistant\n"
    draft = tmp_path / "draft-26.gguf"
    assert run_lumen("prune", real_model("SmolLM2-135M-Instruct.Q4_1.gguf"), draft, "--keep-layers", "26").returncode == 0
    plain = run("-p", prompt, "-n", "24")
    # The last one as a token tree: the draft's next two likeliest tokens beside each of its own.
    for config in ('{"method": "layer_skip", "num_layers": 26, "num_speculative_tokens": 3, "min_acceptance_rate": 0}',
                   '{"method": "draft_model", "model": "%s", "num_speculative_tokens": 3, "min_acceptance_rate": 0}'
                   % draft,
                   '{"method": "draft_model", "model": "%s", "num_speculative_tokens": 3, "min_acceptance_rate": 0, '
                   '"num_candidates": 3}' % draft):
        spec = run("-p", prompt, "-n", "24", "--speculative-config", config)
        assert spec.returncode == 0, spec.stderr
        assert spec.stdout == plain.stdout, config
        m = re.search(r"speculative decoding: (\d+) drafts, (\d+) of (\d+) draft tokens accepted", spec.stderr)
        assert m and int(m.group(2)) > 0, spec.stderr


def test_lookahead_and_token_trees_give_the_same_text():
    # No draft model and nothing to copy from the prompt: the model's own n-grams (lookahead),
    # verified as a chain and as a token tree, and n-gram matches verified as a tree. Each with
    # min_acceptance_rate 0: else a draft that did not pay on a busy machine switches itself off
    # for a while, and how many it drafted depends on that machine's timings.
    prompt = "<|im_start|>user\nWrite a short story about a robot who learns to paint.<|im_end|>\n<|im_start|>assistant\n"
    plain = run("-p", prompt, "-n", "64")
    for config in ('{"method": "lookahead", "min_acceptance_rate": 0}',
                   '{"method": "lookahead", "num_candidates": 4, "min_acceptance_rate": 0}',
                   '{"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_min": 1, "num_candidates": 3, '
                   '"min_acceptance_rate": 0}'):
        spec = run("-p", prompt, "-n", "64", "--speculative-config", config)
        assert spec.returncode == 0, spec.stderr
        assert spec.stdout == plain.stdout, config
        m = re.search(r"speculative decoding: (\d+) drafts, (\d+) of (\d+) draft tokens accepted", spec.stderr)
        assert m and int(m.group(2)) > 0, (config, spec.stderr)


def test_malformed_speculative_config_is_a_one_line_error():
    for value in ["{", "[]", '"ngram"', '{"method": "ngram"}', '{"num_speculative_tokens": 3}',
                  '{"method": "eagle", "num_speculative_tokens": 3}', '{"method": 1, "num_speculative_tokens": 3}',
                  '{"method": "ngram", "num_speculative_tokens": 0}',
                  '{"method": "ngram", "num_speculative_tokens": 1e99}',
                  '{"method": "ngram", "num_speculative_tokens": 99999999999}',
                  '{"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_min": 5, "prompt_lookup_max": 2}',
                  '{"method": "ngram", "num_speculative_tokens": 3, "lookahead": true}',
                  '{"method": "draft_model", "num_speculative_tokens": 3}',
                  '{"method": "draft_model", "model": 5, "num_speculative_tokens": 3}',
                  '{"method": "layer_skip", "num_speculative_tokens": 3}',
                  '{"method": "layer_skip", "num_layers": 4, "model": "d.gguf", "num_speculative_tokens": 3}',
                  '{"method": "lookahead", "ngram_size": 2}',
                  '{"method": "lookahead", "window_size": 4, "num_candidates": 99}',
                  '{"method": "layer_skip", "num_layers": 4, "num_speculative_tokens": 3, "num_candidates": 0}']:
        r = run("-p", "Hi", "-n", "4", "--speculative-config", value)
        assert r.returncode == 1, (value, r.stderr)
        assert r.stderr.strip().count("\n") == 0 and "--speculative-config" in r.stderr, (value, r.stderr)
