# shellcheck shell=bash
# Sourced by scripts/gpu_check.sh: its `split` mode, a model split between the CPU and the GPU
# (--n-gpu-layers; docs/backends.md, "Models bigger than the GPU"). On the CPU the split is held
# bit for bit to one backend (unit_split, two CPU backends); here the GPU is one side:
#   1. cuda_model_tests' CudaSplit test on the default model and on synthetic Gemma 3 (sliding
#      window) and qwen3moe files: --n-gpu-layers 1, 2, half, all layers, all + the output
#      layer, teacher-forced against the whole model on the CPU and on CUDA (the bounds
#      CUDA vs CPU is held to);
#   2. `lumen run --device cuda -ngl N` on the default model for N = 0, 1, 16, 31, auto: it
#      runs, and greedy text is printed for a look; -ngl 99 is refused naming the 0..31 range;
#   3. the engine over a split model: `lumen bench throughput` at -ngl 16 against all on the
#      GPU and all on the CPU in the same call (output tok/s, one JSON line each).
# Uses gpu_check.sh's BIN, WORK, RESULTS, BUNDLE, log, gtest_summary and default_model.

run_split() {
  local vocab="${LUMEN_VOCAB:-$BUNDLE/vocab.gguf}" model spec preset type layers file name start out rc
  model=$(default_model)
  local files=()
  if [ -f "$model" ]; then
    files+=("$model")
  else
    log "no default model: the split runs on synthetic models only"
  fi
  if [ -f "$vocab" ]; then
    for spec in ${GPU_CHECK_SPLIT:-gemma3-270m:Q8_0:6 qwen3moe-mini:Q4_1:4}; do
      IFS=: read -r preset type layers <<< "$spec"
      file="$WORK/split-$preset-$type.gguf"
      [ -f "$file" ] || "$BIN/lumen" synth "$preset" -o "$file" --type "$type" --layers "$layers" --vocab "$vocab" \
        > /dev/null || { log "synth $spec failed"; continue; }
      files+=("$file")
    done
  else
    log "no vocabulary for lumen synth (set LUMEN_VOCAB): synthetic splits skipped"
  fi
  for file in "${files[@]}"; do
    name="split_vs_cpu_and_cuda_$(basename "$file" .gguf)"
    start=$SECONDS
    LUMEN_GPU_TEST_MODEL="$file" "$BIN/cuda_model_tests" --gtest_brief=1 --gtest_filter='CudaSplit.*' \
      > "$WORK/$name.log" 2>&1
    grep -E 'Failure|error|--n-gpu-layers' "$WORK/$name.log" | head -n 14 >&2
    gtest_summary "$name" "$WORK/$name.log" $((SECONDS - start))
  done
  [ -f "$model" ] || return 0
  local n
  for n in 0 1 16 31 auto; do
    out=$("$BIN/lumen" run -m "$model" --device cuda -ngl "$n" -p "Paris is the capital of" -n 16 --temp 0 2>&1); rc=$?
    log "-ngl $n (rc $rc): $(tr '\n' ' ' <<< "$out" | tail -c 300)"
    echo "{\"check\": \"run_ngl_$n\", \"passed\": $([ $rc -eq 0 ] && echo 1 || echo 0), \"failed\": $([ $rc -eq 0 ] && echo 0 || echo 1)}" |
      tee -a "$RESULTS"
  done
  out=$("$BIN/lumen" run -m "$model" --device cuda -ngl 99 -p "Hi" -n 2 2>&1); rc=$?
  local refused=false
  [ $rc -ne 0 ] && grep -q "0 to 31" <<< "$out" && refused=true
  echo "{\"check\": \"run_ngl_99_refused\", \"passed\": $([ $refused = true ] && echo 1 || echo 0), \"failed\": $([ $refused = true ] && echo 0 || echo 1)}" |
    tee -a "$RESULTS"
  local where
  for where in "cuda" "cuda -ngl 16" "cpu"; do
    # shellcheck disable=SC2086 # the device and its flag are two words
    if "$BIN/lumen" bench throughput -m "$model" --device $where --num-prompts 64 --input-len 128 --output-len 64 \
        --json > "$WORK/split-throughput.json" 2> "$WORK/split-throughput.log"; then
      echo "{\"check\": \"bench_throughput\", \"device\": \"$where\", \"result\": $(tr -d '\n' < "$WORK/split-throughput.json")}" |
        tee -a "$RESULTS"
    else
      log "bench throughput --device $where failed: $(tail -n 2 "$WORK/split-throughput.log")"
    fi
  done
}
