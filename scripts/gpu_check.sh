#!/usr/bin/env bash
# The CUDA backend on a GPU machine, in as few device calls as possible.
#
# The GPU machine has CUDA, 16 cores and no network, and may lack Lumen's -dev packages, so the
# binaries are built HERE (nvcc needs no GPU) and carried there:
#
#   1. here:   scripts/gpu_check.sh prepare
#        builds build/cuda (Release, sm_80 + sm_90), stages binaries, the few shared libraries a
#        CUDA image may lack, the Llama-3 vocabulary (for `lumen synth`) in .gpu/ (< 50 MiB), and
#        the default model in two halves, .gpu-model/ and .gpu-model2/ (a call carries at most
#        64 MiB, the repository's tracked files included); the folders go into .git/info/exclude.
#   2. device: run(command="mkdir -p /tmp/lumen-gpu && cp .gpu-model/* /tmp/lumen-gpu/",
#                  carry=[".gpu-model"])            # first half of the model; keep it warm:
#   3. device: run(command="cp .gpu-model2/* /tmp/lumen-gpu/", carry=[".gpu-model2"])  # within 30 s
#   4. device: run(command="scripts/gpu_check.sh all", carry=[".gpu"], timeout_s=600)
#
# Modes on the GPU machine:
#   tests  the gpu-labelled tests (every op, CUDA vs CPU), the conformance table's CUDA rows, then
#          greedy 64-token continuations of 5 prompts on the default model, CUDA vs CPU (when its
#          two halves are there);
#   bench  synthetic llama models made there (lumen synth; GPU_CHECK_MODELS, default
#          "llama-1b:Q4_0 llama-1b:BF16 llama-8b:Q4_0"), batch-1 prefill and decode timings;
#   sanitize  compute-sanitizer: memcheck over both test binaries, racecheck over the op tests
#          (a few minutes; run it when kernels change);
#   all    tests and bench (default).
# Results: one JSON object per line in $OUT/gpu_check.json (the device tool's $OUT) or
# /tmp/lumen-gpu/gpu_check.json, and on stdout. Without .gpu/bin the script builds from source
# instead (build/gpu), which needs the -dev packages of scripts/setup.sh.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
MODE="${1:-all}"
STAGE=.gpu
WORK="${LUMEN_GPU_WORK:-/tmp/lumen-gpu}"
MODEL_NAME=SmolLM2-135M-Instruct.Q4_1.gguf

log() { echo "gpu_check: $*" >&2; }

prepare() {
  local nvcc; nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
  [ -x "$nvcc" ] || { log "no nvcc here"; exit 1; }
  local launcher=()
  command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
  cmake -S . -B build/cuda -G Ninja -DCMAKE_BUILD_TYPE=Release -DLUMEN_CUDA=ON \
    -DCMAKE_CUDA_COMPILER="$nvcc" "${launcher[@]}" >/dev/null || exit 1
  cmake --build build/cuda -j"${LUMEN_JOBS:-2}" --target unit_backend_cuda unit_backend_conformance \
    cuda_model_tests lumen_cuda_decode_bench lumen || exit 1
  rm -rf "$STAGE" .gpu-model .gpu-model2
  mkdir -p "$STAGE/bin" "$STAGE/lib" .gpu-model .gpu-model2
  local bins=(build/cuda/tests/unit/backend_cuda/unit_backend_cuda build/cuda/tests/unit/backend_cuda/cuda_model_tests
              build/cuda/tests/unit/backend_conformance/unit_backend_conformance
              build/cuda/tests/unit/backend_cuda/lumen_cuda_decode_bench build/cuda/src/cli/lumen)
  for b in "${bins[@]}"; do cp "$b" "$STAGE/bin/" && strip "$STAGE/bin/$(basename "$b")"; done
  # Libraries a CUDA image may not have (glibc, libstdc++, OpenSSL and CUDA's own are left to it):
  # those of the -dev packages of scripts/setup.sh and what they pull in (ZeroMQ: sodium, pgm,
  # norm, Kerberos; cairo, for bench profile's plot: pixman, fontconfig, freetype, X11's). All
  # resolved libraries would be ~30 MiB, too much beside the binaries in one 64 MiB call.
  ldd "${bins[@]}" | awk '/=> \// {print $3}' | sort -u |
    grep -E 'libfmt|httplib|pcre2|brotli|xxhash|libzip|libzmq|libsodium|libpgm|libnorm|libbsd|libmd\.|libcairo|pixman|fontconfig|freetype|png16|xcb|libX|expat|bz2|gssapi|krb5|k5crypto|com_err|keyutils|libedit|utf8proc' |
    xargs -r -I{} cp -L {} "$STAGE/lib/"
  local vocab
  for vocab in ../shared/testdata/tokenizer/ggml-vocab-llama-bpe.gguf shared/testdata/tokenizer/ggml-vocab-llama-bpe.gguf; do
    [ -f "$vocab" ] && { cp "$vocab" "$STAGE/vocab.gguf"; break; }
  done
  [ -f "$STAGE/vocab.gguf" ] || log "warning: no Llama-3 vocabulary found; bench will need LUMEN_VOCAB"
  local model="${LUMEN_CACHE:-$HOME/.cache/lumen/models}/$MODEL_NAME"
  if [ -f "$model" ]; then
    split -n 2 -d "$model" .gpu-model/model.part-  # two halves
    mv .gpu-model/model.part-01 .gpu-model2/
    sha256sum "$model" | awk '{print $1}' > "$STAGE/model.sha256"
  else
    log "warning: no default model at $model; the greedy test will skip"
  fi
  local exclude; exclude="$(git rev-parse --git-dir)/info/exclude"
  mkdir -p "$(dirname "$exclude")"
  for dir in /.gpu/ /.gpu-model/ /.gpu-model2/; do
    grep -qxF "$dir" "$exclude" 2>/dev/null || echo "$dir" >> "$exclude"
  done
  du -sh "$STAGE" .gpu-model .gpu-model2
  log "staged; now run the device calls listed at the top of this script"
}

# ---- on the GPU machine ----

setup_runtime() {
  mkdir -p "$WORK"
  RESULTS="${OUT:-$WORK}/gpu_check.json"
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader >&2 || log "nvidia-smi failed"
  if [ -x "$STAGE/bin/unit_backend_cuda" ]; then
    BIN="$STAGE/bin"
    export LD_LIBRARY_PATH="$PWD/$STAGE/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    # CUDA's runtime and cuBLAS: the toolkit's, else the ones PyTorch bundles.
    local dir
    for dir in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
      [ -d "$dir" ] && LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$dir"
    done
    if ldd "$BIN/unit_backend_cuda" | grep -q "not found"; then
      local found; found=$(find / -xdev -name 'libcublas.so.13' -not -path '*/proc/*' 2>/dev/null | head -n1)
      [ -n "$found" ] && LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$(dirname "$found")"
      found=$(find / -xdev -name 'libcudart.so.13' -not -path '*/proc/*' 2>/dev/null | head -n1)
      [ -n "$found" ] && LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$(dirname "$found")"
    fi
    if ldd "$BIN/unit_backend_cuda" "$BIN/lumen" | grep "not found"; then
      log "carried binaries miss libraries (above); building from source instead"
      build_here
    fi
  else
    build_here
  fi
}

build_here() {
  cmake -S . -B build/gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DLUMEN_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES="${LUMEN_CUDA_ARCHS:-90}" >/dev/null || { log "configure failed"; exit 1; }
  cmake --build build/gpu -j"$(nproc)" --target unit_backend_cuda unit_backend_conformance cuda_model_tests \
    lumen_cuda_decode_bench lumen || { log "build failed"; exit 1; }
  BIN="$PWD/build/gpu/bin-links"
  mkdir -p "$BIN"
  ln -sf "$PWD"/build/gpu/tests/unit/backend_cuda/{unit_backend_cuda,cuda_model_tests,lumen_cuda_decode_bench} "$BIN/"
  ln -sf "$PWD/build/gpu/tests/unit/backend_conformance/unit_backend_conformance" "$PWD/build/gpu/src/cli/lumen" "$BIN/"
}

# Prints {"check": name, "passed": n, "failed": n, "skipped": n, "seconds": s} from a gtest log.
gtest_summary() {
  local name=$1 logfile=$2 seconds=$3 passed failed skipped
  passed=$(grep -oE '^\[  PASSED  \] [0-9]+' "$logfile" | grep -oE '[0-9]+$' || echo 0)
  failed=$(grep -oE '^\[  FAILED  \] [0-9]+ test' "$logfile" | grep -oE '[0-9]+' | head -n1 || echo 0)
  skipped=$(grep -oE '^\[  SKIPPED \] [0-9]+' "$logfile" | grep -oE '[0-9]+$' || echo 0)
  echo "{\"check\": \"$name\", \"passed\": ${passed:-0}, \"failed\": ${failed:-0}, \"skipped\": ${skipped:-0}, \"seconds\": $seconds}" |
    tee -a "$RESULTS"
}

run_tests() {
  local start=$SECONDS
  "$BIN/unit_backend_cuda" --gtest_brief=1 2>&1 | tee "$WORK/unit_backend_cuda.log" | grep -vE '^\[ *(OK|RUN) *\]'
  gtest_summary unit_backend_cuda "$WORK/unit_backend_cuda.log" $((SECONDS - start))
  [ -n "${OUT:-}" ] && cp "$WORK/unit_backend_cuda.log" "$OUT/" 2>/dev/null
  # The conformance table's CUDA rows (every op and type against the scalar references).
  start=$SECONDS
  "$BIN/unit_backend_conformance" --gtest_brief=1 --gtest_filter='*/cuda_*:*/cuda' 2>&1 |
    tee "$WORK/backend_conformance_cuda.log" | grep -vE '^\[ *(OK|RUN) *\]'
  gtest_summary backend_conformance_cuda "$WORK/backend_conformance_cuda.log" $((SECONDS - start))
  [ -n "${OUT:-}" ] && cp "$WORK/backend_conformance_cuda.log" "$OUT/" 2>/dev/null

  local model="$WORK/$MODEL_NAME"
  if [ ! -f "$model" ] && [ -f "$WORK/model.part-00" ] && [ -f "$WORK/model.part-01" ]; then
    cat "$WORK/model.part-00" "$WORK/model.part-01" > "$model"
    if [ "$(sha256sum "$model" | awk '{print $1}')" != "$(cat "$STAGE/model.sha256")" ]; then
      log "the reassembled model's checksum is wrong"
      rm -f "$model"
    fi
  fi
  if [ -f "$model" ]; then
    start=$SECONDS
    LUMEN_GPU_TEST_MODEL="$model" "$BIN/cuda_model_tests" 2>&1 | tee "$WORK/cuda_model_tests.log"
    gtest_summary greedy_cuda_vs_cpu "$WORK/cuda_model_tests.log" $((SECONDS - start))
    [ -n "${OUT:-}" ] && cp "$WORK/cuda_model_tests.log" "$OUT/" 2>/dev/null
  else
    log "no default model (carry .gpu-model and .gpu-model2 first, see the top of this script): greedy test skipped"
  fi
}

run_bench() {
  local vocab="${LUMEN_VOCAB:-$STAGE/vocab.gguf}"
  [ -f "$vocab" ] || { log "no vocabulary for lumen synth (set LUMEN_VOCAB)"; return 1; }
  local spec preset type file
  for spec in ${GPU_CHECK_MODELS:-llama-1b:Q4_0 llama-1b:BF16 llama-8b:Q4_0}; do
    preset=${spec%%:*}; type=${spec##*:}
    file="$WORK/$preset-$type.gguf"
    if [ ! -f "$file" ]; then
      local start=$SECONDS
      "$BIN/lumen" synth "$preset" -o "$file" --type "$type" --vocab "$vocab" >&2 || { log "synth $spec failed"; continue; }
      log "synth $spec: $((SECONDS - start)) s"
    fi
    # Default options, then every matmul on the GEMV kernels (prefill too).
    "$BIN/lumen_cuda_decode_bench" "$file" 128 512 0 | tee -a "$RESULTS"
    "$BIN/lumen_cuda_decode_bench" "$file" 32 512 1 | tee -a "$RESULTS"
  done
}

# compute-sanitizer's memcheck (out-of-bounds and misaligned accesses, leaks of device memory)
# and racecheck (shared-memory hazards) over the test binaries.
run_sanitize() {
  local cs; cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  [ -x "$cs" ] || { log "no compute-sanitizer on this machine"; return 1; }
  local tool binary log errors
  for tool in memcheck racecheck; do
    for binary in unit_backend_cuda cuda_model_tests; do
      [ "$tool" = racecheck ] && [ "$binary" = cuda_model_tests ] && continue  # hours, for little more
      log="$WORK/sanitize-$tool-$binary.log"
      LUMEN_GPU_TEST_MODEL="$WORK/$MODEL_NAME" "$cs" --tool "$tool" --print-limit 50 "$BIN/$binary" --gtest_brief=1 > "$log" 2>&1
      errors=$(grep -oE '(ERROR SUMMARY: [0-9]+|\(([0-9]+) errors)' "$log" | grep -oE '[0-9]+' | head -n1)
      echo "{\"check\": \"$tool $binary\", \"errors\": ${errors:-null}}" | tee -a "$RESULTS"
      [ -n "${OUT:-}" ] && cp "$log" "$OUT/" 2>/dev/null
    done
  done
}

case "$MODE" in
  prepare) prepare ;;
  tests) setup_runtime; run_tests ;;
  bench) setup_runtime; run_bench ;;
  sanitize) setup_runtime; run_sanitize ;;
  all) setup_runtime; run_tests; run_bench ;;
  *) echo "usage: $0 [prepare|tests|bench|sanitize|all]" >&2; exit 2 ;;
esac
