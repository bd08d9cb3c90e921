#!/usr/bin/env bash
# The CUDA backend's GPU tests on a CPU, over the simulated device of tests/unit/cuda_sim: every
# kernel and the backend's host code run as written, on host memory, with graphs recorded and
# replayed. For sessions without a GPU: a kernel or backend change meets its tests here before a
# GPU run. Slow (threads are fibers), so pass a gtest filter for the tests that matter.
#
#   scripts/cuda_sim_check.sh [GTEST_FILTER] [BUILD_DIR]
#       tests/unit/backend_cuda's op tests (unit_backend_cuda_sim). Their shapes are a GPU's:
#       minutes each. The default filter is a set that finishes in a few minutes on 2 cores.
#   scripts/cuda_sim_check.sh --engine [GTEST_FILTER] [BUILD_DIR]
#       the engine's tests on CUDA (tests/model/engine_*_test.cc as cuda_engine_tests runs them
#       on a GPU: batched vs alone, preemption, the prefix cache, beams, faults) on a 4-layer
#       `lumen synth llama3-mini` Q4_0 model with the default model's vocabulary: 4-5 minutes a
#       test. LUMEN_CUDA_* variables switch the backend's options as on a GPU, e.g.
#       LUMEN_CUDA_GRAPHS=0 or LUMEN_CUDA_TENSOR_CORE_PREFILL=1. Six tests ask for what this
#       model cannot do, and fail here by design: three EngineOutputText ones (GreedyReply*,
#       SkipSpecialTokensOff*, BeamSearchHypotheses*) wait for it to end its reply, two
#       ContextShiftTest ones (StreamingLlm*, ShiftGoesOnPast*) for it to count (its weights are
#       random), and EngineFairnessTest.AShortPromptBehindALongPrefill* needs a context of 3000
#       tokens (llama3-mini's is 2048).
#   scripts/cuda_sim_check.sh --conformance [GTEST_FILTER] [BUILD_DIR]
#       the backend conformance table's CUDA rows (unit_backend_conformance_sim: the suite of
#       tests/unit/backend_conformance with its CUDA entry on the simulated device). The default
#       filter is every CUDA row (a few minutes on 2 cores); LUMEN_CUDA_* variables declare what
#       a GPU run would switch on (e.g. LUMEN_CUDA_QUANTIZED_KV=1).
#   scripts/cuda_sim_check.sh --cli LUMEN_ARGS...
#       `lumen` itself with its CUDA device simulated (lumen_sim, built in build/release or
#       $LUMEN_SIM_BUILD): e.g. `--cli bench throughput --device cuda -m tiny.gguf --num-prompts 64
#       --input-len 16 --output-len 4 --kv-cache-memory 64M`, or `--cli perplexity --device cuda
#       --kl-divergence ...` against a CPU run's base file. LUMEN_SIM_LEDGER=1 prints, at exit,
#       what the host queued and the device ran (launches, copies and their bytes, waits,
#       allocations, recordings). Its times are the simulation's, not a GPU's.
#
# e.g. scripts/cuda_sim_check.sh 'CudaRowArgmax.*:CudaKvCodec.*', or
# scripts/cuda_sim_check.sh --engine 'EngineServing.SwapPreemption*'. BUILD_DIR: a configured
# build tree without CUDA (build/release unless given; the simulated backend takes the real one's
# place, so it cannot link where lumen_engine links that). unit_cuda_sim (the kernels' own tests)
# and sim_step_graphs_tests run in every ctest; this script is for the rest.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ "${1:-}" == --cli ]]; then
  shift
  build=${LUMEN_SIM_BUILD:-build/release}
  [[ -f "$build/build.ninja" ]] || { echo "no configured build at $build (cmake --preset release)" >&2; exit 2; }
  ninja -C "$build" -j"${JOBS:-2}" lumen_sim >&2
  exec "$build/tests/unit/cuda_sim/lumen_sim" "$@"
fi
if [[ "${1:-}" == --conformance ]]; then
  filter=${2:-'*/cuda_*:*/cuda'}
  build=${3:-build/release}
  [[ -f "$build/build.ninja" ]] || { echo "no configured build at $build (cmake --preset release)" >&2; exit 2; }
  ninja -C "$build" -j"${JOBS:-2}" unit_backend_conformance_sim >&2
  exec "$build/tests/unit/cuda_sim/unit_backend_conformance_sim" --gtest_filter="$filter"
fi
engine=0
if [[ "${1:-}" == --engine ]]; then
  engine=1
  shift
fi
build=${2:-build/release}
if [[ ! -f "$build/build.ninja" ]]; then
  echo "no configured build at $build (cmake --preset release, or pass a build directory)" >&2
  exit 2
fi
if [[ $engine == 0 ]]; then
  filter=${1:-'CudaCapabilities.DeclaresWhatItsKernelsRun:CudaCapabilities.ComposedShiftKeys*:CudaKvCodec.*:CudaEnvironmentOptions.*:CudaFusedInputQuantization.NormsAndSwigluGiveThePlainKernelsBits:CudaRowArgmax.*:CudaRowLeading.*:CudaStepTimer.*'}
  ninja -C "$build" -j"${JOBS:-2}" unit_backend_cuda_sim
  exec "$build/tests/unit/cuda_sim/unit_backend_cuda_sim" --gtest_filter="$filter"
fi
filter=${1:-'EngineServing.SwapPreemption*'}
ninja -C "$build" -j"${JOBS:-2}" sim_engine_tests lumen
models=${LUMEN_CACHE:-$HOME/.cache/lumen/models}
vocab="$models/SmolLM2-135M-Instruct.Q4_1.gguf"
[[ -f "$vocab" ]] || { echo "no default model at $vocab (scripts/fetch_models.py): its vocabulary is the test model's" >&2; exit 2; }
model=$(mktemp --suffix=.gguf)
trap 'rm -f "$model"' EXIT
"$build/src/cli/lumen" synth llama3-mini --type Q4_0 --vocab "$vocab" -o "$model" > /dev/null
LUMEN_ENGINE_TEST_MODEL="$model" "$build/tests/model/sim_engine_tests" --gtest_filter="$filter"
