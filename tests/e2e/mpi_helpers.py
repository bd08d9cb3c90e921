"""Running Lumen under mpirun on loopback (issue 21's tensor and pipeline parallelism tests)."""
import os
import shutil
import signal
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
