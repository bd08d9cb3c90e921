"""`lumen` under `mpirun -np 2` (real OpenMPI, real processes): a mistake every rank meets is
reported once, by rank 0, whether or not the ranks spread a model; a launch of several processes
that spreads nothing says so once; and a failure that is one rank's own is still reported,
naming the rank (src/cli/mpi_launch.h, main.cc)."""
import os
import re
import socket
import subprocess

from conftest import model_path
from mpi_helpers import mpirun

WARNING = "without --tensor-parallel-size, --pipeline-parallel-size, --expert-parallel-size or --context-parallel-size"


def run_under_mpirun(*args, timeout=120):
    result = subprocess.run([*mpirun(2), os.environ["LUMEN_BIN"], *map(str, args)], capture_output=True, text=True,
                            timeout=timeout)
    return result, result.stdout + result.stderr


def test_a_missing_model_is_reported_once(tmp_path):
    missing = tmp_path / "missing.gguf"
    for parallel in ([], ["--tensor-parallel-size", "2"]):
        result, output = run_under_mpirun("run", "-m", missing, "-p", "Hi", *parallel)
        assert result.returncode != 0
        assert output.count(f"lumen: error: cannot open '{missing}'") == 1, output
        assert "(rank 1" not in output, output


def test_a_bad_flag_is_reported_once():
    result, output = run_under_mpirun("run", "-p", "Hi", "--tensor-parallel-size", "2", "--no-such-flag")
    assert result.returncode != 0
    assert output.count("--no-such-flag") == 1, output


def test_a_launch_that_spreads_nothing_is_warned_about_once():
    result, output = run_under_mpirun("run", "-m", model_path(), "-p", "Hi", "-n", "2", "--temp", "0")
    assert result.returncode == 0, output
    assert output.count(WARNING) == 1, output
    assert "--tensor-parallel-size 2" in output


def test_a_spread_launch_has_no_warning():
    result, output = run_under_mpirun("run", "-m", model_path(), "-p", "Hi", "-n", "2", "--temp", "0",
                                      "--tensor-parallel-size", "2")
    assert result.returncode == 0, output
    assert WARNING not in output


def test_one_ranks_own_failure_is_still_reported():
    # Two whole servers on one port: rank 0 listens, rank 1 cannot. Only rank 1 knows why.
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    result, output = run_under_mpirun("serve", "-m", model_path(), "--port", port, "--kv-cache-memory", "64M")
    assert result.returncode != 0
    # Whichever rank lost the race for the port reports it, exactly once (rank 1 names itself).
    assert len(re.findall(r"lumen: error( \(rank 1 of 2\))?: cannot listen on 127\.0\.0\.1:\d+", output)) == 1, output
