#!/usr/bin/env python3
"""Structured output side by side: Lumen, llguidance and xgrammar on the same cases, the same
vocabulary and the same token sequences.

`lumen bench grammar --walks-out` measures Lumen and writes the vocabulary (every token's
bytes, as Lumen's grammar engine sees them) and the tokens of every seeded random walk; this
script builds llguidance's and xgrammar's tokenizers from those bytes and replays the walks
through them, timing each next-token mask. A walk a peer refuses (its JSON Schema converter
allows less whitespace, say) stops there for that peer; the table says how many masks each
engine timed.

Each engine compiles a case from its source with its own front end (JSON Schema, GBNF, regex).
Timings are taken around the Python call for the peers (about a microsecond of binding
overhead each) and inside C++ for Lumen.

    pip install llguidance xgrammar   # not dependencies of Lumen: this script only
    python bench/compare_grammar.py [--lumen build/release/src/cli/lumen] [-m MODEL] [--json]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np


def percentile(values, p):
    return float(np.percentile(values, p)) if values else float("nan")


def summary(times_us):
    return {"count": len(times_us), "p50_us": percentile(times_us, 50), "p99_us": percentile(times_us, 99),
            "max_us": max(times_us) if times_us else float("nan")}


class Vocabulary:
    def __init__(self, data):
        v = data["vocabulary"]
        self.tokens = [bytes.fromhex(h) for h in v["tokens"]]
        self.unusable = set(v["unusable"])
        self.eog = list(v["end_of_generation"])
        self.size = len(self.tokens)


# ---- llguidance ----------------------------------------------------------------------------

class GreedyTokenizer:
    """What llguidance's TokenizerWrapper needs: token bytes, EOS/BOS, and a tokenize call
    (greedy longest match; masks never call it, only forced-text helpers do). Special and
    unusable tokens get llguidance's special marker (a leading 0xFF byte)."""

    def __init__(self, vocab):
        self.tokens = []
        for i, t in enumerate(vocab.tokens):
            special = i in vocab.unusable or i in vocab.eog or not t
            self.tokens.append(b"\xff<special_%d>" % i if special else t)
        self.eos_token_id = vocab.eog[0]
        self.bos_token_id = None
        self.special_token_ids = sorted(set(vocab.unusable) | set(vocab.eog))
        self._ids = {t: i for i, t in enumerate(self.tokens) if not t.startswith(b"\xff")}
        self._longest = max(len(t) for t in self._ids)

    def __call__(self, text):
        if isinstance(text, str):
            text = text.encode("utf-8")
        out, i = [], 0
        while i < len(text):
            for n in range(min(self._longest, len(text) - i), 0, -1):
                tid = self._ids.get(text[i:i + n])
                if tid is not None:
                    out.append(tid)
                    i += n
                    break
            else:
                i += 1  # a byte no token spells: skipped
        return out


class Llguidance:
    name = "llguidance"

    def __init__(self, vocab):
        import llguidance
        import llguidance.numpy
        self.llg = llguidance
        self.fill = llguidance.numpy.fill_next_token_bitmask
        self.tokenizer = llguidance.LLTokenizer(llguidance.TokenizerWrapper(GreedyTokenizer(vocab)),
                                                n_vocab=vocab.size, eos_token=vocab.eog)
        self.mask = llguidance.numpy.allocate_token_bitmask(1, vocab.size)
        self.version = getattr(llguidance, "__version__", "")

    def grammar(self, case):
        kind = {"json_schema": "json_schema", "gbnf": "gbnf", "regex": "regex"}[case["kind"]]
        return self.llg.grammar_from(kind, case["source"])

    def compile(self, case):
        # The matcher is where llguidance builds its lexer and parser for the grammar.
        m = self.llg.LLMatcher(self.tokenizer, self.grammar(case))
        if m.is_error():
            raise RuntimeError(m.get_error())
        return m

    def matcher(self, compiled, case):
        return self.compile(case)  # a request gets a fresh matcher

    def fill_mask(self, m):
        self.fill(m, self.mask, 0)

    def accept(self, m, token):
        return m.consume_token(token) and not m.is_error()


# ---- xgrammar ------------------------------------------------------------------------------

class Xgrammar:
    name = "xgrammar"

    def __init__(self, vocab):
        import xgrammar as xgr
        self.xgr = xgr
        # RAW: the bytes are the token's text as it is; special and unusable tokens are empty
        # (xgrammar never allows an empty token).
        encoded = [b"" if (i in vocab.unusable or i in vocab.eog) else t for i, t in enumerate(vocab.tokens)]
        self.info = xgr.TokenizerInfo(encoded, xgr.VocabType.RAW, vocab_size=vocab.size, stop_token_ids=vocab.eog)
        self.mask = xgr.allocate_token_bitmask(1, vocab.size)
        self.version = getattr(xgr, "__version__", "")

    def compile(self, case):
        # A compiler without its cache, so that every compile is timed whole.
        compiler = self.xgr.GrammarCompiler(self.info, cache_enabled=False)
        kind, source = case["kind"], case["source"]
        if kind == "json_schema":
            return compiler.compile_json_schema(source, any_whitespace=True)
        if kind == "regex":
            return compiler.compile_regex(source)
        # xgrammar's EBNF has no empty alternative (`ws ::= | " "`): spelled "" there.
        source = re.sub(r'::=(\s*)\|', r'::=\1"" |', source)
        return compiler.compile_grammar(self.xgr.Grammar.from_ebnf(source))

    def matcher(self, compiled, case):
        return self.xgr.GrammarMatcher(compiled)

    def fill_mask(self, m):
        m.fill_next_token_bitmask(self.mask)

    def accept(self, m, token):
        return m.accept_token(token)


# ---- the replay ----------------------------------------------------------------------------

def measure(engine, case, compiles):
    times = []
    compiled = None
    for _ in range(compiles):
        t = time.perf_counter()
        compiled = engine.compile(case)
        times.append((time.perf_counter() - t) * 1e6)
    result = {"compile_us": float(np.median(times))}
    passes = []
    refused = 0
    for _ in range(2):  # cold (fresh compiled grammar), then warm (the same walks again)
        masks = []
        for walk in case["walks"]:
            m = engine.matcher(compiled, case)
            for token in walk:
                t = time.perf_counter()
                engine.fill_mask(m)
                masks.append((time.perf_counter() - t) * 1e6)
                if not engine.accept(m, token):
                    refused += 1
                    break
        passes.append(masks)
    result["first_mask_us"] = passes[0][0] if passes[0] else float("nan")
    result["cold"] = summary(passes[0])
    result["cold_total_ms"] = sum(passes[0]) / 1000
    result["warm"] = summary(passes[1])
    result["refused_walks"] = refused // 2
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lumen", default="build/release/src/cli/lumen")
    parser.add_argument("-m", "--model", default="")
    parser.add_argument("--walks", type=int, default=16)
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--compiles", type=int, default=3)
    parser.add_argument("--engines", default="llguidance,xgrammar")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("lumen_args", nargs="*", help="more arguments for lumen bench grammar (after --)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        walks_path = os.path.join(tmp, "walks.json")
        cmd = [args.lumen, "bench", "grammar", "--json", "--walks-out", walks_path, "--walks", str(args.walks),
               "--max-tokens", str(args.max_tokens), "--seed", str(args.seed)]
        if args.model:
            cmd += ["-m", args.model]
        lumen = json.loads(subprocess.run(cmd + args.lumen_args, check=True, capture_output=True, text=True).stdout)
        with open(walks_path) as f:
            data = json.load(f)
    vocab = Vocabulary(data)

    engines = []
    for name in args.engines.split(","):
        try:
            engines.append({"llguidance": Llguidance, "xgrammar": Xgrammar}[name](vocab))
        except ImportError as e:
            print(f"{name}: not installed ({e}); left out", file=sys.stderr)

    rows = []
    for case, lumen_case in zip(data["cases"], lumen["cases"]):
        row = {"case": case["name"], "kind": case["kind"], "lumen": lumen_case}
        for engine in engines:
            try:
                row[engine.name] = measure(engine, case, args.compiles)
            except Exception as e:  # a front end that refuses the case: say so, go on
                row[engine.name] = {"error": str(e)[:200]}
            print(f"{case['name']} {engine.name} done", file=sys.stderr)
        rows.append(row)

    names = ["lumen"] + [e.name for e in engines]
    if args.json:
        print(json.dumps({"model": data["model"], "vocabulary_tokens": vocab.size,
                          "versions": {e.name: e.version for e in engines}, "cases": rows}, indent=2))
        return
    print(f"model {data['model']} ({vocab.size} tokens); {args.walks} walks of up to {args.max_tokens} tokens, "
          f"seed {args.seed}; times in microseconds unless said")
    metrics = [("compile ms", lambda r: r["compile_us"] / 1000, "{:.2f}"),
               ("1st mask ms", lambda r: r["first_mask_us"] / 1000, "{:.2f}"),
               ("cold total ms", lambda r: r["cold_total_ms"], "{:.1f}"),
               ("warm p50", lambda r: r["warm"]["p50_us"], "{:.1f}"),
               ("warm p99", lambda r: r["warm"]["p99_us"], "{:.1f}"),
               ("masks", lambda r: r["warm"]["count"], "{}")]
    header = "| case | engine | " + " | ".join(m[0] for m in metrics) + " | warm p50 vs Lumen |"
    print(header)
    print("|" + "---|" * (header.count("|") - 1))
    for row in rows:
        base = row["lumen"]["warm"]["p50_us"]
        for name in names:
            r = row.get(name)
            if r is None:
                continue
            if "error" in r:
                print(f"| {row['case']} | {name} | error: {r['error']} |")
                continue
            cells = [fmt.format(get(r)) for _, get, fmt in metrics]
            ratio = r["warm"]["p50_us"] / base if base > 0 else float("nan")
            print(f"| {row['case']} | {name} | " + " | ".join(cells) + f" | {ratio:.2f}x |")


if __name__ == "__main__":
    main()
