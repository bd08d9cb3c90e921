#!/usr/bin/env bash
# The CUDA backend's GPU tests (tests/unit/backend_cuda) on a CPU, over the simulated device of
# tests/unit/cuda_sim: every kernel and the backend's host code run as written, on host memory,
# with graphs recorded and replayed. For sessions without a GPU: a kernel or backend change meets
# its op tests here before a GPU run. Slow (threads are fibers; the tests' shapes are a GPU's),
# so pass a gtest filter for the tests that matter to the change.
#
#   scripts/cuda_sim_check.sh [GTEST_FILTER] [BUILD_DIR]
#
# e.g. scripts/cuda_sim_check.sh 'CudaRowArgmax.*:CudaKvCodec.*'. The default filter is a set that
# finishes in a few minutes on 2 cores. BUILD_DIR: a configured build tree (build/release unless
# given; the CUDA toolkit is not needed). unit_cuda_sim (the kernels' own tests on the simulated
# device) runs in every ctest; this script is for the backend above them.
set -euo pipefail
cd "$(dirname "$0")/.."
filter=${1:-'CudaCapabilities.DeclaresWhatItsKernelsRun:CudaCapabilities.ComposedShiftKeys*:CudaKvCodec.*:CudaEnvironmentOptions.*:CudaFusedInputQuantization.NormsAndSwigluGiveThePlainKernelsBits:CudaRowArgmax.*:CudaRowLeading.*:CudaStepTimer.*'}
build=${2:-build/release}
if [[ ! -f "$build/build.ninja" ]]; then
  echo "no configured build at $build (cmake --preset release, or pass a build directory)" >&2
  exit 2
fi
ninja -C "$build" -j"${JOBS:-2}" unit_backend_cuda_sim
"$build/tests/unit/cuda_sim/unit_backend_cuda_sim" --gtest_filter="$filter"
