"""`lumen inspect` on every hostile file: exit 0 on a valid file; on a bad one, one line on
stderr and a small non-zero exit status, never a signal."""
import json

import pytest

from conftest import run_lumen, testdata_dir

BAD_DIR = testdata_dir() / "gguf-bad"
MANIFEST = [e for e in json.loads((BAD_DIR / "manifest.json").read_text()) if "[" not in e["file"]]


def check_exit(result, expect):
    rc = result.returncode
    assert 0 <= rc < 128, f"exit status {rc}: killed by a signal or crashed"
    stderr = result.stderr.decode(errors="replace")
    if rc != 0:
        lines = stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("lumen: error: "), stderr
    if expect == "accept":
        assert rc == 0, stderr
    elif expect == "reject":
        assert rc != 0, "a bad file was accepted"


@pytest.mark.parametrize("entry", MANIFEST, ids=[e["file"] for e in MANIFEST])
def test_manifest_file(entry):
    result = run_lumen("inspect", BAD_DIR / entry["file"], check=False)
    check_exit(result, entry["expect"])
    json_result = run_lumen("inspect", "--json", BAD_DIR / entry["file"], check=False)
    check_exit(json_result, entry["expect"])
    if json_result.returncode == 0:
        json.loads(json_result.stdout)  # valid JSON even when the file holds odd strings


def test_truncations_are_clean_errors(tmp_path):
    whole = (BAD_DIR / "ok_minimal.gguf").read_bytes()
    # Every cut is covered in-process by unit_gguf; here a spread of cuts through the CLI.
    for n in sorted(set(range(0, len(whole), 37)) | {1, 23, 24, len(whole) - 1}):
        path = tmp_path / f"cut_{n}.gguf"
        path.write_bytes(whole[:n])
        check_exit(run_lumen("inspect", path, check=False), "reject")


def test_missing_file_and_directory(tmp_path):
    check_exit(run_lumen("inspect", tmp_path / "nope.gguf", check=False), "reject")
    check_exit(run_lumen("inspect", tmp_path, check=False), "reject")


def test_missing_default_model_says_what_to_download(tmp_path):
    import os
    env = dict(os.environ, LUMEN_CACHE=str(tmp_path))
    result = run_lumen("inspect", check=False, env=env)
    check_exit(result, "reject")
    message = result.stderr.decode()
    assert "lumen pull smollm2" in message
