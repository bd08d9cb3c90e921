"""Running Lumen under mpirun on loopback (issue 21's tensor and pipeline parallelism tests)."""
import os
import shutil
import signal
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from conftest import model_path

MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
os.environ.update(MPI_ENV)  # mpirun refuses root without them (CI runs as root)


def mpirun(n):
    path = shutil.which("mpirun")
    assert path, "mpirun is missing: scripts/setup.sh installs openmpi-bin"
    return [path, "-np", str(n), "--oversubscribe"]


def rank0_pid(launcher_pid):
    """The rank-0 process among mpirun's children (OpenMPI names each one's rank in its
    environment)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            env = (entry / "environ").read_bytes().split(b"\0")
        except (OSError, IndexError, ValueError):
            continue
        if ppid == launcher_pid and b"OMPI_COMM_WORLD_RANK=0" in env:
            return int(entry.name)
    raise AssertionError("no rank-0 process under mpirun")


def stop_ranks(server):
    """Drains a model-parallel server as an operator should: SIGTERM to rank 0, which finishes
    its requests and releases the other ranks, so mpirun exits 0. (mpirun itself, signalled,
    kills the whole job after a few seconds.)"""
    if server.proc.poll() is None:
        os.kill(rank0_pid(server.proc.pid), signal.SIGTERM)
    return server.proc.wait(timeout=60)


def gemma_path() -> Path:
    return model_path().parent / "gemma-3-270m-q4_k_m.gguf"


def assert_batched_equals_alone(server, passage, prompts):
    """Continuous batching across processes: the prefix cache (`passage`, many blocks), n = 2
    (whose forked completions copy their shared last block on write) and seeded sampling. Every
    cache change reaches the other ranks, so requests batched together get exactly the bits they
    get one at a time."""
    def sampled(prompt):
        r = server.post("/v1/completions", {"prompt": passage + prompt, "max_tokens": 24, "temperature": 0.8,
                                             "seed": 7, "n": 2, "logprobs": 1})
        assert r.status_code == 200, r.text
        return [(c["text"], c["logprobs"]["token_logprobs"]) for c in r.json()["choices"]]

    alone = [sampled(p) for p in prompts]
    with ThreadPoolExecutor(len(prompts) * 2) as pool:
        together = list(pool.map(sampled, prompts * 2))
    assert together == alone * 2
    assert server.metrics()["lumen_prefix_cache_hits_total"] > 0
