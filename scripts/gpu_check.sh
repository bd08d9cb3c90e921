#!/usr/bin/env bash
# The CUDA backend on a GPU machine, in as few device calls as possible.
#
# The GPU machine has CUDA, 16 cores and no network, and lacks Lumen's Debian libraries, so the
# binaries are built HERE (nvcc needs no GPU) and carried there in one self-contained archive:
#
#   1. here:   scripts/gpu_check.sh prepare
#        builds build/cuda (Release, sm_80 + sm_90) and packs .gpu/lumen-gpu.tar.xz: the test and
#        bench binaries and lumen (libexec/), a wrapper per binary (bin/), every shared library
#        they resolve except glibc's, the C++ runtime's and CUDA's driver and cuBLAS (lib/), and
#        the Llama-3 vocabulary (for `lumen synth`); the default model goes in two halves to
#        .gpu-model/ and .gpu-model2/ (a call carries at most 64 MiB, the repository's tracked
#        files included); .gitignore ignores the three folders, so a device call carries them only
#        when named.
#      scripts/gpu_check.sh verify [CHROOT]
#        unpacks the archive into a scratch folder and checks that the binaries start with a bare
#        environment and resolve every library but the system's from the bundle; given a Debian
#        root folder (e.g. /work/fresh/root, copied first, never changed) and root rights, also
#        runs them there with the bundle's libraries removed from the copy (a machine without
#        them). Builds nothing.
#      scripts/gpu_check.sh selfcheck
#        sources every part (scripts/gpu_check/) and checks each mode has its function (a ctest).
#   2. device: run(command="mkdir -p /tmp/lumen-gpu && cp .gpu-model/* /tmp/lumen-gpu/",
#                  carry=[".gpu-model"])            # first half of the model; keep it warm:
#   3. device: run(command="cp .gpu-model2/* /tmp/lumen-gpu/", carry=[".gpu-model2"])  # within 30 s
#   4. device: run(command="cp .gpu-peer/* /tmp/lumen-gpu/", carry=[".gpu-peer"])  # the peer, when
#              prepared with LLAMA_BENCH_CUDA (its own archive: it and the bundle exceed one call)
#   5. device: run(command="scripts/gpu_check.sh all", carry=[".gpu"], timeout_s=600)
#
# The wrappers give a binary the bundle's libraries through LD_LIBRARY_PATH set for it alone:
# the machine's own tools (curl, python, nvidia-smi) keep their libraries (curl broke when the
# bundle's were exported to everything). CUDA's runtime (libcudart) is carried; cuBLAS (570 MB)
# and the driver are the machine's: the toolkit's, else the ones PyTorch's wheels ship, linked
# into the bundle's cuda-lib/ when the loader does not find them by itself.
#
# Modes on the GPU machine:
#   tests  the gpu-labelled tests (every op, CUDA vs CPU; the streaming GEMV vs the warp GEMV),
#          the conformance table's CUDA rows (the matmul rows three times: the default (tiled for
#          quantized weights), streaming and one-warp GEMV), the rows again with every tolerance
#          at 0, which must fail the run (exit 1, not the skip code), then greedy 64-token
#          continuations of 5 prompts on the default model, CUDA vs CPU, with each GEMV, without
#          the fused add + RMSNorm, with the one-pass f16 attention and with decode replayed from
#          CUDA graphs (and graphs against op by op, bit for bit), and its perplexity with each KV
#          cache type CUDA declares, CUDA vs CPU (when the model's two halves are there);
#   bench  synthetic llama models made there (lumen synth; GPU_CHECK_MODELS, default
#          "llama-1b:Q4_0 llama-1b:BF16 llama-8b:Q4_0"), batch-1 prefill and decode timings,
#          with the default GEMV choice and the one-warp kernels (the JSON's "gemv": "auto" or
#          "warp"), without the fused add + RMSNorm ("add_rms_norm": false), with the one-pass
#          f16 attention ("exact_attention": false) and with decode replayed from CUDA graphs
#          ("step_graphs": true, with and without the one-pass attention), and each decode step's
#          host-side breakdown (enqueue time, host time per op);
#   types  every weight type through a small synthetic model, op by op, CUDA vs CPU
#          (GPU_CHECK_TYPES, default the types the CUDA backend gained without a GPU at hand);
#   models every architecture lumen synth writes: the MoE presets op by op and teacher-forced,
#          CUDA vs CPU (GPU_CHECK_MOE); mamba2 and deepseek2 with their switches on, and refused at
#          load with the message without them;
#   catalog  the catalog's Gemma 3 270M Q4_K_M file's stand-in (lumen synth, the file's tensors,
#          types and shapes) op by op and teacher-forced against the CPU, and its decode;
#   profile  `lumen bench profile --device cuda` (GPU_CHECK_DEVICE_PROFILE, default "llama-1b:Q4_0
#          llama-8b:Q4_0"): prefill 512 and decode of 1 and 64 sequences, each op's device time
#          (CUDA events, no ncu needed) and GB/s against the copy bandwidth; then, where ncu runs,
#          one decode step of a synthetic model (GPU_CHECK_PROFILE, default "llama-1b:Q4_0
#          llama-1b:BF16") under Nsight Compute: each kernel's device time and DRAM bytes read,
#          summed per kernel by scripts/ncu_summary.py (the bench's host-side breakdown beside it);
#          then 1 200 kernels of 64 streams decoding (bench throughput), the f16 way and int8 GEMM;
#   peer   llama.cpp's CUDA llama-bench on bench's models: pp512 and tg128 at depths 0 and 512,
#          3 repetitions, every layer on the GPU; run it in the same call as bench. prepare packs
#          it into .gpu-peer/ when LLAMA_BENCH_CUDA names it (built outside the repository with -DGGML_CUDA=ON
#          -DCMAKE_CUDA_ARCHITECTURES=90 -DGGML_NATIVE=OFF; scripts/build_cuda_peer.sh builds it);
#   engine the engine's model tests on CUDA (cuda_engine_tests: batched vs alone, chunked prefill,
#          preemption, prefix cache, context shift, fairness, faults; needs the default model;
#          speculation and structured output on a synthetic model, the bundle's test vocabulary),
#          then again op by op (no CUDA graphs), with dependent launches, and with the fused combine
#          and the GLU epilogue, then the 2026-11-29 failures' suspects one by one (with memcheck
#          where swap preemption first fails);
#   gemv   batch-1 GEMV throughput of each kernel (one-warp, streaming, tiled) per weight type
#          (GPU_CHECK_GEMV_TYPES, default "Q4_0,Q4_K,Q6_K,Q8_0,BF16") on the 1B and 8B decode
#          shapes, beside a device-to-device copy's bandwidth measured in the same run;
#   gemm   matmuls of 64 and 512 tokens (GPU_CHECK_GEMM_TYPES, default "Q4_0,Q4_K,BF16"): the f16,
#          int8 and GEMV ways, and the f16 way's dequantization, conversion and cuBLAS call alone;
#   streams  decode throughput at 1, 16 and 64 requests at once (lumen bench throughput --device
#          cuda on llama-1b Q4_0, 256 in / 128 out), one JSON line each, without and with CUDA
#          graphs, and with batches of up to 64 tokens on the GEMV kernels;
#   serve  the OpenAI server under load (issue 48): `lumen serve --device cuda` (decode replayed
#          from graphs) and `lumen bench serve` (256 in / 128 out, vLLM's metrics) at 1, 64 and 256
#          streams on llama-1b Q4_0, 1 and 64 on llama-8b Q4_0 (GPU_CHECK_SERVE_MODELS), then
#          llama.cpp's CUDA llama-server (-np 64) on the same files at 1 and 64 when the peer
#          archive has it (prepare with LLAMA_SERVER_CUDA too); one JSON line per run;
#   sanitize  compute-sanitizer: memcheck over both test binaries, racecheck over the op tests
#          (a few minutes; run it when kernels change);
#   split  a model split between the CPU and the GPU (--n-gpu-layers) at several N against all-CPU
#          and all-GPU, -ngl on the command line, and bench throughput split vs whole
#          (scripts/gpu_check/split.sh);
#   unverified  what was written without a GPU since the last GPU run, first and in a few minutes:
#          the matmul suites (the f16 conversion, the int8 GEMM), the tests changed since, the
#          conformance rows, the device-clock profile of llama-1b Q4_0, gemm, the dependent launches
#          (their logits against plain launches, conformance rows, decode each way), the fused
#          attention combine and the GLU epilogue (their bits, model tests, decode), the pipelined
#          GEMV (its bits, model tests, GB/s, decode), the catalog Gemma 3 stand-in (catalog),
#          the default model and K-quant models through the int8 GEMM against the CPU, the attention
#          sinks (their op tests, their conformance rows with LUMEN_CUDA_ATTENTION_SINKS=1), gpt-oss's
#          experts (their rows with LUMEN_CUDA_BIASED_EXPERTS=1) and gpt-oss-mini MXFP4_MOE against
#          the CPU with both, then int8;
#   int8   the int8 GEMM (LUMEN_CUDA_INT8_GEMM=1) against the f16 way: pp512 and decode of llama-1b
#          and llama-8b Q4_0, and 64 streams with each way and with the GEMV for up to 64 tokens;
#   quick  the defaults in a few minutes: the switched features' op suites, every conformance row,
#          the model tests against the CPU (also with the one-pass attention), each KV type's
#          perplexity, batch-1 decode of llama-1b and llama-8b Q4_0 (run_quick);
#   moe    MoE layers routed on the device (LUMEN_CUDA_ROUTED_MOE=1): three MoE presets
#          teacher-forced and greedy against the CPU, eager and from CUDA graphs, then a MoE
#          model's decode composed, routed, and routed from graphs (lumen_cuda_decode_bench);
#          the routed prompt rows and prefill both ways (the host's grouping, the expert GEMV);
#   all    tests, engine, models, split, types and bench (default). Modes may be combined: "gpu_check.sh tests types".
# Results: one JSON object per line in $OUT/gpu_check.json (the device tool's $OUT) or
# /tmp/lumen-gpu/gpu_check.json, and on stdout; every log, profile and the JSON in one archive,
# $OUT/gpu_logs.tgz (the device tool brings back at most 8 files). Without .gpu/lumen-gpu.tar.xz
# the script builds from source instead (build/gpu), which needs the -dev packages of
# scripts/setup.sh.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
[ $# -eq 0 ] && set -- all
MODE="$1"
STAGE=.gpu
ARCHIVE="$STAGE/lumen-gpu.tar.xz"
PEER_ARCHIVE_NAME=llama-bench-cuda.tar.xz
WORK="${LUMEN_GPU_WORK:-/tmp/lumen-gpu}"
MODEL_NAME=SmolLM2-135M-Instruct.Q4_1.gguf
# Paths under build/cuda of what is carried.
CARRIED=(tests/unit/backend_cuda/unit_backend_cuda tests/unit/backend_cuda/cuda_model_tests
         tests/unit/backend_conformance/unit_backend_conformance
         tests/unit/backend_cuda/lumen_cuda_decode_bench tests/unit/backend_cuda/lumen_cuda_gemv_bench
         tests/model/cuda_engine_tests src/cli/lumen)
# Sonames a GPU machine provides, so never carried: glibc's, the C++ runtime, and CUDA's driver,
# cuBLAS and NCCL (which must match the machine's driver, or are too big to carry).
SYSTEM_LIBS='^(linux-vdso|ld-linux-x86-64|libc|libm|libmvec|libpthread|libdl|librt|libresolv|libutil|libanl|libnsl|libstdc\+\+|libgcc_s|libcuda|libcublas|libcublasLt|libnccl|libnvidia-[a-z-]+)\.so'
# The CUDA libraries the carried binaries take from the machine (NCCL for llama.cpp's llama-bench,
# which links it; PyTorch's wheels ship one where the toolkit has none).
MACHINE_CUDA_LIBS=(libcublas.so.13 libcublasLt.so.13 libnccl.so.2)
# Carry limit of one device call, less the repository's tracked files and some slack.
MAX_ARCHIVE_BYTES=$((52 * 1024 * 1024))

log() { echo "gpu_check: $*" >&2; }
# The modes live in scripts/gpu_check/, one file per kind of work (each says what it holds):
# bundle (here: prepare, verify), runtime (the GPU machine's setup and shared helpers),
# correctness, unverified, speed, serve and split.
for part in bundle runtime correctness unverified speed serve split; do
  # shellcheck source=/dev/null
  source "scripts/gpu_check/$part.sh" || { log "cannot read scripts/gpu_check/$part.sh"; exit 1; }
done
# A mode named here with no function behind it would only fail on the GPU machine, minutes into
# a borrowed run: `gpu_check.sh selfcheck` (a ctest) holds the two lists together here.
MODE_FUNCTIONS=(tests:run_tests types:run_types bench:run_bench sanitize:run_sanitize profile:run_profile
                peer:run_peer gemv:run_gemv gemm:run_gemm streams:run_streams serve:run_serve engine:run_engine
                models:run_models catalog:run_catalog_stand_in unverified:run_unverified int8:run_int8_bench
                quick:run_quick moe:run_routed_moe split:run_split)

# selfcheck [MODE:FUNCTION...]: every mode's function is defined (the arguments add pairs to
# check, which is how its test plants a missing one).
selfcheck() {
  local pair missing=0
  for pair in "${MODE_FUNCTIONS[@]}" "$@"; do
    declare -F "${pair#*:}" > /dev/null || { log "mode ${pair%%:*}: no function ${pair#*:}"; missing=1; }
  done
  [ "$missing" -eq 0 ] && log "every mode has its function (${#MODE_FUNCTIONS[@]} modes)"
  return "$missing"
}

# The function of mode $1, or nothing.
mode_function() {
  local pair
  for pair in "${MODE_FUNCTIONS[@]}"; do
    [ "${pair%%:*}" = "$1" ] && { echo "${pair#*:}"; return; }
  done
}

case "$MODE" in
  prepare) prepare ;;
  verify) verify "${2:-}" ;;
  selfcheck) shift; selfcheck "$@" ;;
  *)
    # Several modes may follow each other in one call (e.g. "tests types"), one setup for all;
    # every one is checked before the setup, so a typo costs no device time.
    for mode in "$@"; do
      if [ "$mode" != all ] && [ -z "$(mode_function "$mode")" ]; then
        mode_names=$(IFS='|'; echo "${MODE_FUNCTIONS[*]%%:*}")
        echo "usage: $0 [prepare|verify [ROOT]|selfcheck|all|$mode_names ...]: unknown mode $mode" >&2
        exit 2
      fi
    done
    setup_runtime
    for mode in "$@"; do
      case "$mode" in
        all) run_tests; run_engine; run_models; run_split; run_types; run_bench ;;
        *) "$(mode_function "$mode")" ;;
      esac
    done
    if [ -n "${OUT:-}" ]; then
      (cd "$WORK" && tar -czf "$OUT/gpu_logs.tgz" $(ls *.log *.csv *.err *.json 2>/dev/null))
    fi ;;
esac
