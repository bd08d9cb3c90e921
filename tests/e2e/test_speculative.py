"""`lumen serve --speculative-config ngram`: a greedy answer that copies its input (where n-gram
drafts are found and accepted) is the same text, streamed or not, as from a server without
speculation, and /metrics counts the drafts: some made, some accepted, never more accepted than
scored."""
import json

from conftest import httpx, LumenServer, MODEL_NAME

SPEC = '{"method": "ngram", "num_speculative_tokens": 5, "prompt_lookup_max": 4, "prompt_lookup_min": 2}'
PASSAGE = ("The keeper climbed the spiral stairs every evening, counting the steps as his father had taught "
           "him. At the top he trimmed the wick, polished the great lens and wrote the weather in the log: "
           "wind from the north-west, a heavy swell, two ships sighted before dark.")
BODY = {"model": MODEL_NAME, "temperature": 0, "max_tokens": 40,
        "messages": [{"role": "user", "content": "Repeat the following text exactly.\n\n" + PASSAGE}]}


def answer(server):
    r = httpx.post(server.base_url + "/v1/chat/completions", json=BODY, timeout=120)
    assert r.status_code == 200, r.text
    return r.json()["choices"][0]["message"]["content"]


def streamed_answer(server):
    text = []
    with httpx.stream("POST", server.base_url + "/v1/chat/completions", json={**BODY, "stream": True},
                      timeout=120) as r:
        assert r.status_code == 200
        for line in r.iter_lines():
            if line.startswith("data: ") and line != "data: [DONE]":
                for choice in json.loads(line[6:])["choices"]:
                    text.append(choice["delta"].get("content") or "")
    return "".join(text)


def spec_counters(server):
    m = server.metrics()
    return (m["lumen_spec_decode_num_drafts_total"], m["lumen_spec_decode_num_draft_tokens_total"],
            m["lumen_spec_decode_num_accepted_tokens_total"])


def test_speculation_keeps_greedy_answers_and_counts_its_drafts():
    plain = LumenServer()
    spec = LumenServer("--speculative-config", SPEC)
    try:
        expected = answer(plain)
        assert "spiral stairs" in expected  # the answer does copy the passage
        assert spec_counters(spec) == (0, 0, 0)
        assert answer(spec) == expected
        drafts, draft_tokens, accepted = spec_counters(spec)
        assert drafts > 0 and 0 < accepted <= draft_tokens
        assert streamed_answer(spec) == expected
        assert spec_counters(spec)[0] > drafts  # the streamed request speculated too
        assert spec_counters(plain) == (0, 0, 0)
        # Chains have no other branch to win tokens on.
        assert spec.metrics()["lumen_spec_decode_num_branch_tokens_total"] == 0
    finally:
        assert spec.stop() == 0, "".join(spec.log)
        assert plain.stop() == 0, "".join(plain.log)
