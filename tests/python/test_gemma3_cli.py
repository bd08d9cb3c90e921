"""Gemma 3 270M through the whole stack (`lumen chat`: its built-in template, tokenizer, the
serving engine, the gemma3 forward pass with local and global layers) against llama.cpp: the
reply is llama.cpp's greedy continuation of the same rendered prompt, stored by
scripts/make_logits_golden.py in tests/golden/logits/gemma3.json."""
import json
import subprocess
from pathlib import Path

from conftest import lumen_bin, real_model

GOLDEN = json.loads((Path(__file__).parents[1] / "golden" / "logits" / "gemma3.json").read_text())
MODEL = "gemma-3-270m-q4_k_m.gguf"
SYSTEM = "You are a helpful assistant who answers briefly."
STEPS = 32
# Steps whose two best llama.cpp logits are this close could go either way in an independent
# implementation (the logits test bounds how often); the compared steps are chosen clear of it.
CLEAR_GAP = 0.5


def chat_case():
    # The golden's chat prompt: the gemma template's rendering of SYSTEM and one user turn.
    case = next(c for c in GOLDEN["cases"] if c["prompt"].startswith("<start_of_turn>user\n" + SYSTEM))
    question = case["prompt"].split("\n\n", 1)[1].split("<end_of_turn>")[0]
    return case, question


def detokenize(ids):
    r = subprocess.run([lumen_bin(), "detokenize", "-m", str(real_model(MODEL))], input=" ".join(map(str, ids)),
                       capture_output=True, text=True, check=True)
    return r.stdout


def test_chat_reply_is_llama_cpp_greedy_continuation():
    case, question = chat_case()
    assert min(case["greedy_top2_gap"][:STEPS]) > CLEAR_GAP
    r = subprocess.run([lumen_bin(), "chat", "-m", str(real_model(MODEL)), "--system", SYSTEM, "-n", str(STEPS),
                        "--temp", "0"], input=question + "\n", capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout == detokenize(case["greedy"][:STEPS]) + "\n"


def test_run_takes_the_gemma_prompt_with_its_control_tokens():
    # `lumen run` parses the raw prompt's control tokens, as llama.cpp's tokenizer did for the golden.
    case, _ = chat_case()
    r = subprocess.run([lumen_bin(), "run", "-m", str(real_model(MODEL)), "-p", case["prompt"], "-n", str(STEPS),
                        "--temp", "0"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.rstrip("\n") == detokenize(case["greedy"][:STEPS])
