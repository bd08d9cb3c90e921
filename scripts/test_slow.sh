#!/usr/bin/env bash
# The tests labelled `slow`: a few minutes of checks that CI's time budget (scripts/test.sh on a
# 2-core machine, under 45 minutes) cannot hold. Run it before submitting, after scripts/test.sh
# (or any Release build with the tests) has built build/release.
set -uo pipefail
cd "$(dirname "$0")/.."
PY="${LUMEN_HOME:-$HOME/.cache/lumen}/venv/bin/python"
export CCACHE_BASEDIR="$PWD"
export CCACHE_NOHASHDIR=1  # as scripts/test.sh: Debug objects hit from any clone
if [ ! -f build/release/CMakeCache.txt ]; then
  cmake --preset release -DLUMEN_PYTHON="$PY" -DLUMEN_TESTS=ON -DLUMEN_MPI=ON >/dev/null || exit 1
fi
cmake --build build/release -j"${LUMEN_JOBS:-2}" || exit 1
# The quick start's build (preset quick, unity batches: two files' file-local helpers can clash
# there and nowhere else) compiles and answers as the Release build does.
LUMEN_PRESETS=quick scripts/test.sh || quick_status=1
# The container image's test builds with podman (skipped, and said so, where it cannot install it).
scripts/setup_container.sh || echo "test_slow: podman could not be installed; container_image will be skipped" >&2
(cd build/release && ctest --output-on-failure -j"${LUMEN_JOBS:-2}" --timeout 900 -L slow) || exit 1
exit "${quick_status:-0}"
