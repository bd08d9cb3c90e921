#!/usr/bin/env bash
# The whole test suite on a fresh machine: installs what is missing, then builds and runs
#   1. where nvcc exists: the CUDA backend and its tests (label gpu); without a GPU they are
#      built (so they always compile) but not run, and counted as skipped; with one, a gpu test
#      that reports itself skipped counts as failed (gpu_tests_must_run);
#   2. Debug with AddressSanitizer + UBSan (clang), one build for two stages: the libFuzzer
#      targets for a bounded time each (label fuzz), then every test but the fuzz ones, the
#      slow real-model ones (label `model`) and those too slow under the sanitizers for what
#      they add there (label `release_only`, and the whole-engine runs in debug_skips below), so
#      memory errors in the parsers and kernels fail loudly;
#   3. Release: every test (unit, golden, model, e2e) but those labelled `slow`, a few minutes
#      CI's time budget cannot hold (scripts/test_slow.sh runs them: run it before submitting).
#      It runs the last ctest of the CMake builds, so the last ctest summary in the log is the
#      full suite's;
#   (the quick start's build, preset quick, is not among the defaults: it compiles lumen a
#      second time, in unity batches that share no object with the other builds, which CI's
#      budget cannot spare; scripts/test_slow.sh runs
#      `LUMEN_PRESETS=quick scripts/test.sh`, which checks its greedy answer equals Release's);
#   4. after Release, the Python package: `pip install .` into a fresh venv (its build reuses the
#      Release build's objects through ccache) and its pytest tests (tests/python/package).
# Ends with each stage's wall time and one line "total: N passed, M failed, K skipped".
set -uo pipefail
cd "$(dirname "$0")/.."
timings=()  # "stage seconds", printed at the end: CI has a time budget to keep
timed() {  # timed STAGE COMMAND...: runs it, notes its wall time, returns its status
  local stage=$1; shift
  local start=$SECONDS
  "$@"; local rc=$?
  timings+=("$stage $((SECONDS - start))")
  return $rc
}
timed setup scripts/setup.sh || exit 1
# ccache keys on paths relative to the repository, so the Python package's build (build/python)
# reuses the Release build's objects (build/release): the same compile commands. And not on the
# directory a compile runs in: by default ccache hashes it into every compile with -g (the
# Debug preset's -gline-tables-only), so each fresh clone (CI's, at a new path each time) missed
# every Debug object: 1600+ s of CI's 4300 s on 2026-11-28 were that build. (Objects then name
# the first clone's directory in their debug info; file names stay relative to the repository.)
export CCACHE_BASEDIR="$PWD"
export CCACHE_NOHASHDIR=1
PY="${LUMEN_HOME:-$HOME/.cache/lumen}/venv/bin/python"
JOBS="${LUMEN_JOBS:-2}"

passed=0; failed=0; skipped=0; status=0
# build_stage PRESET: configures and builds it; false (and counted as a failure) if that fails.
build_stage() {
  local preset=$1
  echo "=== $preset: configure and build"
  if ! timed "$preset:build" build_preset "$preset"; then
    echo "=== $preset: build failed"; failed=$((failed + 1)); status=1; return 1
  fi
}

# test_stage STAGE PRESET CTEST_ARGS...: runs those tests of the preset's build and counts them.
test_stage() {
  local stage=$1 preset=$2; shift 2
  echo "=== $stage: test"
  stage_skipped=0
  local log; log=$(mktemp)
  local start=$SECONDS
  (cd "build/$preset" && ctest --output-on-failure -j"$JOBS" --timeout 900 "$@") | tee "$log"
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
  timings+=("$stage:test $((SECONDS - start))")
  # ctest's summary: "100% tests passed, 0 tests failed out of 57"
  local line; line=$(grep -E 'tests passed, [0-9]+ tests failed out of [0-9]+' "$log" | tail -n1)
  if [ -z "$line" ]; then failed=$((failed + 1)); status=1; rm -f "$log"; return; fi
  local bad total
  bad=$(sed -E 's/.* ([0-9]+) tests failed out of ([0-9]+).*/\1/' <<<"$line")
  total=$(sed -E 's/.* ([0-9]+) tests failed out of ([0-9]+).*/\2/' <<<"$line")
  # Tests that skipped (the gpu tests without a GPU) are listed as "(Skipped)": not passes.
  local skip; skip=$(grep -c '(Skipped)' "$log" || true)
  passed=$((passed + total - bad - skip)); failed=$((failed + bad)); skipped=$((skipped + skip))
  stage_skipped=$skip
  rm -f "$log"
}

# On a GPU host every gpu test must run: one reported as skipped there is a device the tests
# cannot see, or a failure dressed as a skip, so each counts as a failure, not a skip.
gpu_tests_must_run() {
  [ "${stage_skipped:-0}" -eq 0 ] && return
  echo "=== cuda: a GPU is here (nvidia-smi works), yet $stage_skipped gpu tests were skipped: counted as failed"
  skipped=$((skipped - stage_skipped)); failed=$((failed + stage_skipped)); status=1
}

# Whole-engine runs the sanitizers add little to (many concurrent streams, speculation, split
# and expert-parallel forwards, MoE batches): each takes 10-30 s under ASan, the code they drive
# runs under it in the unit tests of its parts, and Release runs them all. Together about 3 of
# the debug stage's 15 minutes, which a CI run on a cold cache (every build from scratch,
# 85+ minutes of its 90) cannot spare.
debug_skips='SixteenConcurrentStreamsMatchEachAlone|^Drafters/EngineModelDrafts\.|^Presets/EngineMoe\.'
debug_skips+='|^EngineSpeculative\.(LookaheadKeeps|TokenTreesKeep|GreedyOutputIsTheOutputWithoutDrafts|APoorProposer)'
debug_skips+='|^EngineDraftConfig\.TokenTrees|^SplitForward\..*MatchesOneBackend|^ComposedShiftKeys\.EngineGeneration'
debug_skips+='|^ExpertParallelSingleProcess\.|^EngineRwkv7Swap\.|^EngineKvDtype\.PreemptionAndPrefixCache'
debug_skips+='|^Presets/ComposedMoeFfn\.EngineGreedyTokensAreTheNativeOnes'

run_preset() {
  local preset=$1
  build_stage "$preset" || return
  case "$preset" in
    cuda)
      if ! have_gpu; then
        # Nothing can run them here: count them as skipped, and leave no ctest summary that
        # would read as a run of tests.
        local n; n=$(cd build/cuda && ctest -N -L gpu -LE model | sed -nE 's/^Total Tests: ([0-9]+)/\1/p')
        echo "=== cuda: built; no GPU, so its ${n:-0} tests were not run"
        skipped=$((skipped + ${n:-0})); return
      fi
      test_stage cuda cuda -L gpu -LE model
      gpu_tests_must_run ;;
    debug)
      test_stage fuzz debug -L fuzz
      test_stage debug debug -LE 'model|fuzz|release_only' -E "$debug_skips" ;;
    # The quick start's build has no tests: that it compiles (unity batches can clash where two
    # files give a file-local helper the same name) and answers is the check.
    quick) quick_start_answers ;;
    # Label slow: minutes CI's budget cannot hold (scripts/test_slow.sh runs them).
    *) test_stage "$preset" "$preset" -LE slow ;;
  esac
}

# The tests and MPI named on: a build the quick start (scripts/run.sh) configured first has both
# off, as it installs neither GoogleTest nor OpenMPI.
build_preset() {
  if [ "$1" = quick ]; then
    cmake --preset quick >/dev/null && cmake --build --preset quick -j"$JOBS"
    return
  fi
  local extra=()
  # Without a GPU the CUDA build only proves the code compiles: one architecture (Hopper's)
  # does that in half the nvcc time; with one, the preset's (Ampere and Hopper) as users get.
  # (Named either way: the cache keeps what an earlier configure set.)
  if [ "$1" = cuda ]; then
    if have_gpu; then extra+=("-DCMAKE_CUDA_ARCHITECTURES=80;90"); else extra+=(-DCMAKE_CUDA_ARCHITECTURES=90); fi
  fi
  cmake --preset "$1" -DLUMEN_PYTHON="$PY" -DLUMEN_TESTS=ON -DLUMEN_MPI=ON "${extra[@]}" >/dev/null &&
    cmake --build --preset "$1" -j"$JOBS"
}

# The quick build's lumen gives the Release build's greedy tokens on the default model.
quick_start_answers() {
  local model="${LUMEN_CACHE:-$HOME/.cache/lumen/models}/SmolLM2-135M-Instruct.Q4_1.gguf"
  local run=(run -m "$model" -p "The capital of France is" -n 16 --temp 0)
  if [ "$(build/quick/src/cli/lumen "${run[@]}" 2>/dev/null)" = "$(build/release/src/cli/lumen "${run[@]}" 2>/dev/null)" ] &&
    [ -n "$(build/quick/src/cli/lumen "${run[@]}" 2>/dev/null)" ]; then
    echo "=== quick: its lumen answers as the Release build's"; passed=$((passed + 1))
  else
    echo "=== quick: its lumen's answer differs from the Release build's (or is empty)"; failed=$((failed + 1)); status=1
  fi
}

have_gpu() { command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; }

default_presets="debug release"
if command -v nvcc >/dev/null || test -x /usr/local/cuda/bin/nvcc; then
  default_presets="cuda $default_presets"
  export CUDACXX="${CUDACXX:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}"
fi
# python_stage: a fresh venv, `pip install .` (scikit-build-core, nanobind from PyPI) and the
# package's tests, compared with the Release build's CLI; pytest's summary counts into the totals.
python_stage() {
  local venv=build/python-venv
  echo "=== python: pip install . into a fresh venv"
  rm -rf "$venv"
  if ! timed python:build python_install "$venv"; then
    echo "=== python: install failed"; failed=$((failed + 1)); status=1; return 1
  fi
  echo "=== python: test"
  local log; log=$(mktemp)
  local start=$SECONDS
  LUMEN_BIN="$PWD/build/release/src/cli/lumen" LUMEN_GENERATED_DIR="$PWD/build/release/tests/generated" \
    "$venv/bin/python" -m pytest -q -rs -p no:cacheprovider \
    tests/python/package | tee "$log"
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
  timings+=("python:test $((SECONDS - start))")
  # pytest's last line: "30 passed, 1 skipped in 12.34s" (failed, errors when there are some).
  local line; line=$(tail -n1 "$log")
  rm -f "$log"
  if ! grep -qE '[0-9]+ (passed|failed|error)' <<<"$line"; then failed=$((failed + 1)); status=1; return; fi
  count() { grep -oE "[0-9]+ $1" <<<"$line" | grep -oE '[0-9]+' || echo 0; }
  passed=$((passed + $(count passed))); skipped=$((skipped + $(count skipped)))
  failed=$((failed + $(count failed) + $(count 'errors?')))
}

python_install() {
  # The Release build's compiler by the same path: scikit-build-core would otherwise take
  # Python's (sysconfig's CXX, e.g. x86_64-linux-gnu-g++), and ccache would miss every object.
  local cxx; cxx=$(sed -n 's/^CMAKE_CXX_COMPILER:FILEPATH=//p' build/release/CMakeCache.txt 2>/dev/null)
  python3 -m venv "$1" &&
    CXX="${cxx:-c++}" CMAKE_BUILD_PARALLEL_LEVEL="$JOBS" "$1/bin/pip" install -q ".[test]"
}

for preset in ${LUMEN_PRESETS:-$default_presets}; do
  run_preset "$preset"
done
case " ${LUMEN_PRESETS:-$default_presets} " in *" release "*) python_stage ;; esac
echo "=== wall time per stage (seconds)"
for t in "${timings[@]}"; do echo "  $t"; done
echo "  all $SECONDS"
echo "total: $passed passed, $failed failed, $skipped skipped"
exit $status
