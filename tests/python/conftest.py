"""Shared fixtures: where the lumen binary, the test data and the models are."""
import os
import subprocess
from pathlib import Path

import pytest


def lumen_bin() -> str:
    return os.environ["LUMEN_BIN"]


def testdata_dir() -> Path:
    return Path(os.environ["LUMEN_TESTDATA_DIR"])


def model_cache() -> Path:
    return Path(os.environ.get("LUMEN_CACHE") or Path.home() / ".cache" / "lumen" / "models")


REAL_MODELS = ["SmolLM2-135M-Instruct.Q4_1.gguf", "gemma-3-270m-q4_k_m.gguf"]


def real_model(name: str) -> Path:
    path = model_cache() / name
    # A missing model is a failure, not a skip: CI downloads them (scripts/fetch_models.py).
    assert path.exists(), f"{path} is missing: run scripts/fetch_models.py"
    return path


def run_lumen(*args, check=True, **kwargs) -> subprocess.CompletedProcess:
    result = subprocess.run([lumen_bin(), *map(str, args)], capture_output=True, **kwargs)
    if check and result.returncode != 0:
        raise AssertionError(f"lumen {' '.join(map(str, args))} failed ({result.returncode}): "
                             f"{result.stderr.decode(errors='replace')}")
    return result


@pytest.fixture
def tmp_gguf(tmp_path):
    return tmp_path / "out.gguf"
