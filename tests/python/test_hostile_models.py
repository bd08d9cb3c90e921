"""Model files whose metadata or tensors are hostile (scripts/make_hostile_models.py writes them
from a tiny valid llama and a tiny valid Mamba 2) through `lumen run` and `lumen serve`: each bad
one is refused before anything is allocated with one line naming the key or tensor and exit
status 1, never a signal; the two valid ones run. The debug build runs this under AddressSanitizer + UBSan."""
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import conftest
from conftest import lumen_bin

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "make_hostile_models.py"


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    out = tmp_path_factory.mktemp("hostile_models")
    subprocess.run([sys.executable, str(SCRIPT), str(out), str(conftest.testdata_dir() / "tokenizer" / "ggml-vocab-llama-spm.gguf")],
                   check=True)
    return out, json.loads((out / "manifest.json").read_text())


def cases():
    # Indices into the manifest (the files are made by a fixture, after collection);
    # test_the_generator_covers_every_case keeps the count true.
    return range(39)


def check_refusal(result_rc, stderr, entry):
    assert 0 <= result_rc < 128, f"{entry['file']}: killed by signal {result_rc - 128}"
    lines = stderr.strip().splitlines()
    if entry["expect"] == "reject":
        assert result_rc == 1, f"{entry['file']} was accepted"
        errors = [l for l in lines if l.startswith("lumen: error: ")]
        assert len(errors) == 1 and entry["names"] in errors[0], (entry, stderr)
    else:
        assert result_rc == 0, (entry, stderr)


def test_the_generator_covers_every_case(models):
    _, manifest = models
    assert len(manifest) == len(cases())
    assert sum(e["expect"] == "accept" for e in manifest) == 2


@pytest.mark.parametrize("index", cases())
def test_lumen_run(models, index):
    out, manifest = models
    entry = manifest[index]
    r = subprocess.run([lumen_bin(), "run", "-m", str(out / entry["file"]), "-p", "hello", "-n", "2", "--temp", "0",
                        "-t", "1"], capture_output=True, text=True, timeout=300)
    check_refusal(r.returncode, r.stderr, entry)


@pytest.mark.parametrize("index", cases())
def test_lumen_serve(models, index):
    out, manifest = models
    entry = manifest[index]
    proc = subprocess.Popen([lumen_bin(), "serve", "-m", str(out / entry["file"]), "--port", "0", "-t", "1",
                             "--kv-cache-memory", "16M"], stderr=subprocess.PIPE, text=True)
    if entry["expect"] == "reject":
        _, err = proc.communicate(timeout=300)
        check_refusal(proc.returncode, err, entry)
        return
    # The valid model serves: wait for its address line, then stop it cleanly.
    for line in proc.stderr:
        if "on http://" in line:
            break
    else:
        pytest.fail("lumen serve did not start on the valid tiny model")
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=120)
    assert proc.returncode == 0
