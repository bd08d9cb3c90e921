#!/usr/bin/env bash
# Real models on the simulated CUDA device (tests/unit/cuda_sim: every kernel and the backend's
# host code on a CPU) against the CPU backend: `lumen perplexity --kl-divergence` over English text
# (the repository's own docs), the CPU's log-probabilities as the base. For sessions without a GPU:
# a kernel or a CUDA switch meets whole models here before a GPU run. Minutes per model.
#
#   scripts/cuda_sim_models.sh [MODEL.gguf ...]
#
# Models: the default SmolLM2 and the catalog's Gemma 3 270M Q4_K_M (Q4_K, Q5_0, Q6_K and Q8_0
# matrices, sliding-window layers), those of them in the model cache, unless given. Each model's
# CHUNKS windows of CTX tokens (2 and 128) go through one forward pass, a prompt's path: matmuls
# past max_gemv_tokens, the prefill attention. LUMEN_CUDA_* variables switch the backend's options
# as on a GPU (e.g. LUMEN_CUDA_INT8_GEMM=1, or LUMEN_CUDA_MAX_GEMV_TOKENS=64 with CTX=64 for the
# GEMV at 64 tokens). Fails when a model's mean KL divergence from the CPU is over MAX_KLD (0.02)
# or its top tokens agree with the CPU's at fewer than MIN_SAME_TOP percent of positions (85).
# Measured 2026-11-30, defaults: SmolLM2 KLD 0.0044 (95.6% same top), Gemma 3 0.0067 (92.9%).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${LUMEN_SIM_BUILD:-build/release}
[[ -f "$build/build.ninja" ]] || { echo "no configured build at $build (cmake --preset release)" >&2; exit 2; }
ninja -C "$build" -j"${JOBS:-2}" lumen_sim >&2
sim="$build/tests/unit/cuda_sim/lumen_sim"
cache=${LUMEN_CACHE:-$HOME/.cache/lumen/models}
models=("$@")
if [[ ${#models[@]} == 0 ]]; then
  for m in SmolLM2-135M-Instruct.Q4_1.gguf gemma-3-270m-q4_k_m.gguf; do
    [[ -f "$cache/$m" ]] && models+=("$cache/$m")
  done
fi
[[ ${#models[@]} -gt 0 ]] || { echo "no model given or cached (scripts/fetch_models.py)" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat docs/engine.md docs/backends.md > "$work/text.txt"
ctx=${CTX:-128} chunks=${CHUNKS:-2} max_kld=${MAX_KLD:-0.02} min_same=${MIN_SAME_TOP:-85}
failed=0
for model in "${models[@]}"; do
  name=$(basename "$model")
  # The base on the CPU, no LUMEN_CUDA_* variable mattering there.
  "$sim" perplexity -m "$model" -f "$work/text.txt" -c "$ctx" --chunks "$chunks" \
    --kl-divergence-base "$work/base.bin" > "$work/cpu.log" 2>&1 || { cat "$work/cpu.log" >&2; exit 1; }
  start=$SECONDS
  # The simulated device holds the weights in host memory: room for a model of a few hundred MB.
  LUMEN_CUDA_SIM_MEMORY_MB=${LUMEN_CUDA_SIM_MEMORY_MB:-4096} "$sim" perplexity -m "$model" -c "$ctx" \
    --chunks "$chunks" --device cuda --kl-divergence-base "$work/base.bin" --kl-divergence > "$work/sim.log" 2>&1 ||
    { cat "$work/sim.log" >&2; exit 1; }
  kld=$(sed -nE 's/^Mean +KLD: +([0-9.]+).*/\1/p' "$work/sim.log")
  same=$(sed -nE 's/^Same top p: +([0-9.]+).*/\1/p' "$work/sim.log")
  ppl=$(sed -nE 's/^Mean PPL\(Q\) +: +([0-9.]+).*/\1/p' "$work/sim.log")
  base=$(sed -nE 's/^Mean PPL\(base\) +: +([0-9.]+).*/\1/p' "$work/sim.log")
  verdict=ok
  if [[ -z "$kld" || -z "$same" ]] || awk -v k="$kld" -v s="$same" -v mk="$max_kld" -v ms="$min_same" \
    'BEGIN { exit !(k > mk || s < ms) }'; then
    verdict=FAILED
    failed=1
  fi
  echo "$name: simulated CUDA PPL ${ppl:-?} vs CPU ${base:-?}, mean KLD ${kld:-?}, same top ${same:-?}%," \
    "$((SECONDS - start)) s: $verdict"
done
exit $failed
