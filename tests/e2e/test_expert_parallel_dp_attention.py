"""Expert parallelism with data-parallel attention (issue 53): `mpirun -np 2 lumen ... --ep 2
--data-parallel-attention` on loopback, one thread per rank, against one process.

Each rank runs attention and the dense parts for its own sequences only; the MoE layers send each
routed row to its expert's rank and take the result back; rank 0 gathers the logit rows and
samples. A row's numbers do not depend on which rows share a matmul (the CPU kernels are batch
invariant) and the owner adds its experts' outputs in one process's slot order, so the answers
are one process's to the bit: the same greedy text and every log-probability equal.
"""
import re
import subprocess
from concurrent.futures import ThreadPoolExecutor

import pytest

from conftest import LumenServer, model_path
from mpi_helpers import assert_batched_equals_alone, mpirun, stop_ranks
from test_expert_parallel import directory, logprob_lines, lumen, run, synthesize  # noqa: F401 (fixture)

# Routed experts only; a gated shared expert; latent attention with a dense first layer.
PRESETS = ["qwen3moe-mini", "qwen2moe-a2.7b-mini", "deepseek2-lite-mini"]
DP = ("--expert-parallel-size", "2", "--data-parallel-attention")
STREAMS = ["The capital of France is", "1, 2, 3, 4,", "Once upon a time", "The weather today",
           "def fibonacci(n):", "Water boils at", "My favourite colour is", "The quick brown fox"]


@pytest.mark.parametrize("preset", PRESETS)
def test_run_gives_one_process_answers(directory, preset):
    # One sequence: it runs on one rank, and the other takes part in every exchange with no rows.
    model = synthesize(preset, directory)
    one = run(model)
    two = run(model, *DP, launcher=mpirun(2))
    assert one.returncode == 0, one.stderr
    assert two.returncode == 0, two.stderr
    assert two.stdout == one.stdout
    want = logprob_lines(one.stderr)
    assert len(want) > 12 and logprob_lines(two.stderr) == want
    rows = re.search(r"data-parallel attention rows per rank \[(\d+), (\d+)\]", two.stderr)
    assert rows, two.stderr
    per_rank = sorted([int(rows[1]), int(rows[2])])
    assert per_rank[0] == 0 and per_rank[1] >= 5 + 11  # the prompt and 11 decode steps, all on one rank


def completions(server, prompts):
    def one(prompt):
        r = server.post("/v1/completions", {"prompt": prompt, "max_tokens": 10, "temperature": 0, "logprobs": 2})
        assert r.status_code == 200, r.text
        choice = r.json()["choices"][0]
        return choice["text"], choice["logprobs"]["token_logprobs"], choice["logprobs"]["top_logprobs"]

    with ThreadPoolExecutor(len(prompts)) as pool:
        return list(pool.map(one, prompts))


def test_concurrent_streams_spread_over_ranks_get_one_process_answers(directory):
    model = synthesize("qwen2moe-a2.7b-mini", directory)
    alone = LumenServer("-t", "1", model=model)
    try:
        want = completions(alone, STREAMS)
    finally:
        alone.proc.terminate()
        alone.proc.wait(timeout=60)
    server = LumenServer(*DP, "-t", "1", model=model, launcher=mpirun(2))
    try:
        assert completions(server, STREAMS) == want
        metrics = server.metrics()
        rows = [metrics[f'lumen_data_parallel_attention_rows_total{{rank="{r}"}}'] for r in (0, 1)]
        assert all(r > 0 for r in rows), rows  # the streams landed on both ranks
        # Every token through both MoE layers, 4 experts each, counted by the ranks whose experts
        # took them and gathered to rank 0.
        pairs = [metrics[f'lumen_expert_parallel_routed_pairs_total{{rank="{r}"}}'] for r in (0, 1)]
        assert sum(pairs) == 2 * 4 * sum(rows)
        assert metrics["lumen_expert_parallel_exchanged_bytes_total"] > 0
        # The prefix cache (a sequence reusing another's blocks runs where they were written),
        # n = 2 forks and seeded sampling: batched together, the bits each gets alone.
        assert_batched_equals_alone(server, "The lighthouse keeper climbed the stairs every evening. " * 4,
                                    ["The capital of France is", "1, 2, 3, 4,"])
    finally:
        assert stop_ranks(server) == 0, "".join(server.log)


def test_refusals(directory):
    mixtral = synthesize("mixtral-mini", directory)
    alone = subprocess.run([lumen(), "run", "-m", str(mixtral), "--data-parallel-attention", "-p", "hi"],
                           capture_output=True, text=True, timeout=60)
    assert alone.returncode != 0
    assert "--data-parallel-attention needs expert parallelism (--expert-parallel-size 2 or more)" in alone.stderr
    with_tp = subprocess.run([*mpirun(4), lumen(), "run", "-m", str(mixtral), "-t", "1", *DP, "--tp", "2", "-p", "hi"],
                             capture_output=True, text=True, timeout=120)
    assert with_tp.returncode != 0
    assert "does not combine with tensor or pipeline parallelism" in with_tp.stderr
    swap = subprocess.run([*mpirun(2), lumen(), "serve", "-m", str(mixtral), "-t", "1", *DP, "--preemption-mode",
                           "swap", "--port", "0"], capture_output=True, text=True, timeout=120)
    assert swap.returncode != 0
    assert "--data-parallel-attention does not combine with swap preemption" in swap.stderr
