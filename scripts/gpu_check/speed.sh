# shellcheck shell=bash
# Sourced by scripts/gpu_check.sh: the timing modes. bench (batch-1 prefill and decode of
# synthetic models, each way), quick, streams (decode throughput at 1, 16 and 64 requests), gemv
# and gemm (the kernels alone beside a copy's bandwidth), peer (llama.cpp's CUDA llama-bench on
# the same files) and profile (each op's device time and GB/s, Nsight Compute where it runs).
# One JSON object per line into RESULTS.

run_bench() {
  local vocab="${LUMEN_VOCAB:-$BUNDLE/vocab.gguf}"
  [ -f "$vocab" ] || { log "no vocabulary for lumen synth (set LUMEN_VOCAB)"; return 1; }
  local spec preset type file
  for spec in ${GPU_CHECK_MODELS:-llama-1b:Q4_0 llama-1b:BF16 llama-8b:Q4_0}; do
    preset=${spec%%:*}; type=${spec##*:}
    file=$(synth_model "$spec") || continue
    # Default options, then every matmul on the GEMV kernels (prefill too); then the default
    # options with the one-warp GEMV kernels for every type (the default tiles quantized weights
    # and streams float ones), without the fused add + RMSNorm, and with the one-pass (not
    # llama.cpp-exact) f16 attention; and with the prompt's attention on the tensor cores.
    "$BIN/lumen_cuda_decode_bench" "$file" 128 512 0 | tee -a "$RESULTS"
    "$BIN/lumen_cuda_decode_bench" "$file" 32 512 1 | tee -a "$RESULTS"
    LUMEN_CUDA_GEMV=warp "$BIN/lumen_cuda_decode_bench" "$file" 128 512 0 | tee -a "$RESULTS"
    LUMEN_CUDA_ADD_RMS_NORM=0 "$BIN/lumen_cuda_decode_bench" "$file" 128 512 0 | tee -a "$RESULTS"
    LUMEN_CUDA_EXACT_ATTENTION=0 "$BIN/lumen_cuda_decode_bench" "$file" 128 512 0 | tee -a "$RESULTS"
    LUMEN_CUDA_GRAPHS=1 "$BIN/lumen_cuda_decode_bench" "$file" 128 512 0 | tee -a "$RESULTS"
    LUMEN_CUDA_GRAPHS=1 LUMEN_CUDA_EXACT_ATTENTION=0 "$BIN/lumen_cuda_decode_bench" "$file" 128 512 0 | tee -a "$RESULTS"
    LUMEN_CUDA_TENSOR_CORE_PREFILL=1 "$BIN/lumen_cuda_decode_bench" "$file" 128 512 0 | tee -a "$RESULTS"
    LUMEN_CUDA_FUSED_QUANTIZE=1 "$BIN/lumen_cuda_decode_bench" "$file" 128 512 0 | tee -a "$RESULTS"
    LUMEN_CUDA_GROUPED_GEMV=1 "$BIN/lumen_cuda_decode_bench" "$file" 128 512 0 | tee -a "$RESULTS"
    LUMEN_CUDA_ROPE_STORE_KV=1 "$BIN/lumen_cuda_decode_bench" "$file" 128 512 0 | tee -a "$RESULTS"
  done
}

# The defaults in a few minutes (after switches verified one by one are turned on together): the
# op suites of those switches and the options' parsing, every CUDA conformance row, the greedy and
# teacher-forced model tests against the CPU (and with the one-pass f16 attention), each KV cache
# type's perplexity against the CPU's, and batch-1 decode of the bench models with the defaults
# and with the one-pass attention.
run_quick() {
  local start model spec preset type file vocab="${LUMEN_VOCAB:-$BUNDLE/vocab.gguf}"
  start=$SECONDS
  LUMEN_VISION_MMPROJ_DIR="$BUNDLE/vision" timeout 150 "$BIN/unit_backend_cuda" --gtest_brief=1 \
    --gtest_filter='*CudaAttention.*:*CudaTreeAttention.*:*CudaKvCodec.*:*CudaKvCache.*:*CudaKvEviction.*:*CudaCapabilities.*:*CudaEnvironmentOptions.*:*CudaRowArgmax.*:*CudaRowLeading.*:*CudaVisionTower.*:*CudaTensorCorePrefill.*:*CudaFusedInputQuantization.*:*CudaGroupedGemv.*:*CudaEncoderTensorCores.*:*CudaExpertGemm.*' \
    2>&1 | tee "$WORK/quick_ops.log" | grep -vE '^\[ *(OK|RUN) *\]'
  gtest_summary quick_ops "$WORK/quick_ops.log" $((SECONDS - start))
  start=$SECONDS
  timeout 120 "$BIN/unit_backend_conformance" --gtest_brief=1 --gtest_filter='*/cuda_*:*/cuda' 2>&1 |
    tee "$WORK/quick_conformance.log" | grep -vE '^\[ *(OK|RUN) *\]'
  gtest_summary quick_conformance "$WORK/quick_conformance.log" $((SECONDS - start))
  model=$(default_model)
  if [ -f "$model" ]; then
    start=$SECONDS
    LUMEN_GPU_TEST_MODEL="$model" timeout 120 "$BIN/cuda_model_tests" --gtest_brief=1 --gtest_filter='-CudaEncoder.*' 2>&1 |
      tee "$WORK/quick_model_tests.log" | grep -vE '^\[ *(OK|RUN) *\]'
    gtest_summary quick_greedy_cuda_vs_cpu_defaults "$WORK/quick_model_tests.log" $((SECONDS - start))
    start=$SECONDS
    LUMEN_CUDA_EXACT_ATTENTION=0 LUMEN_GPU_TEST_MODEL="$model" timeout 60 "$BIN/cuda_model_tests" --gtest_brief=1 \
      --gtest_filter='CudaGreedy.*WithCpu' 2>&1 | tee "$WORK/quick_one_pass.log" | grep -vE '^\[ *(OK|RUN) *\]'
    gtest_summary quick_greedy_cuda_vs_cpu_one_pass_attention "$WORK/quick_one_pass.log" $((SECONDS - start))
    run_kv_types "$model"
  fi
  [ -f "$vocab" ] || return 0
  for spec in ${GPU_CHECK_MODELS:-llama-1b:Q4_0 llama-8b:Q4_0 llama-1b:Q4_K_M}; do
    preset=${spec%%:*}; type=${spec##*:}
    file=$(synth_model "$spec") || continue
    timeout 60 "$BIN/lumen_cuda_decode_bench" "$file" 128 512 0 | tee -a "$RESULTS"
    LUMEN_CUDA_EXACT_ATTENTION=0 timeout 60 "$BIN/lumen_cuda_decode_bench" "$file" 128 512 0 | tee -a "$RESULTS"
  done
}

# Decode throughput as streams are added (issue 48: a step of 64 sequences should cost little
# more than one): `lumen bench throughput --device cuda` on the first bench model (llama-1b Q4_0 by
# default), 256-token prompts and 128-token answers, 1, 16 and 64 requests at once (all admitted
# together: --max-num-seqs 64), one JSON line each; then again with decode steps replayed from
# CUDA graphs (LUMEN_CUDA_GRAPHS=1, "step_graphs": true), and both again with batches of up to 64
# tokens on the GEMV kernels (LUMEN_CUDA_MAX_GEMV_TOKENS=64, "max_gemv_tokens": 64) instead of
# dequantize + cuBLAS.
run_streams() {
  local vocab="${LUMEN_VOCAB:-$BUNDLE/vocab.gguf}" spec preset type file n
  spec=${GPU_CHECK_STREAMS_MODEL:-llama-1b:Q4_0}
  preset=${spec%%:*}; type=${spec##*:}
  file=$(synth_model "$spec") || return 1
  local graphs gemv
  for gemv in 8 64; do
    for graphs in 0 1; do
      for n in 1 16 64; do
        [ "$gemv" = 64 ] && [ "$n" = 1 ] && continue  # batch 1 runs the GEMV either way
        LUMEN_CUDA_GRAPHS=$graphs LUMEN_CUDA_MAX_GEMV_TOKENS=$gemv "$BIN/lumen" bench throughput -m "$file" \
          --device cuda --num-prompts $n --input-len 256 --output-len 128 --max-num-seqs 64 --json \
          2> "$WORK/streams-$n-graphs$graphs-gemv$gemv.log" |
          python3 -c 'import json, sys
d = json.load(sys.stdin)
d["check_streams"] = int(sys.argv[1])
d["step_graphs"] = sys.argv[2] == "1"
d["max_gemv_tokens"] = int(sys.argv[3])
print(json.dumps(d))' "$n" "$graphs" "$gemv" | tee -a "$RESULTS"
      done
    done
  done
  # Greedy rows reduced on the device (device_argmax): 16 and 64 streams, graphs on, whichever
  # GEMV bound; host_ms_per_step, forward_ms_per_step and device_ms_per_step show where a step's time goes.
  for n in 16 64; do
    LUMEN_CUDA_DEVICE_ARGMAX=1 LUMEN_CUDA_GRAPHS=1 "$BIN/lumen" bench throughput -m "$file" \
      --device cuda --num-prompts $n --input-len 256 --output-len 128 --max-num-seqs 64 --json \
      2> "$WORK/streams-$n-device-argmax.log" |
      python3 -c 'import json, sys
d = json.load(sys.stdin)
d["check_streams"] = int(sys.argv[1])
d["step_graphs"] = True
d["device_argmax"] = True
print(json.dumps(d))' "$n" | tee -a "$RESULTS"
  done
  # Sampled requests, 64 streams, graphs on: temperature 0.8 with top-p 0.95, and the API's
  # default (temperature 1, no filter); rows reduced to their 64 leading candidates, a nucleus or
  # a plain draw past them brought back whole. The rows whole, then reduced on the device
  # (device_leading). leading_rows and rows_brought_back say how many of each.
  local leading draw temperature top_p
  for draw in "0.8 0.95" "1.0 1.0"; do
    read -r temperature top_p <<< "$draw"
    for leading in 0 1; do
      LUMEN_CUDA_DEVICE_LEADING=$leading LUMEN_CUDA_GRAPHS=1 "$BIN/lumen" bench throughput -m "$file" \
        --device cuda --num-prompts 64 --input-len 256 --output-len 128 --max-num-seqs 64 --json \
        --temperature "$temperature" --top-p "$top_p" \
        2> "$WORK/streams-64-sampled-t$temperature-p$top_p-leading$leading.log" |
        python3 -c 'import json, sys
d = json.load(sys.stdin)
d["check_streams"] = 64
d["step_graphs"] = True
d["device_leading"] = sys.argv[1] == "1"
print(json.dumps(d))' "$leading" | tee -a "$RESULTS"
    done
  done
}

run_gemv() {
  "$BIN/lumen_cuda_gemv_bench" "${GPU_CHECK_GEMV_TYPES:-Q4_0,Q4_K,Q6_K,Q8_0,BF16}" | tee -a "$RESULTS"
}

# Where a matmul of many tokens goes (a prompt's, a decode step of more than max_gemv_tokens
# sequences): the backend's f16, int8 and GEMV ways, and the f16 way's dequantization, activation
# conversion and cuBLAS call alone, at 64 and 512 tokens (lumen_cuda_gemv_bench gemm; about 30 s).
run_gemm() {
  timeout 120 "$BIN/lumen_cuda_gemv_bench" gemm "${GPU_CHECK_GEMM_TYPES:-Q4_0,Q4_K,BF16}" 64,512 | tee -a "$RESULTS"
}

# The peer on the files bench times: one JSON object per llama-bench test, tagged "peer".
run_peer() {
  [ -x "$BIN/llama-bench" ] || { log "no llama-bench in the bundle (prepare with LLAMA_BENCH_CUDA=...)"; return 1; }
  local vocab="${LUMEN_VOCAB:-$BUNDLE/vocab.gguf}" spec preset type file
  for spec in ${GPU_CHECK_MODELS:-llama-1b:Q4_0 llama-1b:BF16 llama-8b:Q4_0}; do
    preset=${spec%%:*}; type=${spec##*:}
    file=$(synth_model "$spec") || continue
    # Depth 512 too: bench decodes after a 512-token prompt, so tg128 at depth 512 is its match.
    "$BIN/llama-bench" -m "$file" -p 512 -n 128 -d 0,512 -r 3 -ngl 99 -o jsonl 2> "$WORK/peer-$preset-$type.err" |
      python3 -c 'import json, sys
for line in sys.stdin:
    if line.strip():
        d = json.loads(line)
        print(json.dumps({"peer": "llama.cpp", "model": sys.argv[1], "n_prompt": d.get("n_prompt"),
                          "n_gen": d.get("n_gen"), "n_depth": d.get("n_depth"), "tokens_per_s": d.get("avg_ts"),
                          "stddev": d.get("stddev_ts"), "build": d.get("build_commit"),
                          "flash_attn": d.get("flash_attn")}))' "$file" | tee -a "$RESULTS"
    tail -n 3 "$WORK/peer-$preset-$type.err" >&2
  done
}

# One decode step under Nsight Compute (a 64-token prompt, 16 steps first): per-kernel device time
# and DRAM bytes, then the same bench without the profiler for its host-side breakdown.
# `lumen bench profile --device cuda` (no ncu needed: each op timed by CUDA events, the step held
# back until queued whole): prefill 512 and decode of 1 and 64 sequences after 512 tokens, per op
# its device time and achieved GB/s against the copy bandwidth measured in the same run. The
# whole report in devprofile-*.txt / .json; one summary line per step (its five costliest ops).
run_device_profile() {
  local vocab="${LUMEN_VOCAB:-$BUNDLE/vocab.gguf}" spec preset type file name
  for spec in ${GPU_CHECK_DEVICE_PROFILE:-llama-1b:Q4_0 llama-8b:Q4_0}; do
    preset=${spec%%:*}; type=${spec##*:}
    file=$(synth_model "$spec") || continue
    name="devprofile-$preset-$type"
    timeout 180 "$BIN/lumen" bench profile --device cuda -m "$file" --prefill 512 --decode-batch 1,64 --context 512 \
      -r 3 --json > "$WORK/$name.json" 2> "$WORK/$name.err" || { tail -n 5 "$WORK/$name.err" >&2; continue; }
    python3 - "$WORK/$name.json" "$name" <<'PY' | tee -a "$RESULTS"
import json, sys
doc = json.load(open(sys.argv[1]))
run = doc["runs"][0]
for step in run["steps"]:
    top = sorted(step["ops"], key=lambda o: -o["ms"])[:5]
    print(json.dumps({"check": sys.argv[2], "step": step["step"], "ceilings": run["ceilings"],
                      "step_ms": step["unrecorded_step_ms"], "device_step_ms": step.get("unrecorded_device_step_ms"),
                      "replayed": step.get("unrecorded_replayed_steps"), "ops_ms": step["ops_ms"],
                      "idle_between_ops_ms": step["between_ops_ms"], "weight_stream_gbps": step["weight_stream_gbps"],
                      "top_ops": [[o["name"], o["calls"], round(o["ms"], 4), round(o["gbps"], 1)] for o in top]}))
PY
  done
}

run_profile() {
  run_device_profile
  local vocab="${LUMEN_VOCAB:-$BUNDLE/vocab.gguf}" ncu spec preset type file name gemv
  ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -n1)
  [ -n "$ncu" ] && [ -x "$ncu" ] || { log "no ncu on this machine"; return 1; }
  for spec in ${GPU_CHECK_PROFILE:-llama-1b:Q4_0 llama-1b:BF16}; do
    preset=${spec%%:*}; type=${spec##*:}
    file=$(synth_model "$spec") || continue
    for gemv in ${GPU_CHECK_PROFILE_GEMV:-auto}; do  # auto, warp or stream (LUMEN_CUDA_GEMV)
      name="profile-$preset-$type-$gemv"
      LUMEN_CUDA_GEMV=$gemv LUMEN_BENCH_PROFILE_STEP=1 \
        LD_LIBRARY_PATH="$(bundle_library_path "$BUNDLE")" timeout 300 "$ncu" --profile-from-start off \
        --clock-control none --metrics gpu__time_duration.sum,dram__bytes_read.sum --csv --print-units base \
        "$LIBEXEC/lumen_cuda_decode_bench" "$file" 16 64 0 > "$WORK/$name.csv" 2> "$WORK/$name.err"
      python3 "$(dirname "$0")/ncu_summary.py" "$WORK/$name.csv" "$name" | tee -a "$RESULTS" ||
        tail -n 5 "$WORK/$name.err" >&2
    done
  done
  # Where a decode step of many streams goes (issue 48: 64 streams cost 17x one): 1 200 kernels in
  # the middle of `bench throughput`'s decode (64 prompts of 256 tokens prefilled, then 128 steps
  # of 64 rows, op by op so each launch is its own), with the f16 way and with the int8 GEMM.
  spec=${GPU_CHECK_STREAMS_MODEL:-llama-1b:Q4_0}
  preset=${spec%%:*}; type=${spec##*:}
  file=$(synth_model "$spec") || return 0
  local int8
  for int8 in 0 1; do
    name="profile-streams64-$preset-$type-int8$int8"
    LUMEN_CUDA_GRAPHS=0 LUMEN_CUDA_INT8_GEMM=$int8 LD_LIBRARY_PATH="$(bundle_library_path "$BUNDLE")" timeout 240 \
      "$ncu" --launch-skip "${GPU_CHECK_PROFILE_SKIP:-20000}" --launch-count 1200 --clock-control none \
      --metrics gpu__time_duration.sum,dram__bytes_read.sum --csv --print-units base \
      "$LIBEXEC/lumen" bench throughput -m "$file" --device cuda --num-prompts 64 --input-len 256 --output-len 128 \
      --max-num-seqs 64 --json > "$WORK/$name.csv" 2> "$WORK/$name.err"
    python3 "$(dirname "$0")/ncu_summary.py" "$WORK/$name.csv" "$name" | tee -a "$RESULTS" ||
      tail -n 5 "$WORK/$name.err" >&2
  done
}
