#!/usr/bin/env python3
"""Regenerates tests/golden/perplexity/llama_perplexity_smollm2.json: what llama.cpp's
llama-perplexity reports for the default model on tests/golden/perplexity/gpl-3.0.txt, the
reference `lumen perplexity` is tested against (tests/python/test_cli_perplexity.py).

    python3 scripts/make_perplexity_golden.py /path/to/llama-perplexity

llama-perplexity is built by hand outside the repo (from the llama.cpp that llama-cpp-python's
source package vendors; DEVELOPERS.md). The text is the GNU GPL v3 (a verbatim copy, which its
own notice permits; Debian's /usr/share/common-licenses/GPL-3): plain English prose of about
7,200 tokens that anyone can redistribute. It is a sample text here, not the project's licence.

What is stored, per run: the flags, the running perplexity after each window (llama-perplexity's
"[1]x,[2]y,..." line) and the final estimate with its error. Each perplexity run is made twice,
with flash attention on and off: the same function with different rounding, whose spread shows
how closely two correct implementations can agree on this small 4-bit model.
The KL-divergence run writes a base file with the default model and compares the same model
with RoPE linear scaling (the rope-linear copy from scripts/make_rope_variants.py: the same
vocabulary, different distributions), storing the statistics llama-perplexity prints.
"""
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CACHE = Path(os.environ.get("LUMEN_CACHE") or Path.home() / ".cache" / "lumen" / "models")
MODEL = CACHE / "SmolLM2-135M-Instruct.Q4_1.gguf"
VARIANT = CACHE / "derived" / "SmolLM2-135M-Instruct.Q4_1.rope-linear.gguf"
TEXT = REPO / "tests" / "golden" / "perplexity" / "gpl-3.0.txt"
OUT = REPO / "tests" / "golden" / "perplexity" / "llama_perplexity_smollm2.json"
# (name, flags): the whole text in 512-token windows (four per 2048-token batch, the default),
# and 16 windows of 128 tokens in one batch.
RUNS = [("c512", ["-c", "512"]), ("c128", ["-c", "128", "--chunks", "16"])]
KLD_FLAGS = ["-c", "128", "--chunks", "8"]


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def run(binary: str, args: list) -> str:
    cmd = [binary, "-t", "2", *map(str, args)]
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{result.stderr[-3000:]}")
    return result.stdout + result.stderr


def perplexity(binary: str, flags: list, flash_attn: str) -> dict:
    out = run(binary, ["-m", MODEL, "-f", TEXT, "-fa", flash_attn, *flags])
    running = [float(v) for v in re.findall(r"\[\d+\](\d+\.\d+),", out)]
    final = re.search(r"Final estimate: PPL = ([\d.]+) \+/- ([\d.]+)", out)
    return {"running_ppl": running, "ppl": float(final.group(1)), "ppl_error": float(final.group(2))}


def number(out: str, label: str) -> float:
    match = re.search(re.escape(label) + r"\s*:\s*(-?[\d.]+)", out)
    if not match:
        sys.exit(f"no '{label}' in llama-perplexity's output")
    return float(match.group(1))


def kl_divergence(binary: str) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "base.bin"
        run(binary, ["-m", MODEL, "-f", TEXT, *KLD_FLAGS, "--kl-divergence-base", base])
        out = run(binary, ["-m", VARIANT, "--kl-divergence", "--kl-divergence-base", base, *KLD_FLAGS])
    stats = {
        "ppl": number(out, "Mean PPL(Q)"),
        "ppl_base": number(out, "Mean PPL(base)"),
        "kld_mean": number(out, "Mean    KLD"),
        "kld_median": number(out, "Median  KLD"),
        "kld_99": number(out, "99.0%   KLD"),
        "p_diff_mean_percent": number(out, "Mean    Δp"),
        "p_diff_rms_percent": number(out, "RMS Δp"),
        "same_top_percent": number(out, "Same top p"),
    }
    return {"flags": KLD_FLAGS, "model": VARIANT.name, "base_model": MODEL.name, **stats}


def main() -> int:
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    binary = sys.argv[1]
    for path in (MODEL, VARIANT):
        if not path.exists():
            sys.exit(f"{path} is missing (scripts/fetch_models.py, scripts/make_rope_variants.py)")
    version = subprocess.run([binary, "--version"], capture_output=True, text=True)
    golden = {
        "generator": "scripts/make_perplexity_golden.py",
        "llama_perplexity_version": (version.stdout + version.stderr).strip().splitlines()[0],
        "model": MODEL.name,
        "model_sha256": sha256_of(MODEL),
        "text": TEXT.name,
        "text_sha256": sha256_of(TEXT),
        "runs": {},
    }
    for name, flags in RUNS:
        on, off = perplexity(binary, flags, "on"), perplexity(binary, flags, "off")
        golden["runs"][name] = {"flags": flags, **off, "flash_attn_on": on}
        print(f"{name}: PPL {off['ppl']} (flash attention on: {on['ppl']})")
    golden["kl_divergence"] = kl_divergence(binary)
    print(f"kl-divergence: {golden['kl_divergence']}")
    OUT.write_text(json.dumps(golden, indent=1) + "\n")
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
