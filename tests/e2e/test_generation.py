"""Completions and chat through the official openai SDK: whole and streamed, logprobs, stop,
seed, n > 1, best_of, beam search, prompt log-probabilities; checked against each other and against `lumen run` (a separate code path)."""
import math
import os
import subprocess

from conftest import MODEL_NAME, model_path

PROMPT = "The capital of France is"


def greedy(client, prompt=PROMPT, max_tokens=12, **kw):
    return client.completions.create(model=MODEL_NAME, prompt=prompt, max_tokens=max_tokens, temperature=0, **kw)


def test_models_lists_the_served_model(client):
    ids = [m.id for m in client.models.list().data]
    assert ids == [MODEL_NAME]
    assert client.models.retrieve(MODEL_NAME).id == MODEL_NAME


def test_greedy_completion_matches_lumen_run(server, client):
    r = greedy(client, max_tokens=12)
    assert r.object == "text_completion" and len(r.choices) == 1
    choice = r.choices[0]
    assert choice.finish_reason == "length"
    assert r.usage.completion_tokens == 12
    assert r.usage.prompt_tokens == len(server.tokenize(prompt=PROMPT))
    # `lumen run` generates through the single-sequence SingleSequenceForward, not the serving engine.
    run = subprocess.run([os.environ["LUMEN_BIN"], "run", "-m", str(model_path()), "-p", PROMPT, "-n", "12",
                          "--temp", "0"], capture_output=True, text=True, check=True)
    assert choice.text and run.stdout == choice.text + "\n"


def test_streamed_completion_equals_whole(client):
    whole = greedy(client, max_tokens=20).choices[0].text
    pieces, usage, finish = [], None, None
    for chunk in client.completions.create(model=MODEL_NAME, prompt=PROMPT, max_tokens=20, temperature=0,
                                           stream=True, stream_options={"include_usage": True}):
        if chunk.usage is not None:
            usage = chunk.usage
            assert chunk.choices == []
            continue
        pieces.append(chunk.choices[0].text)
        if chunk.choices[0].finish_reason:
            finish = chunk.choices[0].finish_reason
    assert "".join(pieces) == whole
    assert finish == "length"
    assert usage is not None and usage.completion_tokens == 20 and usage.total_tokens == usage.prompt_tokens + 20


def test_chat_whole_and_streamed_agree(client):
    messages = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Name a colour."}]
    whole = client.chat.completions.create(model=MODEL_NAME, messages=messages, max_tokens=16, temperature=0)
    assert whole.object == "chat.completion"
    text = whole.choices[0].message.content
    assert whole.choices[0].message.role == "assistant" and text
    roles, pieces = [], []
    for chunk in client.chat.completions.create(model=MODEL_NAME, messages=messages, max_tokens=16, temperature=0,
                                                stream=True):
        delta = chunk.choices[0].delta
        if delta.role:
            roles.append(delta.role)
        pieces.append(delta.content or "")
    assert roles == ["assistant"]
    assert "".join(pieces) == text


def test_chat_message_text_never_becomes_control_tokens(server, client):
    typed = server.tokenize(messages=[{"role": "user", "content": "<|im_end|>"}])
    im_end = server.tokenize(prompt="<|im_end|>")
    plain = server.tokenize(messages=[{"role": "user", "content": "x"}])
    assert len(im_end) == 1
    # The template's own <|im_end|> markers are control tokens; the typed one is text.
    assert typed.count(im_end[0]) == plain.count(im_end[0]) >= 1


def test_completion_logprobs(client):
    r = greedy(client, max_tokens=6, logprobs=3)
    lp = r.choices[0].logprobs
    assert len(lp.tokens) == len(lp.token_logprobs) == len(lp.top_logprobs) == len(lp.text_offset) == 6
    for token, logprob, top in zip(lp.tokens, lp.token_logprobs, lp.top_logprobs):
        assert logprob <= 0 and math.isfinite(logprob)
        assert 1 <= len(top) <= 3
        # Greedy: the chosen token is the most likely one.
        assert max(top.values()) == logprob
    assert "".join(lp.tokens) == r.choices[0].text


def test_completion_top_logprobs_include_the_sampled_token(client):
    # OpenAI and vLLM list the sampled token among top_logprobs (up to logprobs + 1 entries);
    # Lumen left it out when it was not one of the k likeliest.
    for k in (0, 1, 2):
        r = client.completions.create(model=MODEL_NAME, prompt="Once upon a time", max_tokens=24, temperature=1.5,
                                      seed=3, logprobs=k)
        lp = r.choices[0].logprobs
        outside = 0
        for token, logprob, top in zip(lp.tokens, lp.token_logprobs, lp.top_logprobs):
            assert top[token] == logprob, (token, top)
            assert max(1, k) <= len(top) <= k + 1
            outside += len(top) == k + 1
        assert outside > 0, "a sampled token outside the top k should have been drawn at temperature 1.5"
    # With echo, the prompt's tokens (after the first) are listed the same way.
    e = greedy(client, max_tokens=2, echo=True, logprobs=1).choices[0].logprobs
    assert e.top_logprobs[0] is None
    for token, logprob, top in zip(e.tokens[1:], e.token_logprobs[1:], e.top_logprobs[1:]):
        assert top[token] == logprob


def test_chat_logprobs(client):
    r = client.chat.completions.create(model=MODEL_NAME, messages=[{"role": "user", "content": "Hi"}], max_tokens=5,
                                       temperature=0, logprobs=True, top_logprobs=2)
    content = r.choices[0].logprobs.content
    assert len(content) == 5
    for item in content:
        assert item.logprob <= 0 and len(item.top_logprobs) == 2
        assert item.top_logprobs[0].token == item.token and item.top_logprobs[0].logprob == item.logprob
        assert bytes(item.bytes) == item.token.encode()


def test_stop_string_ends_the_text_before_it(client):
    text = greedy(client, max_tokens=24).choices[0].text
    words = text.split()
    stop = words[2]
    r = greedy(client, max_tokens=24, stop=[stop])
    assert r.choices[0].finish_reason == "stop"
    assert stop not in r.choices[0].text
    assert text.startswith(r.choices[0].text)


def test_seed_reproduces_sampling(client):
    def sample(seed):
        return client.completions.create(model=MODEL_NAME, prompt="Once upon a time", max_tokens=16, temperature=1.0,
                                         seed=seed).choices[0].text
    a, b = sample(1234), sample(1234)
    assert a == b
    assert len({sample(s) for s in range(1235, 1240)} | {a}) > 1


def test_n_choices_are_reproducible_and_their_own(client):
    kw = dict(model=MODEL_NAME, prompt="Once upon a time", max_tokens=10, temperature=1.0)
    r = client.completions.create(n=3, seed=77, **kw)
    assert [c.index for c in r.choices] == [0, 1, 2]
    texts = [c.text for c in r.choices]
    assert len(set(texts)) > 1
    assert r.usage.completion_tokens == 30
    # The first choice is the request with n = 1; the others repeat with the seed.
    assert client.completions.create(seed=77, **kw).choices[0].text == texts[0]
    assert [c.text for c in client.completions.create(n=3, seed=77, **kw).choices] == texts
    # Streamed, the same three choices arrive interleaved by index.
    streamed = ["", "", ""]
    for chunk in client.completions.create(n=3, seed=77, stream=True, **kw):
        for c in chunk.choices:
            streamed[c.index] += c.text
    assert streamed == texts


def test_neighbouring_seeds_share_no_choice(client):
    # Choice i used to draw from seed + i: seed 1's first choice was seed 0's second. Each
    # choice's stream is now a mix of (seed, i), so requests with nearby seeds share nothing.
    kw = dict(model=MODEL_NAME, prompt="Once upon a time", max_tokens=12, temperature=1.0, n=3)
    texts = {seed: [c.text for c in client.completions.create(seed=seed, **kw).choices] for seed in (0, 1, 2)}
    for a in texts:
        for b in texts:
            if a < b:
                assert not set(texts[a]) & set(texts[b]), texts


def test_seed_minus_one_is_random_and_out_of_range_seeds_are_refused(server, client):
    kw = dict(model=MODEL_NAME, prompt="Once upon a time", max_tokens=12, temperature=1.0)
    # -1 is llama-server's and vLLM's "no seed": a fresh one each time, not 2^64 - 1.
    randoms = {client.completions.create(seed=-1, **kw).choices[0].text for _ in range(4)}
    assert len(randoms) > 1
    fixed = client.completions.create(seed=2**64 - 1, **kw).choices[0].text
    assert fixed == client.completions.create(seed=2**64 - 1, **kw).choices[0].text
    for seed in (2**64, -2, -(2**63), 1.5, "7", True):
        r = server.post("/v1/completions", {**kw, "seed": seed})
        assert r.status_code == 400, (seed, r.text)
        assert r.json()["error"]["param"] == "seed"


def test_cli_seed_minus_one_is_random_and_out_of_range_is_an_error():
    def run(*seed):
        return subprocess.run([os.environ["LUMEN_BIN"], "run", "-m", str(model_path()), "-p", "Once upon a time",
                               "-n", "12", "--temp", "1", *seed], capture_output=True, text=True, timeout=300)
    seeded = run("--seed", "5")
    assert seeded.returncode == 0 and seeded.stdout == run("--seed", "5").stdout
    assert len({run("--seed", "-1").stdout for _ in range(3)}) > 1
    for bad in ("18446744073709551616", "-2", "1e3", "x"):
        out = run("--seed", bad)
        assert out.returncode != 0 and "--seed" in out.stderr, (bad, out.stderr)
        assert out.stdout == ""


def test_best_of_returns_the_candidate_with_the_highest_mean_logprob(client):
    kw = dict(model=MODEL_NAME, prompt="Once upon a time", max_tokens=8, temperature=1.0)
    best = client.completions.create(best_of=3, seed=21, **kw).choices[0].text
    # best_of's candidates are the n = 3 request's choices with the same seed.
    choices = client.completions.create(n=3, seed=21, logprobs=0, **kw).choices
    candidates = [(sum(c.logprobs.token_logprobs) / len(c.logprobs.token_logprobs), c.text) for c in choices]
    assert best == max(candidates, key=lambda c: c[0])[1]


def test_beam_search_is_deterministic_and_ranked(client):
    kw = dict(model=MODEL_NAME, prompt="The best way to learn", max_tokens=10, n=2, logprobs=0,
              extra_body={"use_beam_search": True, "best_of": 3, "length_penalty": 1.0, "ignore_eos": True})
    a, b = client.completions.create(**kw), client.completions.create(**kw)
    assert [c.text for c in a.choices] == [c.text for c in b.choices]
    assert len(a.choices) == 2 and a.choices[0].text != a.choices[1].text
    scores = [sum(c.logprobs.token_logprobs) / len(c.logprobs.token_logprobs) for c in a.choices]
    assert scores[0] >= scores[1]
    # A beam of width 1 is greedy decoding.
    one = client.completions.create(model=MODEL_NAME, prompt="The best way to learn", max_tokens=10,
                                    extra_body={"use_beam_search": True, "ignore_eos": True})
    g = greedy(client, prompt="The best way to learn", max_tokens=10, extra_body={"ignore_eos": True})
    assert one.choices[0].text == g.choices[0].text


def test_prompt_logprobs_and_echo_with_logprobs(server, client):
    prompt_ids = server.tokenize(prompt=PROMPT)
    r = greedy(client, max_tokens=3, extra_body={"prompt_logprobs": 2})
    plp = r.choices[0].prompt_logprobs
    assert len(plp) == len(prompt_ids) and plp[0] is None
    for token, entry in zip(prompt_ids[1:], plp[1:]):
        assert str(token) in entry and entry[str(token)]["logprob"] <= 0
        assert 2 <= len(entry) <= 3  # the prompt token and the top 2 (it may be one of them)
    # OpenAI's echo + logprobs: the prompt's tokens lead the lists, the first without a value.
    e = greedy(client, max_tokens=3, echo=True, logprobs=1).choices[0]
    assert e.text.startswith(PROMPT)
    assert len(e.logprobs.tokens) == len(prompt_ids) + 3
    assert e.logprobs.token_logprobs[0] is None
    for i, token in enumerate(prompt_ids[1:], start=1):
        assert abs(e.logprobs.token_logprobs[i] - plp[i][str(token)]["logprob"]) < 1e-5
    assert e.logprobs.text_offset == sorted(e.logprobs.text_offset)


def test_chat_n_choices(client):
    r = client.chat.completions.create(model=MODEL_NAME, messages=[{"role": "user", "content": "Tell a joke"}],
                                       max_tokens=8, temperature=1.0, n=2, seed=5)
    assert [c.index for c in r.choices] == [0, 1]


def test_prompt_forms(server, client):
    ids = server.tokenize(prompt=PROMPT)
    by_text = greedy(client, max_tokens=8).choices[0].text
    assert greedy(client, prompt=ids, max_tokens=8).choices[0].text == by_text
    r = greedy(client, prompt=[PROMPT, ids], max_tokens=8)
    assert [c.text for c in r.choices] == [by_text, by_text]
    text = server.post("/detokenize", {"tokens": ids}).json()["prompt"]
    assert text == PROMPT
    echoed = greedy(client, max_tokens=8, echo=True).choices[0].text
    assert echoed == PROMPT + by_text
