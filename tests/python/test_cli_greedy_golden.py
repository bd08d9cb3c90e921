"""`lumen run` and `lumen chat` at --temp 0 print exactly what they printed before they were moved
onto the serving engine: tests/golden/cli/smollm2_greedy.json holds the outputs made at 5fee01c,
when each command had its own decode loop (stop strings, penalties, the context's end, a chat that
keeps its conversation). Regenerating that file would hide a regression; extend it only with
outputs checked by other means. CTest runs it with LUMEN_ISA=avx2: the outputs were made with the
matmul kernels that round as llama.cpp's x86 ones do, and greedy text follows rounding."""
import json
import subprocess
from pathlib import Path

import pytest

from conftest import lumen_bin, real_model

GOLDEN = json.loads((Path(__file__).parents[1] / "golden" / "cli" / "smollm2_greedy.json").read_text())


@pytest.mark.parametrize("case", GOLDEN["cases"], ids=lambda c: f"{c['command']}:{' '.join(c['args'])[:40]}")
def test_greedy_output_is_unchanged(case):
    cmd = [lumen_bin(), case["command"], "-m", str(real_model(GOLDEN["model"])), "--temp", "0", *case["args"]]
    r = subprocess.run(cmd, input=case.get("input"), capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert r.stdout == case["stdout"]
