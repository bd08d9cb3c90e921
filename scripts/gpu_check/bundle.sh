# shellcheck shell=bash
# Sourced by scripts/gpu_check.sh: what runs HERE, before any device call. `prepare` builds
# build/cuda and packs the self-contained archive (the binaries, a wrapper each, every shared
# library they resolve but the system's and CUDA's, the test vocabularies), the model halves and
# the peer's archive; `verify` unpacks it into a scratch folder (or a bare Debian root) and
# checks that every binary starts from the bundle alone.
# Uses gpu_check.sh's STAGE, ARCHIVE, CARRIED, SYSTEM_LIBS, MACHINE_CUDA_LIBS, MAX_ARCHIVE_BYTES,
# MODEL_NAME and log.

prepare() {
  local nvcc; nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
  [ -x "$nvcc" ] || { log "no nvcc here"; exit 1; }
  local launcher=()
  command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
  cmake -S . -B build/cuda -G Ninja -DCMAKE_BUILD_TYPE=Release -DLUMEN_CUDA=ON \
    -DCMAKE_CUDA_COMPILER="$nvcc" "${launcher[@]}" >/dev/null || exit 1
  cmake --build build/cuda -j"${LUMEN_JOBS:-2}" --target unit_backend_cuda unit_backend_conformance \
    cuda_model_tests lumen_cuda_decode_bench lumen_cuda_gemv_bench cuda_engine_tests lumen || exit 1
  rm -rf "$STAGE" .gpu-model .gpu-model2 .gpu-peer
  mkdir -p "$STAGE" .gpu-model .gpu-model2
  local model="${LUMEN_CACHE:-$HOME/.cache/lumen/models}/$MODEL_NAME"
  pack_bundle "$ARCHIVE" "$model" "${CARRIED[@]/#/build/cuda/}" || exit 1
  # The peer, llama.cpp's llama-bench built with CUDA by hand outside the repository, in an
  # archive of its own (about 40 MiB: the bundle and it do not fit one call), carried by a call
  # of its own that copies it to the work folder, where setup_runtime unpacks it into the bundle.
  # LLAMA_SERVER_CUDA adds llama-server (mode serve); built with BUILD_SHARED_LIBS=ON, the two
  # share one libggml-cuda in the archive.
  if [ -n "${LLAMA_BENCH_CUDA:-}" ]; then
    [ -x "$LLAMA_BENCH_CUDA" ] || { log "LLAMA_BENCH_CUDA=$LLAMA_BENCH_CUDA is not an executable"; exit 1; }
    local peers=("$LLAMA_BENCH_CUDA")
    if [ -n "${LLAMA_SERVER_CUDA:-}" ]; then
      [ -x "$LLAMA_SERVER_CUDA" ] || { log "LLAMA_SERVER_CUDA=$LLAMA_SERVER_CUDA is not an executable"; exit 1; }
      peers+=("$LLAMA_SERVER_CUDA")
    fi
    mkdir -p .gpu-peer
    PACK_VOCAB=0 pack_bundle .gpu-peer/$PEER_ARCHIVE_NAME /dev/null "${peers[@]}" || exit 1
  fi
  if [ -f "$model" ]; then
    split -n 2 -d "$model" .gpu-model/model.part-  # two halves
    mv .gpu-model/model.part-01 .gpu-model2/
  else
    log "warning: no default model at $model; the greedy test will skip"
  fi
  du -sh "$STAGE" .gpu-model .gpu-model2
  log "staged; check it with 'scripts/gpu_check.sh verify', then run the device calls listed at the top of this script"
}

# bin/NAME: runs libexec/NAME with the bundle's libraries first, for that process (and its
# children) only.
write_wrapper() {
  local path=$1 name=$2
  cat > "$path" <<WRAPPER
#!/bin/sh
# Written by scripts/gpu_check.sh: libexec/$name with the bundle's libraries, for it alone.
here=\$(cd "\$(dirname "\$0")/.." && pwd -P)
LD_LIBRARY_PATH="\$here/lib:\$here/cuda-lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}" exec "\$here/libexec/$name" "\$@"
WRAPPER
  chmod +x "$path"
}

# pack_bundle ARCHIVE MODEL BINARY...: the binaries, a wrapper each, the libraries they resolve
# (but the system's) and the vocabulary, xz-compressed into ARCHIVE.
pack_bundle() {
  local archive=$1 model=$2 root name soname path missing
  shift 2
  local binaries=("$@")
  root=$(mktemp -d) || return 1
  mkdir -p "$root/bin" "$root/libexec" "$root/lib" "$root/cuda-lib"
  for path in "${binaries[@]}"; do
    name=$(basename "$path")
    cp "$path" "$root/libexec/" && strip "$root/libexec/$name" || return 1
    write_wrapper "$root/bin/$name" "$name"
  done
  # The driver (libcuda, which llama-bench links directly) exists only on a GPU machine.
  missing=$(ldd "${binaries[@]}" | awk '/=> not found/ {print $1}' | sort -u | grep -vE "$SYSTEM_LIBS")
  [ -z "$missing" ] || { log "unresolved here: $missing"; return 1; }
  while read -r soname path; do
    [[ $soname =~ $SYSTEM_LIBS ]] && continue
    cp -L "$path" "$root/lib/$soname" || return 1
    # A peer's own libraries (libggml-cuda) come with their symbols; Debian's are stripped.
    strip --strip-unneeded "$root/lib/$soname" 2> /dev/null || true
  done < <(ldd "${binaries[@]}" | awk '/=> \// {print $1, $3}' | sort -u)
  if [ "${PACK_VOCAB:-1}" = 1 ]; then
    local vocab
    for vocab in ../shared/testdata/tokenizer/ggml-vocab-llama-bpe.gguf shared/testdata/tokenizer/ggml-vocab-llama-bpe.gguf; do
      [ -f "$vocab" ] && { cp "$vocab" "$root/vocab.gguf"; break; }
    done
    [ -f "$root/vocab.gguf" ] || log "warning: no Llama-3 vocabulary found; bench will need LUMEN_VOCAB"
    # The synthetic model of the engine's speculation and structured-output tests takes the
    # shared test data's Llama vocabulary (700 KB): cuda_engine_tests finds it through
    # LUMEN_TESTDATA_DIR (run_engine).
    for vocab in ../shared/testdata/tokenizer/ggml-vocab-llama-spm.gguf shared/testdata/tokenizer/ggml-vocab-llama-spm.gguf; do
      [ -f "$vocab" ] && { mkdir -p "$root/testdata/tokenizer" && cp "$vocab" "$root/testdata/tokenizer/"; break; }
    done
    [ -d "$root/testdata" ] || log "warning: no shared test data found; the synthetic engine tests on CUDA will skip"
    # The vision tests' tiny projector files (a few hundred KB, numpy and gguf-py only):
    # CudaVisionTower encodes them with the tower on the GPU.
    local python=python3
    [ -x "$HOME/.cache/lumen/venv/bin/python3" ] && python="$HOME/.cache/lumen/venv/bin/python3"
    mkdir -p "$root/vision"
    "$python" scripts/vlm_tiny_mmproj.py "$root/vision" > /dev/null ||
      log "warning: no tiny projector files (scripts/vlm_tiny_mmproj.py failed): CudaVisionTower will skip"
  fi
  [ -f "$model" ] && sha256sum "$model" | awk '{print $1}' > "$root/model.sha256"
  # -9: a 64 MiB dictionary spans the binaries, which share most of their statically linked code:
  # 22 MiB where -6 (8 MiB, and 24 MiB blocks when threaded) made 52 (2026-12-01), a minute to
  # pack on 2 cores, 65 MiB of memory to unpack.
  tar -C "$root" -cf - . | xz -T"${LUMEN_JOBS:-2}" -9 > "$archive" || return 1
  local bytes; bytes=$(stat -c %s "$archive")
  log "$archive: $(ls "$root/lib" | wc -l) libraries, $((bytes / 1024 / 1024)) MiB ($(du -sm "$root" | cut -f1) MiB unpacked)"
  rm -rf "$root"
  [ "$bytes" -le "$MAX_ARCHIVE_BYTES" ] || { log "the archive is over $((MAX_ARCHIVE_BYTES / 1024 / 1024)) MiB"; return 1; }
}

# Unpacks archive $1 into a fresh folder $2.
unpack_bundle() {
  rm -rf "$2" && mkdir -p "$2" || return 1
  extract_archive "$1" "$2"
}

# Extracts archive $1 into the existing folder $2 (xz, else Python's lzma: a CUDA image has one
# of them).
extract_archive() {
  local archive=$1 dest=$2
  if command -v xz >/dev/null; then
    xz -dc "$archive" | tar -C "$dest" -xf -
  else
    python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), sys.stdout.buffer)' "$archive" |
      tar -C "$dest" -xf -
  fi
}

# The library path the wrappers give the binaries of bundle $1.
bundle_library_path() { echo "$1/lib:$1/cuda-lib"; }

# Checks every library binary $2 of bundle $1 resolves: from the bundle, or a system library.
# Prints one line per library that is neither; returns non-zero if any.
check_resolution() {
  local bundle=$1 binary=$2 bad=0 soname path
  while read -r soname path; do
    if [[ $soname =~ $SYSTEM_LIBS ]]; then continue; fi
    case "$path" in
      "$bundle"/lib/*|"$bundle"/cuda-lib/*) ;;
      *) echo "$(basename "$binary"): $soname => $path (not from the bundle)"; bad=1 ;;
    esac
  done < <(env -i LD_LIBRARY_PATH="$(bundle_library_path "$bundle")" ldd "$binary" |
           awk '/=>/ {print $1, $3}')
  return $bad
}

# ---- here: check a packed bundle ----

verify() {
  local root_src=${1:-} scratch bundle failed=0 binary status
  [ -f "$ARCHIVE" ] || { log "no $ARCHIVE: run 'scripts/gpu_check.sh prepare' first"; exit 1; }
  scratch=$(mktemp -d /tmp/lumen-bundle-check.XXXXXX) || exit 1
  VERIFY_SCRATCH=$scratch
  trap 'umount "$VERIFY_SCRATCH/root/proc" 2>/dev/null; rm -rf "$VERIFY_SCRATCH"' EXIT
  bundle="$scratch/bundle"
  unpack_bundle "$ARCHIVE" "$bundle" || { log "cannot unpack $ARCHIVE"; exit 1; }
  report() {  # name, status
    echo "{\"check\": \"$1\", \"ok\": $([ "$2" -eq 0 ] && echo true || echo false)}"
    [ "$2" -eq 0 ] || failed=1
  }
  env -i PATH=/usr/bin:/bin "$bundle/bin/lumen" --help > /dev/null
  report "env -i lumen --help" $?
  env -i PATH=/usr/bin:/bin "$bundle/bin/lumen" inspect "$bundle/vocab.gguf" > /dev/null
  report "env -i lumen inspect vocab.gguf" $?
  for binary in "$bundle"/libexec/*; do
    check_resolution "$bundle" "$binary"
    status=$?  # before the name's command substitution resets $?
    report "ldd $(basename "$binary"): every library from the bundle or the system" $status
  done
  log "lumen resolves $(env -i LD_LIBRARY_PATH="$(bundle_library_path "$bundle")" ldd "$bundle/libexec/lumen" |
    grep -c "=> $bundle/") libraries from the bundle and these from the system:" \
    "$(env -i LD_LIBRARY_PATH="$(bundle_library_path "$bundle")" ldd "$bundle/libexec/lumen" |
      awk -v b="$bundle/" '/=> \// && index($3, b) != 1 {printf "%s ", $1}')"
  [ -n "$root_src" ] && verify_in_root "$root_src" "$scratch"
  [ "$failed" -eq 0 ] && log "bundle ok" || log "bundle check FAILED"
  return $failed
}

# Runs the bundle inside a copy of Debian root $1 from which every library the binaries need
# but the system's has been removed (whether the bundle carries it or not), with cuBLAS put in
# cuda-lib as setup_runtime links it on the GPU machine.
verify_in_root() {
  local src=$1 scratch=$2 root="$2/root" soname removed=0 f lib status
  [ "$(id -u)" -eq 0 ] || { log "not root: the chroot check is skipped"; return 0; }
  cp -a "$src" "$root" || { report "copy $src" 1; return; }
  local needed; needed=$(ldd "$scratch"/bundle/libexec/* | awk '/=>/ {print $1}' | sort -u)
  for soname in $needed; do
    [[ $soname =~ $SYSTEM_LIBS ]] && continue
    for f in "$root"/{usr/,}lib/x86_64-linux-gnu/"$soname"{,.*}; do
      [ -e "$f" ] || [ -L "$f" ] || continue
      rm -f "$f" && removed=$((removed + 1))
    done
  done
  log "removed $removed files of the libraries the binaries need from the copy of $src"
  mkdir -p "$root/opt" && cp -a "$scratch/bundle" "$root/opt/lumen-gpu"
  for lib in "${MACHINE_CUDA_LIBS[@]}"; do
    f=$(find_cuda_lib "$lib") || continue
    cp -lL "$f" "$root/opt/lumen-gpu/cuda-lib/$lib" 2>/dev/null || cp -L "$f" "$root/opt/lumen-gpu/cuda-lib/$lib"
  done
  mount -t proc proc "$root/proc" 2>/dev/null
  local run=(chroot "$root" /usr/bin/env -i PATH=/usr/bin:/bin)
  "${run[@]}" /opt/lumen-gpu/bin/lumen --help > /dev/null
  report "chroot: lumen --help" $?
  "${run[@]}" /opt/lumen-gpu/bin/lumen inspect /opt/lumen-gpu/vocab.gguf > /dev/null
  report "chroot: lumen inspect vocab.gguf" $?
  # Without a driver every CUDA test skips: libcudart loads, libcuda is not needed to start.
  "${run[@]}" /opt/lumen-gpu/bin/unit_backend_cuda --gtest_brief=1 > "$scratch/chroot-cuda.log" 2>&1
  status=$?
  [ $status -eq 77 ] && status=0  # the skip code: every case skipped (ctest's SKIP_RETURN_CODE)
  [ $status -eq 0 ] || grep -vE '^(\[ *(OK|RUN|SKIPPED) *\]|no CUDA device|.*: Skipped)' "$scratch/chroot-cuda.log" | tail -n 20 >&2
  report "chroot: unit_backend_cuda starts and skips without a driver" $status
  "${run[@]}" /opt/lumen-gpu/bin/unit_backend_conformance --gtest_brief=1 --gtest_filter='ConformanceTable.*' \
    > /dev/null 2>&1
  report "chroot: unit_backend_conformance ConformanceTable.*" $?
  umount "$root/proc" 2>/dev/null
}
