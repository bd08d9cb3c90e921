"""Fixtures for the Python package's tests: the installed `lumen` package (scripts/test.sh
installs it into a fresh venv with `pip install .`), the default model, and the CLI binary the
greedy outputs are compared with (LUMEN_BIN)."""
import os
import shutil
from pathlib import Path

import pytest

import lumen

# Small enough that tests stay fast and light, large enough for 64 short prompts at once.
ENGINE_OPTIONS = {"max_model_len": 1024, "kv_cache_memory_bytes": 128 << 20}


def default_model() -> Path:
    cache = Path(os.environ.get("LUMEN_CACHE") or Path.home() / ".cache" / "lumen" / "models")
    path = cache / "SmolLM2-135M-Instruct.Q4_1.gguf"
    # A missing model is a failure, not a skip: CI downloads it (scripts/fetch_models.py).
    assert path.exists(), f"{path} is missing: run scripts/fetch_models.py"
    return path


@pytest.fixture(scope="session")
def model_path() -> Path:
    return default_model()


@pytest.fixture(scope="session")
def llm(model_path) -> lumen.LLM:
    return lumen.LLM(model=model_path, **ENGINE_OPTIONS)


@pytest.fixture(scope="session")
def lumen_bin() -> str:
    path = os.environ.get("LUMEN_BIN") or shutil.which("lumen")
    if not path or not os.access(path, os.X_OK):
        pytest.skip("no lumen CLI binary to compare with (set LUMEN_BIN to build/release/src/cli/lumen)")
    return path


def greedy(max_tokens: int, **kwargs) -> lumen.SamplingParams:
    return lumen.SamplingParams(temperature=0.0, max_tokens=max_tokens, **kwargs)
