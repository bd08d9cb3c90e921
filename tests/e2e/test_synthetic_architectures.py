"""`lumen serve` on the architectures no download provides, written by `lumen synth`: DeepSeek-V2
(multi-head latent attention, a dense first layer, routed and shared experts), Qwen1.5-MoE, and
the dense qwen3, gemma2 (soft caps, a 16-position window on every other layer) and phi3 (fused
matrices, LongRoPE's long set: the served context passes the original 256), smollm3 (its fourth
layer without rope), granite (Granite's multipliers) and gpt-oss (attention sinks, biased experts
with the clamped SwiGLU, MXFP4 experts).
Concurrent requests share the engine's steps (continuous batching) and each must get, token
for token, the greedy continuation it gets when it runs alone; the models' weights are random,
so the text means nothing and the comparison is of token ids (logprobs.tokens)."""
import concurrent.futures
import os
import subprocess
import tempfile
from pathlib import Path

import pytest

from conftest import LumenServer, model_path

PROMPTS = ["The capital of France is", "1, 2, 3, 4,", "def fibonacci(n):", "Once upon a time there was",
           "Water boils at", "The quick brown fox"]
MAX_TOKENS = 48  # long enough that the concurrent requests are still running when the metrics are polled
# Two layers each, but SmolLM3 keeps its four: its NoPE layer is the fourth.
LAYERS = {"smollm3-mini": 4}
# gpt-oss's experts ship in MXFP4: llama-quantize's MXFP4_MOE mixture.
TYPES = {"gpt-oss-mini": "MXFP4_MOE"}


def synthesize(preset: str, directory: str) -> Path:
    out = Path(directory) / f"{preset}.gguf"
    subprocess.run([os.environ["LUMEN_BIN"], "synth", preset, "-o", str(out), "--vocab", str(model_path()),
                    "--type", TYPES.get(preset, "Q4_1"), "--layers", str(LAYERS.get(preset, 2)), "--seed", "11"], check=True,
                   stdout=subprocess.DEVNULL)
    return out


def completion_tokens(client, model, prompt):
    r = client.completions.create(model=model, prompt=prompt, max_tokens=MAX_TOKENS, temperature=0, logprobs=0)
    return r.choices[0].logprobs.tokens, r.usage.completion_tokens


@pytest.mark.parametrize("preset", ["deepseek2-lite-mini", "qwen2moe-a2.7b-mini", "qwen3-mini", "gemma2-mini",
                                    "phi4-mini-tiny", "smollm3-mini", "granite-mini", "gpt-oss-mini"])
def test_concurrent_requests_match_each_alone(preset):
    with tempfile.TemporaryDirectory() as directory:
        server = LumenServer(model=synthesize(preset, directory))
        try:
            client = server.client()
            alone = [completion_tokens(client, preset, p) for p in PROMPTS]
            most_running = 0
            with concurrent.futures.ThreadPoolExecutor(len(PROMPTS)) as pool:
                pending = [pool.submit(completion_tokens, client, preset, p) for p in PROMPTS]
                while not all(f.done() for f in pending):
                    running = server.metrics().get("lumen_num_requests_running", 0)
                    most_running = max(most_running, int(running))
                together = [f.result() for f in pending]
            for prompt, want, got in zip(PROMPTS, alone, together):
                assert want[1] == MAX_TOKENS
                assert got == want, prompt
            assert most_running >= 2, "the requests never shared a step"
        finally:
            assert server.stop() == 0, "".join(server.log)
