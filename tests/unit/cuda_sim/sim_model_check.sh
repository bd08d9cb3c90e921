#!/usr/bin/env bash
# Whole synthetic models on the simulated CUDA device, op by op against the CPU: each preset is
# written by `lumen synth` (the default model's vocabulary) and run through sim_cuda_model_tests'
# CudaGreedy.EachOpMatchesCpu (the mirror backend: every op of a prefill and 8 greedy steps on
# both backends, each kind of op held to its bound). For architectures written without a GPU,
# whose LUMEN_CUDA_* switches are set here as a GPU run checking them would set them.
#
#   sim_model_check.sh LUMEN SIM_CUDA_MODEL_TESTS SKIP_CODE PRESET:TYPE...
set -euo pipefail
lumen=$1 tests=$2 skip=$3
shift 3
vocab=${LUMEN_CACHE:-$HOME/.cache/lumen/models}/SmolLM2-135M-Instruct.Q4_1.gguf
[[ -f "$vocab" ]] || { echo "SKIPPED: no default model at $vocab (its vocabulary is the test models')"; exit "$skip"; }
model=$(mktemp --suffix=.gguf)
trap 'rm -f "$model"' EXIT
for spec in "$@"; do
  "$lumen" synth "${spec%%:*}" --type "${spec##*:}" --layers 2 --seed 7 --vocab "$vocab" -o "$model" > /dev/null
  echo "== $spec"
  LUMEN_CUDA_ATTENTION_SINKS=1 LUMEN_CUDA_BIASED_EXPERTS=1 LUMEN_GPU_TEST_MODEL="$model" LUMEN_CUDA_SIM_MEMORY_MB=1024 \
    "$tests" --gtest_brief=1 --gtest_filter=CudaGreedy.EachOpMatchesCpu
done
