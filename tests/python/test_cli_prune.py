"""`lumen prune`: a layer-pruned copy of the default model loads in Lumen with the kept layers
and their tensors, unchanged and renumbered; llama.cpp (llama-cpp-python, from the venv that
scripts/make_logits_golden.py describes, ~/.cache/lumen/llama-venv) loads the same file, and
its greedy continuation equals Lumen's, token for token. Bad layer choices are one-line errors
that leave no file."""
import json
import os
import subprocess
from pathlib import Path

import pytest

from conftest import real_model, run_lumen

MODEL = "SmolLM2-135M-Instruct.Q4_1.gguf"
LLAMA_PYTHON = Path(os.environ.get("LUMEN_LLAMA_VENV") or Path.home() / ".cache" / "lumen" / "llama-venv") / "bin" / "python"
PROMPT = "The history of the printing press begins long before Gutenberg. Wooden blocks were"
STEPS = 12

# Runs inside the llama-cpp-python venv: greedy ids of the continuation, one JSON line.
LLAMA_GREEDY = r"""
import json, sys
import llama_cpp.llama_cpp as api
from llama_cpp import Llama
default = api.llama_model_default_params
def plain():  # the plain CPU kernels (see scripts/make_logits_golden.py)
    p = default()
    p.use_extra_bufts = False
    return p
api.llama_model_default_params = plain
path, prompt, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
llm = Llama(model_path=path, n_ctx=256, n_threads=2, seed=0, verbose=False)
tokens = llm.tokenize(prompt.encode(), add_bos=True, special=False)
out = []
for t in llm.generate(tokens, top_k=1, temp=0.0, repeat_penalty=1.0):
    out.append(t)
    if len(out) == steps:
        break
print(json.dumps({"layers": llm.metadata.get("llama.block_count"), "prompt": tokens, "tokens": out}))
"""


def inspect(path):
    return json.loads(run_lumen("inspect", path, "--json").stdout)


@pytest.fixture(scope="module")
def pruned(tmp_path_factory):
    out = tmp_path_factory.mktemp("prune") / "smollm2-8-layers.gguf"
    r = run_lumen("prune", real_model(MODEL), out, "--keep-layers", "8")
    assert "8 of 30 layers" in r.stdout.decode()
    return out


def test_pruned_model_has_the_kept_layers_and_their_tensors(pruned, tmp_path):
    full, cut = inspect(real_model(MODEL)), inspect(pruned)
    assert cut["hparams"]["block_count"] == 8
    names = {t["name"] for t in cut["tensors"]}
    assert not any(n.startswith("blk.8.") for n in names)
    # Every kept tensor is the input's, in type and shape; the ones past layer 7 are gone.
    by_name = {t["name"]: t for t in full["tensors"]}
    for t in cut["tensors"]:
        assert (t["type"], t["shape"]) == (by_name[t["name"]]["type"], by_name[t["name"]]["shape"])
    assert len(cut["tensors"]) == len([n for n in by_name if not n.startswith("blk.") or int(n.split(".")[1]) < 8])
    # A list with gaps renumbers: layers 0, 5 and 29 become 0, 1 and 2.
    listed = tmp_path / "three.gguf"
    run_lumen("prune", real_model(MODEL), listed, "--layers", "0,5,29")
    three = inspect(listed)
    assert three["hparams"]["block_count"] == 3
    assert {t["name"] for t in three["tensors"] if t["name"].startswith("blk.")} == \
        {n.replace("blk.5.", "blk.1.").replace("blk.29.", "blk.2.") for n in by_name
         if n.startswith(("blk.0.", "blk.5.", "blk.29."))}


def lumen_greedy(path, prompt, steps):
    r = run_lumen("run", "-m", path, "-p", prompt, "-n", steps, "--temp", "0", "-t", "2")
    return r.stdout.decode()


def test_llama_cpp_loads_the_pruned_model_and_continues_as_lumen_does(tmp_path):
    if not LLAMA_PYTHON.exists():
        pytest.skip(f"llama-cpp-python is not installed at {LLAMA_PYTHON} (scripts/make_logits_golden.py says how)")
    # Four middle layers dropped, the last 14 renumbered across the gap. Without retraining, a
    # model that keeps most layers still writes text it is sure of; one that keeps few is
    # nearly uniform over many tokens (the first 8 layers alone repeat ", and"; 18 of them pick
    # between tokens 0.03 apart), where the two programs' rounding may pick differently.
    pruned = tmp_path / "smollm2-26-layers.gguf"
    run_lumen("prune", real_model(MODEL), pruned, "--layers", "0-11,16-29")
    r = subprocess.run([str(LLAMA_PYTHON), "-c", LLAMA_GREEDY, str(pruned), PROMPT, str(STEPS)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    ref = json.loads(r.stdout.strip().splitlines()[-1])
    assert ref["layers"] == "26"
    ids = run_lumen("tokenize", "-m", pruned, "-p", PROMPT, "--add-special", "--ids").stdout.decode().split()
    assert [int(i) for i in ids] == ref["prompt"]
    expected = run_lumen("detokenize", "-m", pruned, input=" ".join(map(str, ref["tokens"])).encode()).stdout.decode()
    assert len(set(ref["tokens"])) > 4, expected  # not one token repeated
    # `lumen run` ends its output with a newline when the continuation does not.
    assert lumen_greedy(pruned, PROMPT, STEPS) == expected + "\n"


@pytest.mark.parametrize("args, message", [
    (["--keep-layers", "31"], "layer 30 does not exist"),
    (["--layers", "3,1"], "ascending"),
    (["--layers", "0-x"], "'x' is not a layer index"),
    ([], "--keep-layers L or --layers LIST"),
])
def test_bad_layer_choices_are_refused(tmp_gguf, args, message):
    r = run_lumen("prune", real_model(MODEL), tmp_gguf, *args, check=False)
    assert r.returncode == 1
    err = r.stderr.decode()
    assert message in err and err.count("\n") == 1, err
    assert not tmp_gguf.exists()
