#!/usr/bin/env bash
# The quick start on a fresh machine: installs the packages `lumen` builds against
# (scripts/setup_build.sh, no test tools), builds only `lumen` (Release), installs it into
# $LUMEN_PREFIX/bin (default ~/.local/bin) so the README's `lumen ...` commands work, pulls the
# default model, and runs the main job: a greedy continuation of a prompt.
#
#   scripts/run.sh                          # the default prompt, 64 tokens, greedy
#   scripts/run.sh -p "your prompt" -n 32   # your arguments replace the defaults they name
#
# Only the model's text goes to stdout; setup and build lines go to stderr.
set -euo pipefail
cd "$(dirname "$0")/.."
exec 3>&1 1>&2  # everything but `lumen run` itself writes to stderr

scripts/setup_build.sh
# A developer's Release build (scripts/test.sh's, with the tests) is reused when it is there;
# otherwise the "quick" preset: lumen alone, compiled in unity batches, which cuts the compile
# time by about a third on a fresh machine (scripts/test.sh builds it too, so it keeps compiling).
preset=quick
[ -f build/release/CMakeCache.txt ] && preset=release
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" --target lumen -j"${LUMEN_JOBS:-2}"
prefix="${LUMEN_PREFIX:-$HOME/.local}"
cmake --install "build/$preset" --prefix "$prefix" --component lumen >/dev/null
case ":$PATH:" in
  *":$prefix/bin:"*) ;;
  *) echo "run.sh: lumen is installed in $prefix/bin; add it to PATH: export PATH=\"$prefix/bin:\$PATH\"" ;;
esac
lumen="$prefix/bin/lumen"
# The default model (a no-op when it is in the cache with the right hash).
"$lumen" pull smollm2 >/dev/null

# Greedy, 64 tokens and the default prompt, each unless the arguments give their own (lumen run
# refuses a flag given twice, so a default is added only where the user's is absent).
given() {  # given FLAG...: whether the arguments hold one of them (also as --flag=value / -fVALUE)
  local arg flag
  for arg in "${args[@]}"; do
    for flag in "$@"; do
      case "$arg" in "$flag" | "$flag="*) return 0 ;; esac
      [[ "$flag" != --* && "$arg" == "$flag"?* ]] && return 0
    done
  done
  return 1
}
args=("$@")
defaults=()
given -n --n-predict || defaults+=(-n 64)
given --temp || defaults+=(--temp 0)
given -p --prompt -f --file || defaults+=(-p "The three most useful things to know about the ocean are")
exec "$lumen" run "${defaults[@]}" "$@" >&3
