# shellcheck shell=bash
# Sourced by scripts/gpu_check.sh: the GPU machine's side before any mode runs. setup_runtime
# unpacks the bundle (or builds from source, build_here), finds CUDA's libraries on the machine
# and sets BIN, BUNDLE and RESULTS; the helpers every mode shares (synth_model, gtest_summary,
# default_model).

# The path of CUDA library $1 on this machine: the toolkit's, else anywhere (PyTorch's wheels).
find_cuda_lib() {
  local dir found
  for dir in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib /usr/local/cuda/lib; do
    [ -e "$dir/$1" ] && { echo "$dir/$1"; return 0; }
  done
  found=$(find / -xdev -name "$1" -not -path '/proc/*' 2>/dev/null | head -n1)
  [ -n "$found" ] && echo "$found"
}

setup_runtime() {
  mkdir -p "$WORK"
  RESULTS="${OUT:-$WORK}/gpu_check.json"
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader >&2 || log "nvidia-smi failed"
  BUNDLE="$WORK/bundle"
  if [ -f "$ARCHIVE" ] && unpack_bundle "$ARCHIVE" "$BUNDLE"; then
    # The peer's archive, from its own call (prepare's .gpu-peer), into the same folders.
    [ -f "$WORK/$PEER_ARCHIVE_NAME" ] && extract_archive "$WORK/$PEER_ARCHIVE_NAME" "$BUNDLE"
    BIN="$BUNDLE/bin"  # the wrappers
    LIBEXEC="$BUNDLE/libexec"
    # cuBLAS where the loader would not find it by itself (PyTorch's wheels, a toolkit outside
    # the loader's cache): linked into the bundle's cuda-lib, which only the wrappers search.
    local lib found
    for lib in "${MACHINE_CUDA_LIBS[@]}"; do
      ldconfig -p 2>/dev/null | grep -qF " $lib " && continue
      found=$(find_cuda_lib "$lib") && ln -sf "$found" "$BUNDLE/cuda-lib/$lib"
    done
    local binary unresolved=0
    for binary in "$BUNDLE"/libexec/*; do
      if [ "$(basename "$binary")" = llama-bench ]; then  # the peer's gap costs the peer alone
        env LD_LIBRARY_PATH="$(bundle_library_path "$BUNDLE")" ldd "$binary" | grep "not found" &&
          log "llama-bench misses libraries (above): the peer will not run"
        continue
      fi
      env LD_LIBRARY_PATH="$(bundle_library_path "$BUNDLE")" ldd "$binary" | grep "not found" && unresolved=1
      check_resolution "$BUNDLE" "$binary" >&2  # informational: the machine's copies are used
    done
    if [ "$unresolved" -ne 0 ]; then
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
    lumen_cuda_decode_bench lumen_cuda_gemv_bench cuda_engine_tests lumen || { log "build failed"; exit 1; }
  BIN="$PWD/build/gpu/bin-links"
  BUNDLE="$PWD/build/gpu"
  LIBEXEC="$BIN"
  mkdir -p "$BIN"
  ln -sf "$PWD"/build/gpu/tests/unit/backend_cuda/{unit_backend_cuda,cuda_model_tests,lumen_cuda_decode_bench,lumen_cuda_gemv_bench} "$BIN/"
  ln -sf "$PWD/build/gpu/tests/unit/backend_conformance/unit_backend_conformance" "$PWD/build/gpu/src/cli/lumen" \
    "$PWD/build/gpu/tests/model/cuda_engine_tests" "$BIN/"
}

# Prints {"check": name, "passed": n, "failed": n, "skipped": n, "seconds": s} from a gtest log.
# The synthetic model SPEC (preset:type, every layer; lumen synth with the bundle's vocabulary) in
# the work folder: made once, shared by the modes that time it. Prints its path; fails (and says so)
# when synth does.
synth_model() {
  local spec=$1 preset=${1%%:*} type=${1##*:}
  local file="$WORK/$preset-$type.gguf" start=$SECONDS
  if [ ! -f "$file" ]; then
    "$BIN/lumen" synth "$preset" -o "$file" --type "$type" --vocab "${LUMEN_VOCAB:-$BUNDLE/vocab.gguf}" >&2 ||
      { log "synth $spec failed"; return 1; }
    log "synth $spec: $((SECONDS - start)) s"
  fi
  echo "$file"
}

gtest_summary() {
  local name=$1 logfile=$2 seconds=$3 passed failed skipped
  passed=$(grep -oE '^\[  PASSED  \] [0-9]+' "$logfile" | grep -oE '[0-9]+$' || echo 0)
  # One line per failed case, "[  FAILED  ] Suite.Case (12 ms)" or, for a parameterized case,
  # "[  FAILED  ] Suite.Case/param, where GetParam() = ... (12 ms)": --gtest_brief prints no
  # "N tests" total. (Until 2026-11-28 the second form was not counted: 16 failing CUDA
  # conformance rows read as "failed 0".)
  failed=$(grep -cE '^\[  FAILED  \] [^ ]+(, where GetParam\(\) = .*)? \([0-9]+ ms\)$' "$logfile")
  skipped=$(grep -oE '^\[  SKIPPED \] [0-9]+' "$logfile" | grep -oE '[0-9]+$' || echo 0)
  echo "{\"check\": \"$name\", \"passed\": ${passed:-0}, \"failed\": ${failed:-0}, \"skipped\": ${skipped:-0}, \"seconds\": $seconds}" |
    tee -a "$RESULTS"
}

# The default model, from the two halves carried by the calls at the top of this script; prints its
# path (a missing file when the halves are not there).
default_model() {
  local model="$WORK/$MODEL_NAME"
  if [ ! -f "$model" ] && [ -f "$WORK/model.part-00" ] && [ -f "$WORK/model.part-01" ]; then
    cat "$WORK/model.part-00" "$WORK/model.part-01" > "$model"
    if [ -f "$BUNDLE/model.sha256" ] && [ "$(sha256sum "$model" | awk '{print $1}')" != "$(cat "$BUNDLE/model.sha256")" ]; then
      log "the reassembled model's checksum is wrong"
      rm -f "$model"
    fi
  fi
  echo "$model"
}
