"""Expert parallelism over MPI (issue 53): `mpirun -np 2 lumen run --expert-parallel-size 2` on
loopback, one thread per rank, against one process, on the MoE synth presets.

What "the same output" means here: each rank runs its experts over the rows sent to it, and a
row's expert output does not depend on which other rows share the matmul (the CPU kernels are
batch invariant); the owner of a token adds its experts' weighted outputs in slot order, the
shared expert last, as one process adds them. So the two ranks give one process's logits to the
bit, and the test asks for more than tensor parallelism's rule (the best token agrees where it
leads by a clear margin): every greedy token and every printed log-probability is the same.
"""
import os
import re
import subprocess
import tempfile
from pathlib import Path

import pytest

from conftest import LumenServer, model_path
from mpi_helpers import assert_batched_equals_alone, mpirun, stop_ranks

# The MoE presets of the logits goldens (tests/golden/logits/moe_*.json), two layers each to
# keep the test short: routed experts only (qwen3moe, mixtral, olmoe), a gated shared expert
# (qwen2moe), and shared experts beside latent attention and a dense first layer (deepseek2).
PRESETS = ["qwen3moe-mini", "mixtral-mini", "olmoe-mini", "qwen2moe-a2.7b-mini", "deepseek2-lite-mini"]
PROMPT = "The capital of France is"


def lumen():
    return os.environ["LUMEN_BIN"]


def synthesize(preset: str, directory: str) -> Path:
    out = Path(directory) / f"{preset}.gguf"
    if out.exists():  # written by an earlier test of this module
        return out
    subprocess.run([lumen(), "synth", preset, "-o", str(out), "--vocab", str(model_path()), "--type", "Q4_1",
                    "--layers", "2", "--seed", "7"], check=True, stdout=subprocess.DEVNULL, timeout=300)
    return out


def run(model, *extra, launcher=()):
    return subprocess.run([*launcher, lumen(), "run", "-m", str(model), "-t", "1", "-p", PROMPT, "-n", "12",
                           "--temp", "0", "--ignore-eos", "--logprobs", "2", "--prompt-logprobs", "2", *extra],
                          capture_output=True, text=True, timeout=180)


def logprob_lines(stderr):
    """The log-probability report, without the timings."""
    return [line for line in stderr.splitlines()
            if not re.search(r" in \d+\.\d+ s", line) and not line.startswith("expert parallelism:")]


def expert_tensor_bytes(model):
    """(all tensors' bytes, the routed experts' bytes) of a GGUF file."""
    from gguf import GGUFReader
    reader = GGUFReader(str(model))
    total = sum(int(t.n_bytes) for t in reader.tensors)
    experts = sum(int(t.n_bytes) for t in reader.tensors if re.search(r"ffn_(gate|up|down)_exps", t.name))
    return total, experts


@pytest.fixture(scope="module")
def directory():
    with tempfile.TemporaryDirectory() as d:
        yield d


@pytest.mark.parametrize("preset", PRESETS)
def test_two_ranks_give_one_process_answers(directory, preset):
    model = synthesize(preset, directory)
    one = run(model)
    two = run(model, "--expert-parallel-size", "2", launcher=mpirun(2))
    assert one.returncode == 0, one.stderr
    assert two.returncode == 0, two.stderr
    assert two.stdout == one.stdout  # rank 0 alone prints, one process's greedy text
    want, got = logprob_lines(one.stderr), logprob_lines(two.stderr)
    assert len(want) > 12
    assert got == want
    # The load per rank and the bytes moved: prompt and 11 decode steps through 2 MoE layers
    # (deepseek2: its first layer is dense).
    summary = re.search(r"expert parallelism: 2 ranks; routed token-expert pairs per rank \[(\d+), (\d+)\]; "
                        r"(\d+) bytes moved between ranks over (\d+) token-layers \((\d+) bytes per MoE layer per "
                        r"token\); rank 0 holds (\d+) bytes of weights", two.stderr)
    assert summary, two.stderr
    pairs = int(summary[1]) + int(summary[2])
    token_layers = int(summary[4])
    moe_layers = 1 if preset.startswith("deepseek2") else 2
    prompt_tokens = token_layers // moe_layers - 11
    assert token_layers == moe_layers * (prompt_tokens + 11) and prompt_tokens >= 5
    assert pairs % token_layers == 0  # every token-layer routes to the same number of experts
    assert int(summary[3]) > 0
    # Memory: rank 0 holds everything but half of the routed experts.
    total, experts = expert_tensor_bytes(model)
    assert int(summary[6]) == total - experts // 2


def test_served_requests_batched_together_get_their_bits_alone(directory):
    # The engine's batched steps (several sequences a step, the prefix cache, n = 2 forks, seeded
    # sampling) reach the other rank as under tensor parallelism; each MoE layer's exchange then
    # carries rows of several sequences at once.
    model = synthesize("qwen2moe-a2.7b-mini", directory)
    server = LumenServer("--expert-parallel-size", 2, "-t", "1", model=model, launcher=mpirun(2))
    try:
        assert_batched_equals_alone(server, "The lighthouse keeper climbed the stairs every evening. " * 4,
                                    ["The capital of France is", "1, 2, 3, 4,"])
        # The expert load per rank and the bytes moved, on /metrics.
        metrics = server.metrics()
        pairs = [metrics[f'lumen_expert_parallel_routed_pairs_total{{rank="{r}"}}'] for r in (0, 1)]
        assert all(p > 0 for p in pairs), metrics
        # qwen2moe-mini: 4 experts a token in each of its 2 layers, for every token computed.
        assert sum(pairs) % 8 == 0
        assert metrics["lumen_expert_parallel_exchanged_bytes_total"] > 0
    finally:
        assert stop_ranks(server) == 0, "".join(server.log)


def test_bad_values_are_refused_before_loading(directory):
    mixtral = synthesize("mixtral-mini", directory)  # 8 experts
    three = subprocess.run([*mpirun(3), lumen(), "run", "-m", str(mixtral), "-t", "1", "--ep", "3", "-p", "hi"],
                           capture_output=True, text=True, timeout=120)
    assert three.returncode != 0
    assert "expert parallel size 3 does not divide the model's 8 experts" in three.stderr
    dense = subprocess.run([lumen(), "run", "-m", str(model_path()), "--expert-parallel-size", "2", "-p", "hi"],
                           capture_output=True, text=True, timeout=60)
    assert dense.returncode != 0
    assert "expert parallelism needs a mixture-of-experts model" in dense.stderr
    alone = subprocess.run([lumen(), "run", "-m", str(mixtral), "--expert-parallel-size", "2", "-p", "hi"],
                           capture_output=True, text=True, timeout=60)
    assert alone.returncode != 0
    assert "needs 2 processes started together: run under `mpirun -np 2` (this run has 1)" in alone.stderr
    mixed = subprocess.run([*mpirun(4), lumen(), "run", "-m", str(mixtral), "-t", "1", "--ep", "2", "--tp", "2",
                            "-p", "hi"], capture_output=True, text=True, timeout=120)
    assert mixed.returncode != 0
    assert "does not combine with tensor or pipeline parallelism" in mixed.stderr
