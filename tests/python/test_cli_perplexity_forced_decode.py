"""`lumen perplexity --forced-decode`: each window's second half fed token by token through the
engine. Without eviction it must give the one-pass perplexity over the same scored positions;
an eviction that keeps every position (a budget at least the window) must change nothing; one
that keeps less must change the result; and --kv-eviction without it is refused."""
import json
import subprocess

import pytest

from conftest import lumen_bin, real_model

from test_cli_perplexity import MODEL, TEXT

# One window of 128 tokens: a 65-token prompt and 63 forced tokens (a few seconds on two cores).
WINDOW = ["-f", str(TEXT), "-c", "128", "--chunks", "1", "-t", "2"]


def perplexity_json(*args):
    cmd = [lumen_bin(), "perplexity", "-m", str(real_model(MODEL)), *WINDOW, "--json", *args]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


@pytest.fixture(scope="module")
def one_pass():
    return perplexity_json()


@pytest.fixture(scope="module")
def forced():
    return perplexity_json("--forced-decode")


def test_forced_decode_gives_the_one_pass_perplexity(one_pass, forced):
    assert forced["mode"] == "forced-decode" and one_pass["mode"] == "one-pass"
    assert forced["tokens_scored"] == one_pass["tokens_scored"] == 63
    # The same positions through decode steps instead of one batched pass: on the CPU backend the
    # rows come out bit for bit the same (measured: equal to the last digit on SmolLM2); 1e-3
    # relative leaves room for a kernel whose reduction order follows the batch's rows, and is
    # still far below what evicting even a few positions moves (the test below).
    assert forced["ppl"] == pytest.approx(one_pass["ppl"], rel=1e-3)


@pytest.mark.parametrize("spec", ["snapkv:budget=128", "h2o:budget=128", "sink:4,window:96"])
def test_eviction_that_keeps_every_position_changes_nothing(forced, spec):
    # A budget of the whole window keeps all of its at most 127 positions; StreamingLLM holds its
    # sink block (16), its window (96) and the block being filled (16) before it drops one
    # (engine/context_shift.h, positions_held): 128, so it drops nothing either.
    got = perplexity_json("--forced-decode", "--kv-eviction", spec)
    assert got["kv_eviction"] == spec
    assert got["ppl"] == pytest.approx(forced["ppl"], rel=1e-6)


@pytest.mark.parametrize("spec", ["h2o:budget=32", "sink:4,window:32"])
def test_eviction_below_the_window_changes_the_perplexity(forced, spec):
    got = perplexity_json("--forced-decode", "--kv-eviction", spec)
    assert got["tokens_scored"] == forced["tokens_scored"]
    assert abs(got["ppl"] / forced["ppl"] - 1) > 1e-3


def test_kv_eviction_without_forced_decode_is_refused():
    cmd = [lumen_bin(), "perplexity", "-m", str(real_model(MODEL)), *WINDOW, "--kv-eviction", "h2o:budget=32"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert r.returncode != 0
    assert "--kv-eviction needs --forced-decode" in r.stderr
