#!/usr/bin/env python3
"""A long English text for perplexity at long windows, from files every Debian system has.

The repo's perplexity text (tests/golden/perplexity/gpl-3.0.txt) has ~7.6k tokens on SmolLM2's and
Gemma 3's tokenizers: one window of 4096 tokens and no second. `lumen perplexity -c 4096` needs
two windows, 8192 tokens, and -c 8192 (SmolLM2's training context) two of 8192. This writes the
license texts Debian's base-files package installs (/usr/share/common-licenses), in a fixed order
starting with the same GPL-3, about 210 KB and 46k tokens, and prints the result's SHA-256 so a
run can say which text it measured. Legal prose repeats itself across licenses (the GPL-2, LGPL and
GPL-3 share whole clauses): a long context helps predict it, which is what eviction must keep.

  bench/make_long_text.py /tmp/licenses.txt
"""
import hashlib
import pathlib
import sys

LICENSES = ["GPL-3", "GPL-2", "LGPL-2.1", "GFDL-1.3", "MPL-2.0", "Apache-2.0", "MPL-1.1", "GFDL-1.2", "LGPL-3",
            "GPL-1", "Artistic", "CC0-1.0", "BSD"]
ROOT = pathlib.Path("/usr/share/common-licenses")


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    missing = [name for name in LICENSES if not (ROOT / name).is_file()]
    if missing:
        sys.exit(f"not a Debian system? missing under {ROOT}: {', '.join(missing)}")
    text = "\n\n".join((ROOT / name).read_text(encoding="utf-8").strip() for name in LICENSES) + "\n"
    pathlib.Path(sys.argv[1]).write_text(text, encoding="utf-8")
    print(f"{sys.argv[1]}: {len(text)} characters, sha256 {hashlib.sha256(text.encode()).hexdigest()}")


if __name__ == "__main__":
    main()
