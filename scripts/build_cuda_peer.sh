#!/usr/bin/env bash
# The GPU runs' peer: llama.cpp's llama-bench and llama-server built with CUDA here (nvcc needs no
# GPU), outside the repository, as BENCHMARKS.md's CUDA sections used them (sm_90, no native ISA,
# shared ggml libraries so the two share one libggml-cuda in the carried archive). Then
#   LLAMA_BENCH_CUDA=OUT/build-cuda/bin/llama-bench LLAMA_SERVER_CUDA=OUT/build-cuda/bin/llama-server \
#     scripts/gpu_check.sh prepare
# packs them into .gpu-peer/ (gpu_check.sh, modes peer and serve).
#
#   scripts/build_cuda_peer.sh GIT_DIR [OUT]
# GIT_DIR: a llama.cpp mirror's git directory (the fetch tool's github:ngxson/llama.cpp gives
# /work/.mirror/ngxson+llama.cpp/repo); its HEAD is unpacked to OUT/src (default
# /work/peers/llama.cpp) and built in OUT/build-cuda. On 2 cores this takes an hour or more (the
# CUDA kernels' template instances): start it first thing in a session that will prepare a GPU
# run; an interrupted build resumes where it stopped when run again.
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 GIT_DIR [OUT]" >&2; exit 2; }
git_dir=$1
out=${2:-/work/peers/llama.cpp}
nvcc=${CUDACXX:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
[ -x "$nvcc" ] || { echo "no nvcc (set CUDACXX)" >&2; exit 1; }
commit=$(git --git-dir="$git_dir" rev-parse HEAD)
# Only what the two tools build from: a mirror may lack its largest files (models/*.gguf), which
# git archive of the whole tree stops at. (scripts/: the server's UI step runs ui-assets.cmake.)
paths="CMakeLists.txt cmake common ggml include src tools vendor licenses LICENSE scripts"
if [ "$(cat "$out/src/.commit" 2>/dev/null)" != "$commit $paths" ]; then
  rm -rf "$out/src"
  mkdir -p "$out/src"
  # shellcheck disable=SC2086  # one argument per path
  git --git-dir="$git_dir" archive HEAD -- $paths | tar -x -C "$out/src"  # keeps the commit's mtimes: no rebuild
  echo "$commit $paths" > "$out/src/.commit"
fi
# No network here, so the server's web UI (which it would download prebuilt) and HTTPS are left
# out: the server builds without an embedded UI, and the benchmarks call only its API.
# libggml-cuda needs the driver's libcuda.so.1, which only the GPU machine has. The tools are
# therefore linked with --allow-shlib-undefined, and the driver there supplies those symbols.
cmake -S "$out/src" -B "$out/build-cuda" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_COMPILER="$nvcc" \
  -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DGGML_NATIVE=OFF -DBUILD_SHARED_LIBS=ON -DLLAMA_BUILD_TESTS=OFF \
  -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
  -DLLAMA_OPENSSL=OFF -DCMAKE_EXE_LINKER_FLAGS=-Wl,--allow-shlib-undefined > "$out/configure.log"
cmake --build "$out/build-cuda" -j"${LUMEN_JOBS:-2}" --target llama-bench llama-server
echo "built llama.cpp $commit: $out/build-cuda/bin/llama-bench, $out/build-cuda/bin/llama-server"
