"""`lumen serve` on a state-space model (Mamba 2: `lumen synth mamba2-mini`, 2 blocks, random
weights) and on a hybrid (granite-hybrid-mini, 2 blocks: a Mamba 2 layer, then an attention layer
with its K/V in the paged cache) and on RWKV 7 (rwkv7-mini, 2 blocks: token-shift rows and wkv
matrices in the slot): 16 concurrent streams share the engine's steps, each sequence in its own recurrent-state
slot, and each gets, token for token, the greedy continuation it gets alone. The weights are
random, so the comparison is of token ids (logprobs.tokens)."""
import concurrent.futures
import os
import subprocess
import tempfile
from pathlib import Path

import pytest
from conftest import LumenServer, model_path

STREAMS = 16
MAX_TOKENS = 32
PROMPTS = [f"Request {i}: " + " ".join(["alpha", "beta", "gamma", "delta", "epsilon"][: 1 + i % 5]) * (1 + i % 3)
           for i in range(STREAMS)]


def completion_tokens(client, prompt, preset):
    r = client.completions.create(model=preset, prompt=prompt, max_tokens=MAX_TOKENS, temperature=0,
                                  logprobs=0, stream=False)
    return r.choices[0].logprobs.tokens, r.usage.completion_tokens


@pytest.mark.parametrize("preset", ["mamba2-mini", "granite-hybrid-mini", "rwkv7-mini"])
def test_sixteen_streams_match_each_alone(preset):
    with tempfile.TemporaryDirectory() as directory:
        model = Path(directory) / f"{preset}.gguf"
        subprocess.run([os.environ["LUMEN_BIN"], "synth", preset, "-o", str(model), "--vocab",
                        str(model_path()), "--type", "Q4_1", "--layers", "2", "--seed", "11"], check=True,
                       stdout=subprocess.DEVNULL)
        server = LumenServer(model=model)
        try:
            client = server.client()
            # The slots the memory budget (256M here) pays for: every stream gets one.
            metrics = server.metrics()
            assert metrics["lumen_state_slots_total"] >= STREAMS
            assert metrics["lumen_state_cache_bytes"] > 0
            alone = [completion_tokens(client, p, preset) for p in PROMPTS]
            most_running = 0
            with concurrent.futures.ThreadPoolExecutor(STREAMS) as pool:
                pending = [pool.submit(completion_tokens, client, p, preset) for p in PROMPTS]
                while not all(f.done() for f in pending):
                    most_running = max(most_running, int(server.metrics().get("lumen_num_requests_running", 0)))
                together = [f.result() for f in pending]
            for prompt, want, got in zip(PROMPTS, alone, together):
                assert want[1] == MAX_TOKENS
                assert got == want, prompt
            assert most_running >= 4, f"at most {most_running} streams ran at once"
        finally:
            assert server.stop() == 0, "".join(server.log)
