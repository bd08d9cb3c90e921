"""Context parallelism over MPI (issue 53): `mpirun -np N lumen serve --context-parallel-size N`
(and run) on loopback, one thread per rank, against one process.

A prompt's prefill is shared: each rank runs every layer over its two chunks of the prompt and
attends over the other ranks' keys as they pass round the ring (f32 K/V, merged by log-sum-exp),
where one process attends over its f16 cache. Rank 0 stores every block it sees and decodes
alone. The attention therefore rounds otherwise than one process's, and a quantized model's
8-bit activations turn that into small changes of the log-probabilities: greedy tokens must match
wherever one process's best token leads the next by a clear margin (the tensor-parallel tests'
rule), over every position of a prompt of a few hundred tokens and the continuation decoded
after it.
"""
import os
import subprocess

import pytest

from conftest import LumenServer, model_path
from mpi_helpers import gemma_path, mpirun, stop_ranks

# A few hundred tokens of plain prose: every position is a row of the shared prefill.
PASSAGE = (
    "The lighthouse stood on a rock a mile from the harbour, and for forty years the same family had kept it. "
    "Every evening the keeper climbed the spiral stairs, trimmed the wick, polished the great lens and wrote the "
    "weather in the log: the wind, the height of the waves, the ships that passed and the ones that sheltered in "
    "the bay. In winter the storms came from the west and the spray reached the gallery; in summer the fog rolled "
    "in from the sea and the horn sounded every thirty seconds until dawn. The keeper's daughter learned to read "
    "from the old logs, and by the time she was twelve she could name every ship that used the harbour by the shape "
    "of its funnel. When the lamp was finally replaced by an automatic light, she was the one who wrote the last "
    "entry, in the same careful hand her grandfather had used, and then she locked the door and walked back along "
    "the causeway to the town. Years later, when people asked her what she missed, she said it was not the view or "
    "the quiet but the sense that somebody out there in the dark was counting on the light. "
)
TEXTS = [PASSAGE + "Question: who wrote the last entry in the log? Answer:",
         PASSAGE + "The next morning, the harbour master"]
MAX_TOKENS = 24
# As tests/e2e/test_tensor_parallel.py: where one process's best token leads the second by more
# than this (nats), the shared prefill must choose it too.
MARGIN = 0.5
MAX_CHANGE = 1.0


def forced(server, text):
    """Every prompt position's log-probability and two likeliest tokens (the prefill), then a greedy
    continuation with its own (the decode on rank 0)."""
    r = server.post("/v1/completions", {"prompt": text, "max_tokens": MAX_TOKENS, "temperature": 0, "logprobs": 2,
                                         "echo": True, "ignore_eos": True})
    assert r.status_code == 200, r.text
    lp = r.json()["choices"][0]["logprobs"]
    return lp["tokens"], lp["token_logprobs"][1:], lp["top_logprobs"][1:]


def compare(reference, shared):
    """Asserts the best tokens agree wherever one process's best is clear, up to the first position
    where the two runs' chosen tokens differ (after a near tie the continuations may part).
    Returns the positions compared and the largest change of a log-probability before that."""
    compared, worst = 0, 0.0
    for (ref_tokens, ref_lp, ref_top), (tokens, lp, top) in zip(reference, shared):
        for i, (a, b) in enumerate(zip(ref_top, top)):
            if ref_tokens[i + 1] != tokens[i + 1]:
                best = sorted(a.items(), key=lambda kv: -kv[1])
                assert len(best) > 1 and best[0][1] - best[1][1] < MARGIN, f"position {i}: {b} against {a}"
                break
            worst = max(worst, abs(lp[i] - ref_lp[i]))
            best = sorted(a.items(), key=lambda kv: -kv[1])
            if len(best) > 1 and best[0][1] - best[1][1] < MARGIN:
                continue
            assert max(b, key=b.get) == best[0][0], f"position {i}: {b} where one process gives {a}"
            compared += 1
    return compared, worst


def one_and_shared(model, ranks):
    one = LumenServer("-t", "1", model=model)
    try:
        reference = [forced(one, t) for t in TEXTS]
    finally:
        assert one.stop() == 0, "".join(one.log)
    shared = LumenServer("--context-parallel-size", ranks, "-t", "1", model=model, launcher=mpirun(ranks))
    try:
        got = [forced(shared, t) for t in TEXTS]
        # Deterministic: the same prompt again (now a prefix-cache hit, on rank 0 alone) agrees.
        again = forced(shared, TEXTS[0])
    finally:
        assert stop_ranks(shared) == 0, "".join(shared.log)
    return reference, got, again


@pytest.mark.parametrize("ranks", [2, 3])
def test_smollm2_best_tokens_match_one_process(ranks):
    reference, got, again = one_and_shared(model_path(), ranks)
    compared, worst = compare(reference, got)
    print(f"SmolLM2, {ranks} ranks: {compared} positions compared, largest log-probability change {worst:.4f}")
    assert compared >= 250, f"only {compared} clear positions: the comparison says too little"
    assert worst < MAX_CHANGE
    assert compare(reference[:1], [again])[0] >= 120


def test_gemma3_sliding_windows_and_one_kv_head():
    # Gemma 3: 1 KV head (which Ulysses' split over heads could not share), sliding-window layers
    # of 512 (a row's window reaches into the other rank's chunks), QK norms, post-norms.
    model = gemma_path()
    assert model.exists(), f"{model} is missing: run scripts/fetch_models.py"
    reference, got, _ = one_and_shared(model, 2)
    compared, worst = compare(reference, got)
    print(f"Gemma 3, 2 ranks: {compared} positions compared, largest log-probability change {worst:.4f}")
    assert compared >= 200
    assert worst < MAX_CHANGE


def run(*args, ranks=0):
    lumen = os.environ["LUMEN_BIN"]
    launcher = mpirun(ranks) if ranks else []
    return subprocess.run([*launcher, lumen, "run", "-m", str(model_path()), "-t", "1", *map(str, args)],
                          capture_output=True, text=True, timeout=120)


def test_run_under_mpirun_and_short_prompts():
    # A prompt shorter than two rows per rank runs on rank 0 alone: one process's text exactly.
    one = run("-p", "Hi", "-n", "12", "--temp", "0")
    two = run("--cp", "2", "-p", "Hi", "-n", "12", "--temp", "0", ranks=2)
    assert one.returncode == 0 and two.returncode == 0, one.stderr + two.stderr
    assert two.stdout == one.stdout
    # A long one is shared; rank 0 alone prints.
    long = run("--context-parallel-size", "2", "-p", TEXTS[0], "-n", "8", "--temp", "0", ranks=2)
    assert long.returncode == 0, long.stderr
    assert long.stdout.strip()


def test_clear_errors():
    alone = run("--context-parallel-size", "2", "-p", "hi")
    assert alone.returncode != 0
    assert "mpirun -np 2" in alone.stderr
    wrong_count = run("--context-parallel-size", "3", "-p", "hi", ranks=2)
    assert wrong_count.returncode != 0
    assert "context parallel size 3 needs 3 processes" in wrong_count.stderr
    with_tp = run("--context-parallel-size", "2", "--tensor-parallel-size", "2", "-p", "hi", ranks=4)
    assert with_tp.returncode != 0
    assert "does not combine with tensor or pipeline parallelism" in with_tp.stderr
    quantized = run("--cp", "2", "--kv-cache-dtype", "q8_0", "-p", TEXTS[1], "-n", "2", ranks=2)
    assert quantized.returncode != 0
    assert "context parallelism needs an unrotated KV cache" in quantized.stderr
