#!/usr/bin/env python3
"""What n-gram speculation can reach at batch 1 on compare_spec.py's prompts, given what a
verification step costs on this machine: an upper bound no draft-length policy can pass.

    python3 bench/spec_bound.py [--model MODEL.gguf] [--model-template] [-n 128] [--depth 800]

Greedy verification accepts a draft token exactly when it is the token plain decoding would
produce there, so the whole run can be replayed without the model once the plain output is
known: at each step the proposer (the engine's rule, spec/ngram_proposer.h: the longest suffix
of 2..4 tokens seen before, its most recent occurrence, the tokens that followed) offers a
draft, a policy picks its length k, the draft's first k tokens are compared with the plain
output, and the step advances by the accepted tokens plus one at the price of a verification
step of k draft tokens. That price, in plain decode steps, comes from `spec_step_cost` (k = 1
to 12, measured here at --depth positions, medians of 60 interleaved rounds; the host's load
moves them by 10-20% from run to run, so run the script more than once). The speedup of a
policy is the generated tokens over the summed step prices.

Policies replayed:
  - fixed k: every draft cut to k tokens (k = 1..8);
  - engine: the engine's rule for k <= 5 (spec/draft_length.h): the length that maximizes
    expected tokens over price, from the sequence's per-token acceptance (accepted over examined
    draft tokens, both forgotten by 0.8 per draft, starting at 2 of 2) and a price linear in k
    (the least-squares slope of the measured prices over k = 0..5, as spec/step_cost.h fits the
    engine's own step times); its pauses after failing drafts are left out;
  - oracle K: each draft cut to exactly the tokens that will be accepted (at most K): no draft
    token is ever rejected, so no real policy, which must choose before it knows, can do
    better with this proposer and these prices.
compare_spec.py measures the engine itself.

Prints JSON: the step prices, per prompt the plain output's length and each policy's speedup,
and their geometric means. Needs build/release with -DLUMEN_BENCH=ON (spec_step_cost).
"""
import argparse
import json
import math
import re
import subprocess
import tempfile
from pathlib import Path

import compare_spec

REPO = Path(__file__).resolve().parent.parent
STEP_COST = REPO / "build" / "release" / "bench" / "spec_step_cost"
MAX_K = 12


def ngram_draft(tokens, min_n, max_n, k):
    """spec/ngram_proposer.cc's ngram_lookup: up to k tokens, or none."""
    n = len(tokens)
    best_end, best_len = -1, min_n - 1
    for end in range(n - 1, min_n - 1, -1):
        m, limit = 0, min(max_n, end)
        while m < limit and tokens[end - 1 - m] == tokens[n - 1 - m]:
            m += 1
        if m > best_len:
            best_len, best_end = m, end
            if m == max_n:
                break
    if best_end < 0:
        return []
    period, out = n - best_end, []
    for i in range(k):  # a continuation that reaches the end repeats with that period
        out.append(tokens[best_end + i] if i < period else out[i - period])
    return out


def replay(prompt, output, price, choose, min_n=2, max_n=4):
    """Plain-decode steps' worth of time speculation spends on `output`; choose(draft, truth) -> k."""
    tokens, i, cost = list(prompt), 0, 0.0
    while i < len(output):
        draft = ngram_draft(tokens, min_n, max_n, MAX_K)[: len(output) - i - 1]
        k = min(choose(draft, output[i:]), len(draft))
        accepted = 0
        while accepted < k and draft[accepted] == output[i + accepted]:
            accepted += 1
        tokens += output[i:i + accepted + 1]
        i += accepted + 1
        cost += price[k]
    return cost


def fixed(k):
    return lambda draft, truth: k


def oracle(limit):
    def choose(draft, truth):
        a = 0
        while a < min(limit, len(draft)) and draft[a] == truth[a]:
            a += 1
        return a
    return choose


class EngineRule:
    """spec/draft_length.h's choice from spec/acceptance_history.h's token acceptance."""

    def __init__(self, price, limit=5):
        xs = range(limit + 1)
        mean_x, mean_y = sum(xs) / len(xs), sum(price[x] for x in xs) / len(xs)
        slope = sum((x - mean_x) * (price[x] - mean_y) for x in xs) / sum((x - mean_x) ** 2 for x in xs)
        self.cost = max(0.0, slope / (mean_y - slope * mean_x))  # per draft token, over a plain step
        self.limit = limit
        self.accepted = self.examined = 2.0

    def __call__(self, draft, truth):
        a = self.accepted / self.examined
        rate = lambda k: sum(a ** j for j in range(k + 1)) / (1 + self.cost * k)
        k = max(range(1, self.limit + 1), key=lambda k: (rate(k), k))  # ties: the longer
        k = min(k, len(draft))
        if k > 0:  # what the verification will show: the accepted run and, if any, one refusal
            run = 0
            while run < k and draft[run] == truth[run]:
                run += 1
            self.accepted = 0.8 * self.accepted + run
            self.examined = 0.8 * self.examined + run + (1 if run < k else 0)
        return k


def step_prices(model, depth, threads):
    cmd = [str(STEP_COST), model, str(depth), "60", str(threads), ",".join(str(k) for k in range(1, MAX_K + 1))]
    log = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    price = {0: 1.0}
    for k, ratio in re.findall(r"1 \+ (\d+) rows: [\d.]+ ms, ([\d.]+)x a decode step", log):
        price[int(k)] = float(ratio)
    if len(price) != MAX_K + 1:
        raise SystemExit(f"spec_step_cost printed no price for every k:\n{log}")
    return price


def plain_output(model, prompt_text, n_gen, threads):
    """The prompt's tokens as `bench latency` reads a prompt file, and the greedy output's."""
    lumen = str(compare_spec.LUMEN)
    prompt = subprocess.run([lumen, "tokenize", "-m", model, "--parse-special", "--add-special", "-p", prompt_text],
                            check=True, capture_output=True, text=True).stdout.split()
    with tempfile.NamedTemporaryFile("w", suffix=".txt") as f:
        f.write(prompt_text)
        f.flush()
        log = subprocess.run([lumen, "run", "-m", model, "-f", f.name, "-n", str(n_gen), "--temp", "0",
                              "--logprobs", "0", "-t", str(threads)], check=True, capture_output=True, text=True).stderr
    output = [int(m.group(1)) for m in re.finditer(r"^\s+(\d+) ", log.split("log-probabilities:")[1], re.M)]
    return [int(t) for t in prompt], output


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=str(compare_spec.DEFAULT_MODEL))
    ap.add_argument("--model-template", action="store_true", help="as compare_spec.py's")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("-n", "--n-gen", type=int, default=128)
    ap.add_argument("--depth", type=int, default=800, help="context of the step-price measurement")
    args = ap.parse_args()

    price = step_prices(args.model, args.depth, args.threads)
    policies = {f"fixed {k}": fixed(k) for k in range(1, 9)}
    policies.update({f"oracle {k}": oracle(k) for k in (5, 8, 12)})
    results = []
    for p_index, passage in enumerate(compare_spec.passages()):
        for task, ask in compare_spec.TASKS.items():
            text = compare_spec.chat_prompt(compare_spec.LUMEN, args.model, f"{ask}\n\n{passage}", args.model_template)
            prompt, output = plain_output(args.model, text, args.n_gen, args.threads)
            row = {"passage": p_index, "task": task, "prompt_tokens": len(prompt), "generated_tokens": len(output)}
            for name, choose in list(policies.items()) + [("engine", EngineRule(price))]:
                row[name] = len(output) / replay(prompt, output, price, choose) if output else 1.0
            results.append(row)
    geomean = {name: math.exp(sum(math.log(r[name]) for r in results) / len(results))
               for name in list(policies) + ["engine"]}
    print(json.dumps({"model": args.model, "threads": args.threads, "depth": args.depth,
                      "step_price": price, "geomean_speedup": geomean, "results": results}, indent=2))


if __name__ == "__main__":
    main()
