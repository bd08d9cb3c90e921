#!/usr/bin/env python3
"""Rewrites a .cu file into C++ that the host compiler takes with cuda_sim.h (tests/unit/cuda_sim).

Two constructs are not C++ and no macro can spell them:
  kernel<<<grid, block, shared, stream>>>(args)  ->  ::cuda_sim::launcher(kernel, grid, block, shared, stream)(args)
  extern __shared__ T name[];                    ->  T* name = reinterpret_cast<T*>(::cuda_sim::dynamic_shared());
Everything else is left as written, so the line numbers of errors and of ASan's reports match the .cu file.

usage: translate_cu.py IN.cu OUT.cc
"""
import re
import sys

EXTERN_SHARED = re.compile(r"extern\s+__shared__\s+(?:__align__\(\s*\d+\s*\)\s+)?([\w:]+)\s+(\w+)\s*\[\s*\]\s*;")


def callee_start(text, end):
    """Index where the callee expression that ends at `end` (just before <<<) starts."""
    i = end
    while i > 0 and text[i - 1].isspace():  # clang-format may break the line before <<<
        i -= 1
    depth = 0
    while i > 0:
        c = text[i - 1]
        if c == ">":
            depth += 1
        elif c == "<":
            depth -= 1
        elif depth == 0 and not (c.isalnum() or c in "_:"):
            break
        i -= 1
    return i


def translate(text):
    out = []
    pos = 0
    while True:
        at = text.find("<<<", pos)
        if at < 0:
            out.append(text[pos:])
            break
        close = text.find(">>>", at)
        if close < 0:
            raise SystemExit("unterminated <<< at offset %d" % at)
        line_start = text.rfind("\n", 0, at) + 1
        if "//" in text[line_start:at]:  # a comment that mentions the syntax
            out.append(text[pos:at + 3])
            pos = at + 3
            continue
        start = callee_start(text, at)
        callee = text[start:at].strip()
        if not callee:
            raise SystemExit("no kernel before <<< at offset %d" % at)
        out.append(text[pos:start])
        out.append("::cuda_sim::launcher(%s, %s)" % (callee, text[at + 3:close]))
        pos = close + 3
    text = "".join(out)
    return EXTERN_SHARED.sub(r"\1* \2 = reinterpret_cast<\1*>(::cuda_sim::dynamic_shared());", text)


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    with open(sys.argv[1]) as f:
        text = f.read()
    result = '#line 1 "%s"\n' % sys.argv[1] + translate(text)
    with open(sys.argv[2], "w") as f:
        f.write(result)


if __name__ == "__main__":
    main()
