"""`lumen chat --speculative-config`: piped replies are the same text as without it (greedy), the
drafts it made are reported on stderr (stdout keeps only the replies), and a malformed config is a
one-line error before the model loads."""
import re
import subprocess

from conftest import lumen_bin, real_model

MODEL = "SmolLM2-135M-Instruct.Q4_1.gguf"
SPEC = '{"method": "ngram", "num_speculative_tokens": 5, "prompt_lookup_max": 4, "prompt_lookup_min": 2}'
# A turn whose reply copies the message: the n-gram proposer finds drafts in the conversation.
TURNS = ("Repeat exactly: the keeper climbed the spiral stairs every evening, counting the steps as his "
         "father had taught him.\n")


def chat(*args):
    cmd = [lumen_bin(), "chat", "-m", str(real_model(MODEL)), "--temp", "0", "-n", "40", *args]
    return subprocess.run(cmd, input=TURNS, capture_output=True, text=True, timeout=300)


def test_chat_speculates_without_changing_the_replies():
    plain = chat()
    spec = chat("--speculative-config", SPEC)
    assert plain.returncode == 0 and spec.returncode == 0, spec.stderr
    assert spec.stdout == plain.stdout and spec.stdout.strip()
    m = re.search(r"speculative decoding: (\d+) drafts, (\d+) of (\d+) draft tokens accepted", spec.stderr)
    assert m and int(m.group(1)) > 0 and 0 < int(m.group(2)) <= int(m.group(3)), spec.stderr
    assert "speculative decoding" not in plain.stderr


def test_chat_rejects_a_malformed_config_in_one_line():
    r = chat("--speculative-config", '{"method": "ngram"}')
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr.strip().count("\n") == 0 and "--speculative-config" in r.stderr, r.stderr
