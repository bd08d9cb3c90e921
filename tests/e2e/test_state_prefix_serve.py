"""`lumen serve --state-prefix-cache-memory` on a state-space model (Mamba 2) and the hybrid
(granite-hybrid: a Mamba 2 layer, then an attention layer), 2 blocks, random weights: a prompt
sent twice starts the second time from the recurrent-state snapshot the first left at its last
full block (and, for the hybrid, the attention layer's cached K/V). The hit shows in /metrics
and changes no token (token ids compared: the weights are random)."""
import os
import subprocess
import tempfile
from pathlib import Path

import pytest
from conftest import LumenServer, model_path

# Long enough for several blocks of 16 and not a multiple of one.
PROMPT = "A long shared prefix: " + " ".join(f"word{i}" for i in range(120))


def completion_tokens(client, preset, prompt):
    r = client.completions.create(model=preset, prompt=prompt, max_tokens=16, temperature=0, logprobs=0)
    return r.choices[0].logprobs.tokens


@pytest.mark.parametrize("preset", ["mamba2-mini", "granite-hybrid-mini"])
def test_a_state_prefix_hit_shows_in_metrics_and_changes_nothing(preset):
    with tempfile.TemporaryDirectory() as directory:
        model = Path(directory) / f"{preset}.gguf"
        subprocess.run([os.environ["LUMEN_BIN"], "synth", preset, "-o", str(model), "--vocab",
                        str(model_path()), "--type", "Q4_1", "--layers", "2", "--seed", "11"], check=True,
                       stdout=subprocess.DEVNULL)
        server = LumenServer("--state-prefix-cache-memory", "16M", model=model)
        try:
            client = server.client()
            before = server.metrics()
            assert before["lumen_state_prefix_cache_bytes"] >= 15 << 20
            first = completion_tokens(client, preset, PROMPT)
            middle = server.metrics()
            assert middle["lumen_state_prefix_cache_hits_total"] == before["lumen_state_prefix_cache_hits_total"]
            second = completion_tokens(client, preset, PROMPT)
            after = server.metrics()
            assert after["lumen_state_prefix_cache_hits_total"] == middle["lumen_state_prefix_cache_hits_total"] + 1
            assert after["lumen_state_prefix_cache_hit_tokens_total"] > middle["lumen_state_prefix_cache_hit_tokens_total"]
            assert after["lumen_state_prefix_cache_queries_total"] > middle["lumen_state_prefix_cache_queries_total"]
            assert second == first
        finally:
            assert server.stop() == 0, "".join(server.log)
