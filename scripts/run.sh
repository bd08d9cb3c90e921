#!/usr/bin/env bash
# The main job on a fresh machine: install what is missing, build Release, and run Lumen on the
# default model: a greedy continuation of a prompt (extra arguments go to `lumen run`).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cmake --preset release -DLUMEN_PYTHON="${LUMEN_HOME:-$HOME/.cache/lumen}/venv/bin/python" >/dev/null
cmake --build --preset release -j2
if [ "$#" -eq 0 ]; then
  set -- -p "The three most useful things to know about the ocean are" -n 64 --temp 0
fi
build/release/src/cli/lumen run "$@"
