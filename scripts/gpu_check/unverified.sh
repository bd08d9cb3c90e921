# shellcheck shell=bash
# Sourced by scripts/gpu_check.sh: the `unverified` mode and the switched features it checks,
# each written without a GPU at hand and off by default until a GPU run passes it (dependent
# launches, the fused attention combine, the GLU epilogue, the pipelined GEMV, the int8 GEMM,
# MoE routed on the device, attention sinks and gpt-oss's experts).

# What was written without a GPU, first, in one short call (about 3-5 minutes): each feature's own
# tests with its switch on, then the whole CUDA conformance table with every switch on, the
# new architectures, and decode timings with and without CUDA graphs on llama-1b Q4_0. Each line
# of gpu_check.json names the check; a feature whose checks all pass can be declared by default
# (CudaBackendOptions): step_graphs, tree_attention, quantized_kv_cache, state_space,
# latent_attention, kv_eviction, layer_norm, encoder (with layer_norm: a vision tower on the GPU,
# CudaVisionTower), alibi, span_attention, rwkv7, device_argmax, device_leading,
# tensor_core_prefill (CudaTensorCorePrefill, the greedy model tests, a pp512 row),
# fused_input_quantization (CudaFusedInputQuantization, the greedy model tests, a decode row),
# rope_loads_first (CudaRope.LoadsFirst*, the same greedy run, a decode row), grouped_gemv
# (CudaGroupedGemv, CudaMatmulSameInput, the same greedy run, a decode row), fused_rope_store_kv
# (its registered conformance rows in the all-switches run, the same greedy run, a decode row),
# routed_moe (its registered conformance rows, CudaCapabilities; the MoE models: mode moe),
# encoder_tensor_cores (CudaEncoderTensorCores, which sets it itself and prints both kernels'
# times at a Gemma 3 image's size), moe_device_gemm (CudaExpertGemm, which sets it itself; its
# timings in mode moe) and max_gemv_tokens
# (from streams).
run_unverified() {
  local start model
  # The tests changed since the last GPU run (2026-11-29): the matmul suites (IQ4_NL and IQ4_XS among
  # them since 2026-12-01; the coalesced f16
  # conversion of the cuBLAS path, the int8 GEMM), the step timer, the expert GEMM's counter, the switches' table,
  # the tree refusal through ScopedCudaOptions; the conformance rows with both tensor-core
  # attentions pinned off.
  start=$SECONDS
  timeout 180 "$BIN/unit_backend_cuda" --gtest_brief=1 \
    --gtest_filter='*CudaMatmul*:*CudaInt8Gemm*:*CudaStepTimer.*:*CudaOpTimer.*:*CudaDeviceCeilings.*:*CudaExpertGemm.*:*CudaEnvironmentOptions.*:*CudaTreeAttention.*:*CudaCapabilities.*:*CudaAttentionSinks*' \
    2>&1 | tee "$WORK/unverified_ops.log" | grep -vE '^\[ *(OK|RUN) *\]'
  gtest_summary unverified_ops "$WORK/unverified_ops.log" $((SECONDS - start))
  start=$SECONDS
  # With the attention sinks and gpt-oss's experts declared (written 2026-12-02 without a GPU):
  # their rows run too (the moe_ffn gpt_oss rows, route_experts m4, moe_ffn_routed m272/m304 with
  # MXFP4 experts).
  LUMEN_CUDA_ATTENTION_SINKS=1 LUMEN_CUDA_BIASED_EXPERTS=1 timeout 120 "$BIN/unit_backend_conformance" --gtest_brief=1 \
    --gtest_filter='*/cuda_*:*/cuda' 2>&1 | tee "$WORK/unverified_conformance.log" | grep -vE '^\[ *(OK|RUN) *\]'
  gtest_summary unverified_conformance "$WORK/unverified_conformance.log" $((SECONDS - start))
  # gpt-oss (attention sinks, biased experts, MXFP4 experts; 2026-12-02, checked on the simulated
  # device only: sim_cuda_ops_gpt_oss) through a whole model, op by op and teacher-forced.
  synth_model_vs_cpu gpt-oss-mini MXFP4_MOE gpt_oss "LUMEN_CUDA_ATTENTION_SINKS=1 LUMEN_CUDA_BIASED_EXPERTS=1" \
    'moe_ffn|attention'
  # IQ4_NL and IQ4_XS (new 2026-12-01) through a whole model, op by op against the CPU.
  GPU_CHECK_TYPES="llama3-mini:IQ4_NL llama3-mini:IQ4_XS" run_types
  # The cheapest checks of the most first (a call is cut at its timeout): the device-clock profile
  # (where a decode step of 1 and of 64 sequences and a prefill step go: what the next work
  # follows; new since 2026-11-29), the dependent launches, the pipelined GEMV, then the int8 GEMM
  # through models and its benchmarks.
  GPU_CHECK_DEVICE_PROFILE=${GPU_CHECK_DEVICE_PROFILE:-llama-1b:Q4_0} run_device_profile
  run_gemm
  run_dependent_launch
  run_fused_combine
  run_glu_epilogue
  run_pipelined_gemv
  run_catalog_stand_in
  model=$(default_model)
  if [ -f "$model" ]; then
    # The default model's prompts (Q4_1 and Q8_0 weights) through the int8 GEMM: greedy and
    # teacher-forced against the CPU; and the step graphs' test with its pinned options.
    start=$SECONDS
    LUMEN_CUDA_INT8_GEMM=1 LUMEN_GPU_TEST_MODEL="$model" timeout 120 "$BIN/cuda_model_tests" --gtest_brief=1 \
      --gtest_filter='CudaGreedy.*WithCpu:*CudaStepGraphs.*' 2>&1 | tee "$WORK/unverified_greedy_int8_gemm.log"
    gtest_summary unverified_greedy_cuda_vs_cpu_int8_gemm "$WORK/unverified_greedy_int8_gemm.log" $((SECONDS - start))
  else
    log "no default model (carry .gpu-model and .gpu-model2 first): the model tests skipped"
  fi
  # The K-quant int8 GEMM through whole models: teacher-forced against the CPU.
  local vocab="${LUMEN_VOCAB:-$BUNDLE/vocab.gguf}" spec preset type file name
  if [ -f "$vocab" ]; then
    for spec in llama3-mini:Q4_K_M llama3-mini:Q3_K llama3-mini:Q2_K llama3-mini:Q5_K; do
      preset=${spec%%:*}; type=${spec##*:}
      file="$WORK/int8-$preset-$type.gguf"
      [ -f "$file" ] || "$BIN/lumen" synth "$preset" -o "$file" --type "$type" --vocab "$vocab" > /dev/null ||
        { log "synth $spec failed"; continue; }
      name="unverified_int8_gemm_cuda_vs_cpu_$preset-$type"
      start=$SECONDS
      LUMEN_CUDA_INT8_GEMM=1 LUMEN_GPU_TEST_MODEL="$file" timeout 120 "$BIN/cuda_model_tests" --gtest_brief=1 \
        --gtest_filter='CudaGreedy.DefaultOptionsAgreeWithCpu' > "$WORK/$name.log" 2>&1
      grep -E 'Failure|error|expected' "$WORK/$name.log" | head -n 5 >&2
      gtest_summary "$name" "$WORK/$name.log" $((SECONDS - start))
    done
  fi
  run_int8_bench
}

# The step's kernels as programmatic dependent launches (LUMEN_CUDA_DEPENDENT_LAUNCH=1, written
# 2026-11-30 without a GPU): the default model's logits against plain launches bit for bit
# (CudaDependentLaunch) and greedy against the CPU, the conformance rows with it on, then batch-1
# decode each way on llama-1b Q4_0, llama-8b Q4_0 and llama-1b BF16 (the JSON's
# "dependent_launch").
run_dependent_launch() {
  local start vocab="${LUMEN_VOCAB:-$BUNDLE/vocab.gguf}" spec preset type file way
  greedy_tests_with dependent_launch_model 'CudaDependentLaunch.*:CudaGreedy.*WithCpu:CudaStepGraphs.*' \
    LUMEN_CUDA_DEPENDENT_LAUNCH=1
  start=$SECONDS
  LUMEN_CUDA_DEPENDENT_LAUNCH=1 timeout 120 "$BIN/unit_backend_conformance" --gtest_brief=1 \
    --gtest_filter='*/cuda_*:*/cuda' 2>&1 | tee "$WORK/dependent_launch_conformance.log" | grep -vE '^\[ *(OK|RUN) *\]'
  gtest_summary dependent_launch_conformance "$WORK/dependent_launch_conformance.log" $((SECONDS - start))
  [ -f "$vocab" ] || return 0
  for spec in llama-1b:Q4_0 llama-8b:Q4_0 llama-1b:BF16; do
    preset=${spec%%:*}; type=${spec##*:}
    file=$(synth_model "$spec") || continue
    for way in 0 1; do
      LUMEN_CUDA_DEPENDENT_LAUNCH=$way timeout 60 "$BIN/lumen_cuda_decode_bench" "$file" 128 512 0 | tee -a "$RESULTS"
    done
    # The bench's steps before 2026-11-30 (each row copied back whole, its argmax on the host),
    # against the device's argmax above ("rows" in the JSON).
    if [ "$spec" = llama-1b:Q4_0 ]; then
      LUMEN_BENCH_WHOLE_ROWS=1 timeout 60 "$BIN/lumen_cuda_decode_bench" "$file" 128 512 0 | tee -a "$RESULTS"
    fi
  done
}

# The fused attention combine (LUMEN_CUDA_FUSED_COMBINE=1, written 2026-12-01 without a GPU): its
# logits against the combine launch bit for bit with the blocks really concurrent
# (FusedAttentionCombine: the fences and counts), greedy and step graphs against the CPU with it,
# then batch-1 decode with it on llama-1b Q4_0 and llama-8b Q4_0 (the JSON's "fused_combine"; the
# defaults' rows of the same files are run_dependent_launch's, earlier in the call).
run_fused_combine() {
  local start testdata="" spec file
  [ -d "$BUNDLE/testdata" ] && testdata="$BUNDLE/testdata"
  start=$SECONDS
  LUMEN_TESTDATA_DIR="$testdata" timeout 120 "$BIN/cuda_engine_tests" --gtest_brief=1 \
    --gtest_filter='*FusedAttentionCombine.*' 2>&1 | tee "$WORK/fused_combine.log" | grep -vE '^\[ *(OK|RUN) *\]'
  gtest_summary fused_combine_tests "$WORK/fused_combine.log" $((SECONDS - start))
  greedy_tests_with fused_combine_model 'CudaGreedy.*WithCpu:CudaStepGraphs.*' LUMEN_CUDA_FUSED_COMBINE=1
  for spec in llama-1b:Q4_0 llama-8b:Q4_0; do
    file=$(synth_model "$spec") || continue
    LUMEN_CUDA_FUSED_COMBINE=1 timeout 60 "$BIN/lumen_cuda_decode_bench" "$file" 128 512 0 | tee -a "$RESULTS"
  done
}

# SwiGLU in the gate/up GEMV's launch (LUMEN_CUDA_GLU_EPILOGUE=1, written 2026-12-01 without a
# GPU): the FFN's ops against the separate SwiGLU bit for bit (CudaGluEpilogue) and whole models'
# logits the same way (GluEpilogue), with the blocks really concurrent (the fences and counts);
# a synthetic model against the CPU with it; then batch-1 decode with it on llama-1b Q4_0
# and llama-8b Q4_0 (the JSON's "glu_epilogue"), alone and with the fused combine (the defaults'
# rows of the same files are run_dependent_launch's and run_fused_combine's, earlier in the call).
run_glu_epilogue() {
  local start testdata="" spec file
  [ -d "$BUNDLE/testdata" ] && testdata="$BUNDLE/testdata"
  start=$SECONDS
  timeout 60 "$BIN/unit_backend_cuda" --gtest_brief=1 --gtest_filter='*CudaGluEpilogue.*' 2>&1 |
    tee "$WORK/glu_epilogue_ops.log" | grep -vE '^\[ *(OK|RUN) *\]'
  LUMEN_TESTDATA_DIR="$testdata" timeout 120 "$BIN/cuda_engine_tests" --gtest_brief=1 \
    --gtest_filter='*GluEpilogue.*' 2>&1 | tee -a "$WORK/glu_epilogue_ops.log" | grep -vE '^\[ *(OK|RUN) *\]'
  gtest_summary glu_epilogue_tests "$WORK/glu_epilogue_ops.log" $((SECONDS - start))
  # Against the CPU on a synthetic model whose gate and up the tiled GEMV takes (the default
  # model's 576-wide Q4_1 rows are not whole 16-byte vectors, so it never reaches the epilogue).
  synth_model_vs_cpu llama3-mini Q4_0 glu_epilogue "LUMEN_CUDA_GLU_EPILOGUE=1" 'mean KL'
  for spec in llama-1b:Q4_0 llama-8b:Q4_0; do
    file=$(synth_model "$spec") || continue
    LUMEN_CUDA_GLU_EPILOGUE=1 timeout 60 "$BIN/lumen_cuda_decode_bench" "$file" 128 512 0 | tee -a "$RESULTS"
    LUMEN_CUDA_GLU_EPILOGUE=1 LUMEN_CUDA_FUSED_COMBINE=1 timeout 60 "$BIN/lumen_cuda_decode_bench" "$file" 128 512 0 |
      tee -a "$RESULTS"
  done
}

# The pipelined GEMV (LUMEN_CUDA_GEMV=pipelined, written 2026-11-30 without a GPU): its bits
# against the warp kernels (CudaPipelinedGemv*; the grouped launches' suite with it), greedy and
# step graphs against the CPU with it, GB/s beside the other kernels (lumen_cuda_gemv_bench), then
# batch-1 decode with it, with and without dependent launches (run_dependent_launch has the default
# kernels' both ways on the same files), and the tiled one on the Q4_K_M file.
run_pipelined_gemv() {
  local start vocab="${LUMEN_VOCAB:-$BUNDLE/vocab.gguf}" spec file way
  start=$SECONDS
  timeout 150 "$BIN/unit_backend_cuda" --gtest_brief=1 --gtest_filter='*CudaPipelinedGemv*' 2>&1 |
    tee "$WORK/pipelined_gemv_ops.log" | grep -vE '^\[ *(OK|RUN) *\]'
  gtest_summary pipelined_gemv_ops "$WORK/pipelined_gemv_ops.log" $((SECONDS - start))
  start=$SECONDS
  LUMEN_CUDA_GEMV=pipelined timeout 60 "$BIN/unit_backend_cuda" --gtest_brief=1 --gtest_filter='*CudaGroupedGemv*' 2>&1 |
    tee "$WORK/pipelined_gemv_grouped.log" | grep -vE '^\[ *(OK|RUN) *\]'
  gtest_summary pipelined_gemv_grouped "$WORK/pipelined_gemv_grouped.log" $((SECONDS - start))
  greedy_tests_with pipelined_gemv_model 'CudaGreedy.*WithCpu:CudaStepGraphs.*' LUMEN_CUDA_GEMV=pipelined
  GPU_CHECK_GEMV_TYPES=${GPU_CHECK_GEMV_TYPES:-Q4_0,Q4_K,Q6_K,Q8_0,BF16} run_gemv
  [ -f "$vocab" ] || return 0
  for spec in llama-8b:Q4_0 llama-1b:Q4_0 llama-1b:BF16; do
    file=$(synth_model "$spec") || continue
    for way in 0 1; do
      LUMEN_CUDA_GEMV=pipelined LUMEN_CUDA_DEPENDENT_LAUNCH=$way timeout 60 "$BIN/lumen_cuda_decode_bench" "$file" 128 512 0 |
        tee -a "$RESULTS"
    done
  done
  file=$(synth_model llama-1b:Q4_K_M) || return 0
  for way in tiled pipelined; do
    LUMEN_CUDA_GEMV=$way timeout 60 "$BIN/lumen_cuda_decode_bench" "$file" 128 512 0 | tee -a "$RESULTS"
  done
}

# The int8 GEMM against the f16 way and the GEMV past 8 tokens: pp512 and batch-1 decode of
# llama-1b and llama-8b Q4_0 and llama-1b Q4_K_M each way (lumen_cuda_decode_bench), then 64 streams decoding
# (lumen bench throughput) with the f16 way (the default), the int8 GEMM, and the GEMV for up to
# 64 tokens. Each JSON line says which ("int8_gemm", "max_gemv_tokens").
run_int8_bench() {
  local vocab="${LUMEN_VOCAB:-$BUNDLE/vocab.gguf}" spec preset type file way int8 gemv
  [ -f "$vocab" ] || { log "no vocabulary: the int8 benchmarks skipped"; return 0; }
  for spec in ${GPU_CHECK_MODELS:-llama-1b:Q4_0 llama-8b:Q4_0 llama-1b:Q4_K_M}; do
    preset=${spec%%:*}; type=${spec##*:}
    file=$(synth_model "$spec") || continue
    for int8 in 0 1; do
      LUMEN_CUDA_INT8_GEMM=$int8 timeout 60 "$BIN/lumen_cuda_decode_bench" "$file" 64 512 0 | tee -a "$RESULTS"
    done
  done
  spec=${GPU_CHECK_STREAMS_MODEL:-llama-1b:Q4_0}
  preset=${spec%%:*}; type=${spec##*:}
  file="$WORK/$preset-$type.gguf"
  [ -f "$file" ] || return 0
  for way in "0 8" "1 8" "0 64"; do
    read -r int8 gemv <<< "$way"
    LUMEN_CUDA_INT8_GEMM=$int8 LUMEN_CUDA_MAX_GEMV_TOKENS=$gemv timeout 90 "$BIN/lumen" bench throughput -m "$file" \
      --device cuda --num-prompts 64 --input-len 256 --output-len 128 --max-num-seqs 64 --json \
      2> "$WORK/streams-64-int8$int8-gemv$gemv.log" |
      python3 -c 'import json, sys
d = json.load(sys.stdin)
d["check_streams"] = 64
d["int8_gemm"] = sys.argv[1] == "1"
d["max_gemv_tokens"] = int(sys.argv[2])
print(json.dumps(d))' "$int8" "$gemv" | tee -a "$RESULTS"
  done
}

# MoE layers routed on the device (routed_moe: route_experts.cu, gemv_experts.cu), teacher-forced
# and greedy against the CPU: Qwen3-MoE's renormalized top 8, Qwen2-MoE's shared expert with its
# gate, Mixtral's top 2; then the same with decode replayed from CUDA graphs, which the device
# routing makes possible (the composed path copies the router's logits to the host); a prompt's
# experts on the expert GEMV and grouped on the host, each against moe_ffn and timed.
run_routed_moe() {
  local vocab="${LUMEN_VOCAB:-$BUNDLE/vocab.gguf}"
  [ -f "$vocab" ] || { log "no vocabulary for lumen synth (set LUMEN_VOCAB)"; return 1; }
  local spec preset type file name start graphs macs prompt
  for spec in qwen3moe-mini:Q4_1 qwen2moe-a2.7b-mini:Q4_1 mixtral-mini:Q8_0; do
    preset=${spec%%:*}; type=${spec##*:}
    file="$WORK/models-$preset-$type.gguf"
    [ -f "$file" ] || "$BIN/lumen" synth "$preset" -o "$file" --type "$type" --layers 2 --vocab "$vocab" > /dev/null ||
      { log "synth $spec failed"; continue; }
    for graphs in 0 1; do
      name="routed_moe_cuda_vs_cpu_$preset-$type-graphs$graphs"
      start=$SECONDS
      LUMEN_CUDA_ROUTED_MOE=1 LUMEN_CUDA_GRAPHS=$graphs LUMEN_GPU_TEST_MODEL="$file" timeout 120 \
        "$BIN/cuda_model_tests" --gtest_brief=1 --gtest_filter='CudaGreedy.DefaultOptionsAgreeWithCpu' \
        > "$WORK/$name.log" 2>&1
      grep -E 'Failure|error|expected' "$WORK/$name.log" | head -n 5 >&2
      gtest_summary "$name" "$WORK/$name.log" $((SECONDS - start))
    done
  done
  # The routed expert rows past decode size both ways (routed_moe_plan.h): the host's grouping and
  # the GEMMs (a budget of 0), then the expert GEMV (the largest budget). Their references are
  # exact for these two ways; the device GEMM (whose sums differ in order) has CudaExpertGemm.
  for macs in 0 9000000000000000000; do
    name="routed_moe_conformance_gemv_macs_$macs"
    start=$SECONDS
    LUMEN_CUDA_ROUTED_MOE=1 LUMEN_CUDA_MOE_GEMV_MACS=$macs LUMEN_CUDA_MOE_DEVICE_GEMM=0 timeout 120 \
      "$BIN/unit_backend_conformance" \
      --gtest_brief=1 --gtest_filter='*cuda*moe_ffn_routed*:*cuda*route_experts*' > "$WORK/$name.log" 2>&1
    grep -E 'Failure|error|expected|differ' "$WORK/$name.log" | head -n 5 >&2
    gtest_summary "$name" "$WORK/$name.log" $((SECONDS - start))
  done
  # A prompt's experts on the device's tensor-core GEMM (moe_device_gemm, gemm_experts.cu): its
  # op tests against the host way and the CPU, then a Mixtral-sized layer both ways, timed.
  name="routed_moe_device_gemm"
  start=$SECONDS
  timeout 150 "$BIN/unit_backend_cuda" --gtest_brief=1 --gtest_filter='*CudaExpertGemm.*:CudaExpertGemmTiming.*' \
    > "$WORK/$name.log" 2>&1
  grep -E 'Failure|error|expected|host way|bench' "$WORK/$name.log" | head -n 20 >&2
  grep -E '^\{"bench"' "$WORK/$name.log" >> "$RESULTS"
  gtest_summary "$name" "$WORK/$name.log" $((SECONDS - start))
  # Decode of a MoE model (all its layers): the composed path (the router's logits to the host
  # every layer), then routed on the device, then also replayed from graphs. bytes_per_token counts
  # every expert's weights, so effective_gb_per_s understates a MoE model's.
  file="$WORK/qwen3moe-mini-Q4_1-full.gguf"
  [ -f "$file" ] || "$BIN/lumen" synth qwen3moe-mini -o "$file" --type Q4_1 --vocab "$vocab" > /dev/null ||
    { log "synth qwen3moe-mini failed"; return 1; }
  timeout 60 "$BIN/lumen_cuda_decode_bench" "$file" 128 512 0 | tee -a "$RESULTS"
  LUMEN_CUDA_ROUTED_MOE=1 timeout 60 "$BIN/lumen_cuda_decode_bench" "$file" 128 512 0 | tee -a "$RESULTS"
  LUMEN_CUDA_ROUTED_MOE=1 LUMEN_CUDA_GRAPHS=1 timeout 60 "$BIN/lumen_cuda_decode_bench" "$file" 128 512 0 |
    tee -a "$RESULTS"
  # A prompt's experts three ways, at 512 and 2048 tokens: prefill_tokens_per_s of the host's
  # grouping (0), the default budget, the expert GEMV always, and the device GEMM past a budget of
  # 0 (gemm); where they cross sets the default of CudaBackendOptions::moe_gemv_macs_per_expert,
  # and whether moe_device_gemm replaces the host way.
  for prompt in 512 2048; do
    for macs in 0 default 9000000000000000000 gemm; do
      if [ "$macs" = gemm ]; then
        LUMEN_CUDA_ROUTED_MOE=1 LUMEN_CUDA_MOE_GEMV_MACS=0 LUMEN_CUDA_MOE_DEVICE_GEMM=1 timeout 60 \
          "$BIN/lumen_cuda_decode_bench" "$file" 8 "$prompt" 0 | tee -a "$RESULTS"
      elif [ "$macs" = default ]; then
        LUMEN_CUDA_ROUTED_MOE=1 timeout 60 "$BIN/lumen_cuda_decode_bench" "$file" 8 "$prompt" 0 | tee -a "$RESULTS"
      else
        LUMEN_CUDA_ROUTED_MOE=1 LUMEN_CUDA_MOE_GEMV_MACS=$macs timeout 60 "$BIN/lumen_cuda_decode_bench" "$file" 8 \
          "$prompt" 0 | tee -a "$RESULTS"
      fi
    done
  done
}
