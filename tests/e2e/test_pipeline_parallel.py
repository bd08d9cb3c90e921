"""Pipeline parallelism over MPI (issue 21): `mpirun -np M lumen serve --pipeline-parallel-size M`
(and run, bench latency), alone and with tensor parallelism, on loopback.

A stage runs whole layers exactly as one process runs them, and a forward pass cut into
micro-batches is cut as chunked prefill would cut it, so a pipeline gives one process's bits:
the tests compare log-probabilities for equality, not within a margin. With tensor parallelism
inside each stage, the run is the tensor-parallel run's bits (its all-reduces are the same).
"""
import json
import os
import subprocess

import pytest

from conftest import LumenServer, model_path
from mpi_helpers import assert_batched_equals_alone, gemma_path, mpirun, stop_ranks

PROMPTS = [
    "The capital of France is",
    "Here is a list of fruits: apple, banana,",
    "def fibonacci(n):\n",
    "Once upon a time, in a small village by the sea,",
]
# Long enough (about 330 tokens) that a pipeline cuts its prefill into micro-batches, and a
# sequence across their boundaries.
PASSAGE = ("The lighthouse keeper climbed the spiral stairs every evening, counting the steps as his father "
           "had taught him, trimmed the wick, polished the great lens and wrote the weather in the log. ") * 8


def forced(server, text):
    """Log-probabilities of every token of `text` and the three likeliest at each position, and a
    greedy continuation of 16 tokens with its own."""
    r = server.post("/v1/completions", {"prompt": text, "max_tokens": 16, "temperature": 0, "logprobs": 3,
                                         "echo": True, "ignore_eos": True})
    assert r.status_code == 200, r.text
    lp = r.json()["choices"][0]["logprobs"]
    return lp["tokens"], lp["token_logprobs"][1:], lp["top_logprobs"][1:]


def answers(server, texts):
    return [forced(server, t) for t in texts]


TEXTS = PROMPTS + [PASSAGE + "\nSummarize the passage in one sentence:"]


@pytest.fixture(scope="module")
def one_process():
    s = LumenServer("-t", "1")
    try:
        yield answers(s, TEXTS)
    finally:
        assert s.stop() == 0, "".join(s.log)


@pytest.mark.parametrize("stages", [2, 3])
def test_a_pipeline_gives_one_process_bits(one_process, stages):
    server = LumenServer("--pipeline-parallel-size", stages, "-t", "1", launcher=mpirun(stages))
    try:
        got = answers(server, TEXTS)
        # Micro-batches of 64 rows or more: the passage's prefill went through in parts.
        assert server.metrics()["lumen_prompt_tokens_total"] > 4 * 64
    finally:
        assert stop_ranks(server) == 0, "".join(server.log)
    assert got == one_process


def test_gemma3_sliding_window_groups_split_across_stages():
    # Gemma 3's KV layout groups layers by window, three to a page; each stage keeps its own
    # layers of every group, so one page table serves both stages.
    model = gemma_path()
    assert model.exists(), f"{model} is missing: run scripts/fetch_models.py"
    one = LumenServer("-t", "1", model=model)
    try:
        expected = answers(one, TEXTS)
    finally:
        assert one.stop() == 0, "".join(one.log)
    two = LumenServer("--pipeline-parallel-size", 2, "-t", "1", model=model, launcher=mpirun(2))
    try:
        assert answers(two, TEXTS) == expected
    finally:
        assert stop_ranks(two) == 0, "".join(two.log)


def test_tensor_and_pipeline_together_give_the_tensor_parallel_bits():
    tp = LumenServer("--tensor-parallel-size", 2, "-t", "1", launcher=mpirun(2))
    try:
        expected = answers(tp, TEXTS)
    finally:
        assert stop_ranks(tp) == 0, "".join(tp.log)
    both = LumenServer("--tensor-parallel-size", 2, "--pipeline-parallel-size", 2, "-t", "1", launcher=mpirun(4))
    try:
        assert answers(both, TEXTS) == expected
    finally:
        assert stop_ranks(both) == 0, "".join(both.log)


def test_batched_requests_and_token_trees_through_the_pipeline():
    # Continuous batching over the stages: the prefix cache (the shared passage), n = 2 (copy on
    # write of the shared last block, on every stage), seeded sampling; and n-gram speculation
    # with token trees, whose masked rows a micro-batch never cuts. Batched requests get the bits
    # they get alone, and the greedy answer under speculation is the plain one.
    def copied(server):
        r = server.post("/v1/completions", {"prompt": PASSAGE + "\nRepeat the first sentence exactly:\n",
                                             "max_tokens": 40, "temperature": 0})
        assert r.status_code == 200, r.text
        return r.json()["choices"][0]["text"]

    plain = LumenServer("-t", "1")
    try:
        expected_copy = copied(plain)
    finally:
        assert plain.stop() == 0, "".join(plain.log)
    spec = '{"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_max": 4, "prompt_lookup_min": 2, ' \
           '"num_candidates": 3}'
    server = LumenServer("--pipeline-parallel-size", 2, "-t", "1", "--speculative-config", spec, launcher=mpirun(2))
    try:
        assert_batched_equals_alone(server, PASSAGE, PROMPTS)
        assert copied(server) == expected_copy
        assert server.metrics()["lumen_spec_decode_num_accepted_tokens_total"] > 0
    finally:
        assert stop_ranks(server) == 0, "".join(server.log)


def test_run_and_bench_latency_under_mpirun():
    lumen = os.environ["LUMEN_BIN"]
    common = ["-m", str(model_path()), "-t", "1"]
    prompt = PASSAGE + "\nIn short,"
    one = subprocess.run([lumen, "run", *common, "-p", prompt, "-n", "24", "--temp", "0"],
                         capture_output=True, text=True, timeout=120)
    two = subprocess.run([*mpirun(2), lumen, "run", *common, "--pipeline-parallel-size", "2", "-p", prompt,
                          "-n", "24", "--temp", "0"], capture_output=True, text=True, timeout=120)
    assert one.returncode == 0 and two.returncode == 0, one.stderr + two.stderr
    assert two.stdout == one.stdout  # rank 0 alone prints, one process's text
    bench = subprocess.run([*mpirun(2), lumen, "bench", "latency", *common, "--pipeline-parallel-size", "2",
                            "-p", "128", "-n", "8", "-r", "1", "--json"], capture_output=True, text=True, timeout=180)
    assert bench.returncode == 0, bench.stderr
    rows = json.loads(bench.stdout)  # one document: the other rank prints nothing
    assert [(r["n_prompt"], r["n_gen"]) for r in rows] == [(128, 0), (0, 8)]
    assert all(r["pipeline_parallel_size"] == 2 and r["tensor_parallel_size"] == 1 and r["avg_ts"] > 0
               for r in rows)


def test_clear_errors():
    lumen = os.environ["LUMEN_BIN"]
    alone = subprocess.run([lumen, "run", "-m", str(model_path()), "--pipeline-parallel-size", "2", "-p", "hi"],
                           capture_output=True, text=True, timeout=60)
    assert alone.returncode != 0
    assert "mpirun -np 2" in alone.stderr
    short = subprocess.run([*mpirun(2), lumen, "run", "-m", str(model_path()), "-t", "1", "--tensor-parallel-size",
                            "2", "--pipeline-parallel-size", "2", "-p", "hi"], capture_output=True, text=True,
                           timeout=120)
    assert short.returncode != 0
    assert "needs 4 processes" in short.stderr
