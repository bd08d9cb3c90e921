#!/usr/bin/env bash
# The main job on a fresh machine: install what is missing, build Release, and run Lumen on the
# default model. Until the forward pass lands, the main job is `lumen inspect`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cmake --preset release -DLUMEN_PYTHON="${LUMEN_HOME:-$HOME/.cache/lumen}/venv/bin/python" >/dev/null
cmake --build --preset release -j2
build/release/src/cli/lumen inspect "$@"
