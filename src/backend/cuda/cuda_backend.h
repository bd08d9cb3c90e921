#pragma once
// The CUDA implementation of the Backend interface: weights, activations and the paged K/V
// cache live in device memory, every op is a kernel on one stream of one device. The host
// spans the interface passes (positions, token ids, block tables) come to the device once per
// step through the step boundary; outside a step (tests, tools) each op uploads its own.
//
// Numerics follow the CPU backend, which follows llama.cpp, so the two can be compared op by
// op (tests/unit/backend_cuda): activations are quantized to Q8_0 / Q8_1 / Q8_K with the same
// rounding before integer dot products, rms_norm sums squares in double, rope builds its
// angles with the same f32 recurrence, GeGLU reads the same f16 table, and attention over an
// f16 V cache rounds probabilities to f16 after a whole-row softmax as llama.cpp's default
// path does. What differs is the order of float sums (many threads instead of one loop), and
// large batches, whose matmuls go through cuBLAS on f16 operands.
//
// This header includes no CUDA header, so plain C++ code (the CLI) can create the backend.
#include <cstddef>
#include <cstdint>
#include <memory>

#include "backend/backend.h"
#include "backend/cuda/routed_moe_plan.h"

namespace lumen::backend {

// ByMeasurement: the streaming kernels for float weights (F32, F16, BF16: a 1B BF16 model decoded
// 1.7x faster on an H200, 2026-11-27, 1365 GB/s against 385) and the tiled ones for quantized
// weights but Q8_0 (gemv.cu's results bit for bit, rows read with 16-byte loads: decode 5-10%
// faster than the one-warp kernels on an H200, 2026-11-28, BENCHMARKS.md; Q8_0's 34-byte blocks
// read faster with the one-warp kernels on 5 of the 8 decode shapes). Tiled: every quantized
// type tiled. Pipelined: the tiled kernels' tiles and bits, each warp with its next tile in flight
// and the launch sized to the device, float weights too (gemv_pipelined.cu; written 2026-11-30
// without a GPU, not a default until one has measured it).
enum class GemvKernels : uint8_t { ByMeasurement, Warp, Stream, Tiled, Pipelined };

struct CudaBackendOptions {
  // matmuls over at most this many tokens run the quantized GEMV kernels (8 tokens per pass
  // over the weights); more tokens go through dequantize-to-f16 + cuBLAS. A large value keeps
  // every matmul on the GEMV kernels, whose result for a token does not depend on the rest of
  // the batch (what the serving core's bit-exactness tests assume). Decode of 9-64 streams
  // dequantizes every weight to f16 each step on the cuBLAS path; the tiled GEMV takes such a
  // batch in one launch, reading a row of up to 4096 values once for all its tokens.
  // LUMEN_CUDA_MAX_GEMV_TOKENS=N sets it for any binary, to measure the two against each other.
  int64_t max_gemv_tokens = 8;
  // f16 V cache: reproduce llama.cpp's default attention (whole-row softmax, probabilities
  // rounded to f16; two passes over K). false: one online-softmax pass in f32 (faster, differs
  // from the CPU backend by the f16 rounding of the probabilities; 2 launches a layer instead of
  // 4). The one pass by default since an H200 run (2026-11-29): decode of llama-1b / llama-8b
  // Q4_0 618 -> 690 and 202 -> 220 tokens/s, its greedy tests against the CPU passed, and the
  // engine's tests passed with it and fused_input_quantization; with the two passes,
  // fused_input_quantization and tensor_core_prefill together they did not (swap preemption gave
  // the same token over and over: see tensor_core_prefill).
  // LUMEN_CUDA_EXACT_ATTENTION=1 (or =0) sets it for any binary, for A/B runs.
  bool exact_f16_attention = false;
  // Which GEMV kernels run batch-1..max_gemv_tokens matmuls: gemv_stream.cu's (a block of 4
  // warps per weight row, 16-byte loads) or gemv_tiled.cu's (a warp per row, 16-byte loads)
  // where the rows allow, else gemv.cu's (one warp per row), which are their reference. The environment variable
  // LUMEN_CUDA_GEMV=stream, =warp, =tiled, =pipelined or =auto sets it for any binary, for A/B runs.
  GemvKernels gemv = GemvKernels::ByMeasurement;
  // Declare add_rms_norm (the residual add and the next norm in one launch), so the transformer
  // uses it: bit for bit add then rms_norm (its conformance rows and the greedy model tests passed
  // on an H200, 2026-11-28; 16-32 launches fewer a step). LUMEN_CUDA_ADD_RMS_NORM=0 (or =1) sets
  // it for any binary.
  bool fused_add_rms_norm = true;
  // Record decode steps as CUDA graphs and replay them (step_graphs.h): the host queues one
  // launch a step instead of a few hundred. Its decode steps run the plan-free decode attention
  // (decode_attention.h), bit for bit the planned one's work. On since an H200 run (2026-11-29)
  // passed CudaStepGraphs and the greedy tests with it: a 1B Q4_0 decode 418 -> 507 tokens/s.
  // LUMEN_CUDA_GRAPHS=0 (or =1) sets it for any binary.
  bool step_graphs = true;
  // Declare token-tree attention (speculative decoding's trees: SequenceSlice::visible and
  // positions in the attention kernels, copy_kv_row), written without a GPU on 2026-11-28; on
  // since CudaTreeAttention.MatchesCpu passed on an H200 (2026-11-29). LUMEN_CUDA_TREE_ATTENTION=0.
  bool tree_attention = true;
  // Declare q8_0 and q4_0 KV caches (see do_supports_kv_type): on since CudaKvCodec and the
  // conformance rows passed on an H200 (2026-11-29, after kv_codec.h's scale store was fixed).
  // LUMEN_CUDA_QUANTIZED_KV=0.
  bool quantized_kv_cache = true;
  // Declare state-space layers (Mamba 2's ssm_conv and ssm_scan, ssm.cu), written without a GPU on
  // 2026-11-28; on since their conformance rows and the Mamba 2 model test passed on an H200
  // (2026-11-29). LUMEN_CUDA_STATE_SPACE=0.
  bool state_space = true;
  // Declare multi-head latent attention (DeepSeek 2/3: a cache whose values are the leading part
  // of its keys' rows; attention.cu reads them from the K tile), written without a GPU on
  // 2026-11-28; on since the latent conformance rows and the deepseek2 model test passed on an
  // H200 (2026-11-29). LUMEN_CUDA_LATENT_ATTENTION=0.
  bool latent_attention = true;
  // Declare importance-based KV eviction (attention_scores and gather_kv_rows, kv_eviction.cu:
  // H2O and SnapKV), written without a GPU on 2026-11-28; on since CudaKvEviction passed on an
  // H200 (2026-11-29). LUMEN_CUDA_KV_EVICTION=0.
  bool kv_eviction = true;
  // Declare the LayerNorm blocks (layer_norm, gelu_erf, gelu_tanh, activation, encoder_ops.cu:
  // BLOOM, the encoders, vision towers), written without a GPU; on since their conformance rows,
  // the bloom model test and the vision towers passed on an H200 (2026-11-29, gelu_erf after its
  // tail moved to erfc). LUMEN_CUDA_LAYER_NORM=0.
  bool layer_norm = true;
  // Declare an encoder's attention (bidirectional_attention, encoder_ops.cu: bge, nomic-bert),
  // written without a GPU; on since its conformance rows and the encoder model tests passed on an
  // H200 (2026-11-29). LUMEN_CUDA_ENCODER=0.
  bool encoder = true;
  // An encoder's attention (and a vision tower's: SigLIP's heads of 72 padded to 80) on the
  // tensor-core prefill kernel (tensor_core_prefill.cu: f16 queries, keys and values,
  // probabilities rounded to f16, f32 sums), where the encoder kernel computes each row in double
  // on the CUDA cores, a warp a row and head: a Gemma 3 image's 4 096 patches x 16 heads x 27
  // layers. Differs from the CPU by f16's rounding (CudaEncoderTensorCores holds it to 2e-3).
  // On since that test passed on an H200 (2026-11-29: a SigLIP-shaped call 0.53 -> 0.068 ms).
  // LUMEN_CUDA_ENCODER_TENSOR_CORES=0.
  bool encoder_tensor_cores = true;
  // Declare ALiBi and spans that attend both ways in the paged attention (attention.cu: BLOOM,
  // Gemma 3's images), written without a GPU; on since the alibi and span conformance rows and
  // the bloom model test passed on an H200 (2026-11-29). LUMEN_CUDA_ALIBI=0,
  // LUMEN_CUDA_SPAN_ATTENTION=0.
  bool alibi = true;
  bool span_attention = true;
  // Declare attention sinks (gpt-oss's learned logit per head: AttentionConfig::sinks), which the
  // split-KV kernels' merge of a row's splits and the tensor-core prefill's row end add to the
  // row's softmax (attention_sinks.h), written without a GPU on 2026-12-02 and checked on the
  // simulated device against the CPU (CudaAttentionSinks); off until those tests and the sinks'
  // conformance rows have passed on a GPU. LUMEN_CUDA_ATTENTION_SINKS=1.
  bool attention_sinks = false;
  // Declare RWKV 7 (rwkv_wkv7 and the element-wise rwkv7_* ops, rwkv7.cu), written without a GPU
  // on 2026-11-29; on since their conformance rows and the rwkv7 model test passed on an H200
  // (2026-11-29). LUMEN_CUDA_RWKV7=0.
  bool rwkv7 = true;
  // Declare gpt-oss's experts (BackendFeature::BiasedExperts: the experts' biases and clamped
  // SwiGLU in moe_ffn and moe_ffn_routed, biased_experts.cu; the router's softmax over the chosen
  // logits in route_experts.cu), written without a GPU on 2026-12-02 and checked on the simulated
  // device (their conformance rows: scripts/cuda_sim_check.sh --conformance). Off until a GPU run
  // passes them. LUMEN_CUDA_BIASED_EXPERTS=1.
  bool biased_experts = false;
  // Greedy rows come back as their argmax (row_argmax.cu; StepMetadata::row_forms), not as
  // vocabulary-wide rows: 12 bytes a row instead of 4 x vocab. Written without a GPU; on since
  // CudaRowArgmax and the engine's serving and decoding tests passed on an H200 (2026-11-29).
  // LUMEN_CUDA_DEVICE_ARGMAX=0.
  bool device_argmax = true;
  // Rows of draws confined by top-k, top-p or min-p come back as their 64 leading candidates
  // (row_leading.cu; RowForm::Leading): 536 bytes a row. Written without a GPU; on since
  // CudaRowLeading and the sampled engine tests passed on an H200 (2026-11-29).
  // LUMEN_CUDA_DEVICE_LEADING=0.
  bool device_leading = true;
  // Sequences of at least 16 causal rows in an attention call over an f16 cache (head dims 64,
  // 128, 256; no ALiBi) go through the tensor-core prefill attention (tensor_core_prefill.cu:
  // FlashAttention-2's scheme on mma.sync, probabilities rounded to f16 before their sum), the
  // rest through the split-KV kernels. A row's result then differs from its decode step's by
  // that rounding, as the cuBLAS matmuls of large batches already differ from the GEMV. Written
  // without a GPU (its per-lane arithmetic checked on a CPU by emulating a warp).
  // CudaTensorCorePrefill and the greedy tests passed on an H200 (2026-11-29: a 1B Q4_0 pp512
  // 11.6k -> 14.4k tokens/s, the prompt's attention 9.2 -> 1.4 ms), but the engine's tests with
  // it on (and the two-pass attention and fused_input_quantization) failed. Two of those compare
  // rows that its rounding tells apart by design (beam search's exact logprobs against a fresh
  // forward pass over prompt + beam, whose rows take the tensor cores where the engine's decoded
  // ones take the split-KV kernels; prompt logprobs against a token-at-a-time reference), beside
  // the chunking differences the fixture keeps out. Swap preemption did not: it gave the same
  // token over and over, which no rounding explains. On the simulated device (tests/unit/cuda_sim,
  // 2026-11-30) swap preemption failed so with the defaults as well: the step graphs replayed the
  // test's first engine's recording for its second (fixed: step_graphs.h), after which it passes
  // there with all three on. Off until a GPU run agrees (gpu_check.sh engine).
  // LUMEN_CUDA_TENSOR_CORE_PREFILL=1.
  bool tensor_core_prefill = false;
  // An RMSNorm (plain or after the residual add), a SwiGLU or an attention whose output the next
  // op's GEMV quantizes writes that quantization itself, in the same launch (norm_quantize.cu,
  // attention.cu's combine for Q8_0 / Q8_1, fused_input_quantization.h): all 65 of a 1B Q4_0
  // model's quantization launches a decode step (49 with K-quant output projections). Its
  // norms also load a row at once rather than an element a thread at a time. The same bits as
  // without (the shared block arithmetic of q8_block_quantize.cuh, the norm's sum in the same
  // order). Written without a GPU; on since CudaFusedInputQuantization and the greedy and
  // engine tests passed on an H200 (2026-11-29). LUMEN_CUDA_FUSED_QUANTIZE=0.
  bool fused_input_quantization = true;
  // RoPE's threads load 8 pairs each before they rotate one (rope.cu), where each loaded, rotated
  // and stored a pair before its next load: the H200 profile put a decode step's rope at 6.2 us a
  // launch for 2 048 values, a memory latency per pair in a row. The same arithmetic per pair.
  // Written without a GPU; on since the rope conformance rows and the greedy model tests passed
  // with it on an H200 (2026-11-29). LUMEN_CUDA_ROPE_LOADS_FIRST=0.
  bool rope_loads_first = true;
  // The outputs of one input (Q/K/V, gate/up: matmul_same_input, matmul_glu) whose weights share
  // a quantized type and row width run as one tiled GEMV launch (launch_gemv_quantized_tiled_group),
  // each row's product the bits its own launch writes: 3 launches fewer a layer, and the small K
  // and V matrices (a few hundred rows: under one wave of blocks) fill the GPU beside Q's. On since
  // CudaGroupedGemv and the greedy tests passed on an H200 (2026-11-29: with the two above, a 1B
  // Q4_0 decode from graphs 507 -> 600 tokens/s). LUMEN_CUDA_GROUPED_GEMV=0.
  bool grouped_gemv = true;
  // Declare rope_store_kv (rope_store_kv.cu): a layer's query and key rotation and its K/V store
  // in one launch instead of three, bit for bit the three (each step is the separate kernels'
  // device function). On since its conformance rows and the greedy model tests passed on an H200
  // (2026-11-29). LUMEN_CUDA_ROPE_STORE_KV=0.
  bool fused_rope_store_kv = true;
  // Declare route_experts and moe_ffn_routed (route_experts.cu, gemv_experts.cu): a MoE layer's
  // router, experts and combine on the device, where the composed moe_ffn copied the router's
  // logits to the host and waited for them every layer, and ran 4 launches or more per chosen
  // expert. Decode-sized batches of quantized experts run on the device, and prompts of small
  // experts (moe_gemv_macs_per_expert); others copy the routing back once a layer. On since its
  // conformance rows and the MoE model tests passed on an H200 (2026-11-29: a
  // Qwen3-MoE-shaped model's pp512 1.3k -> 14.4k tokens/s, decode 252 -> 600).
  // LUMEN_CUDA_ROUTED_MOE=0.
  bool routed_moe = true;
  // Matmuls past max_gemv_tokens over Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 or Q2_K .. Q6_K weights run
  // the int8 tensor-core GEMM (gemm_int8.cu, int8_gemm_math.h; gemm_int8_kquant.cu,
  // int8_gemm_kquant_math.h) on the GEMV's quantized activations,
  // straight from the weights' blocks, where the default way dequantizes the whole matrix to f16
  // in memory and runs cuBLAS, every step of a prompt or of a decode batch past 8 streams. The
  // GEMV's arithmetic per block (exact integer sums, the same float scaling), so its results
  // differ from the GEMV's by the order of the blocks' f32 sums only, where the f16 way rounds
  // every weight and activation to f16. Written without a GPU (its per-lane steps checked on a
  // CPU by emulating a block's warps, tests/unit/cuda_host/int8_gemm*_test.cc); off until a GPU
  // run has checked it (CudaInt8Gemm) and measured it against the f16 way.
  // LUMEN_CUDA_INT8_GEMM=1 (or =0) sets it for any binary.
  bool int8_gemm = false;
  // With routed_moe: a batch past decode size (a prompt) also runs its routed experts on the
  // expert GEMV, with no id copied to the host, while an expert's average share of its
  // multiply-adds is at most this; past it, the ids come to the host and each chosen expert runs
  // through the matmuls (f16 tensor-core GEMMs). routed_moe_plan.h has the choice and why.
  // LUMEN_CUDA_MOE_GEMV_MACS=N sets it for any binary (0: prompts always the host way), to
  // measure the two against each other.
  int64_t moe_gemv_macs_per_expert = cuda::kDefaultMoeGemvMacsPerExpert;
  // With routed_moe: prompts past that budget (and prompts of F16 / BF16 experts) run their
  // routed experts on the device's own tensor-core GEMM over the device's grouping
  // (gemm_experts.cu), with the host way's f16 arithmetic and no id copied to the host, where the
  // host way waits for the ids every layer. On since CudaExpertGemm passed on an H200 (2026-11-29:
  // a Mixtral-sized layer of 512 tokens 17.5 -> 7.4 ms, 48.6 TFLOPS; a Qwen3-MoE-shaped pp2048
  // 22.4k -> 28.0k tokens/s). LUMEN_CUDA_MOE_DEVICE_GEMM=0.
  bool moe_device_gemm = true;
  // Queue the kernels of a decode step's chain (the RMSNorm and SwiGLU producers, the GEMVs,
  // rope with the K/V store, attention, activation quantization, the logits' argmax) as
  // programmatic dependent launches (dependent_launch.cuh; compute capability 9.0 or later, else
  // ignored): each may start while the kernel ahead of it drains, and waits for it before it
  // reads what it wrote. The GEMVs bring their rows into L2 before that wait. A 1B decode step
  // is ~150 kernels of a few microseconds, each with its launch and drain between. The same
  // arithmetic, so the same bits. Written without a GPU; off until a GPU run has checked it
  // (CudaDependentLaunch) and measured it. LUMEN_CUDA_DEPENDENT_LAUNCH=1.
  bool dependent_launch = false;
  // A decode step's one-pass attention (not exact_f16_attention; the plan-free decode attention of
  // the steps laid out for CUDA graphs, step_graphs) merges each item's splits in
  // the block that finishes the item's last split (attention.cu, combine_if_last: a count per
  // item, a fence, reads through L2), where a second launch merged them: one launch fewer a
  // layer (16 a 1B step; the H200 profile of 2026-11-27 put a combine launch at ~5 us). The
  // combine's loop in the same order, so the same bits. Written without a GPU (checked bit for bit
  // on the simulated device, FusedAttentionCombine); off until a GPU run has checked it under
  // real concurrency and measured it. LUMEN_CUDA_FUSED_COMBINE=1.
  bool fused_attention_combine = false;
  // A decode step's SwiGLU computed and quantized in the gate/up GEMV's launch (gemv_tiled.cu's
  // epilogue: the block that finishes a 32-row slice of gate and up does the slice, with a count per
  // slice as the fused combine keeps per item), where the plain way launches SwiGLU after it: one
  // launch fewer a layer (16 a 1B step). For gate and up of Q4_0, Q4_1, Q5_0 or Q5_1 in one
  // tiled launch, with a down projection reading Q8_0 or Q8_1; the rest keeps the two
  // launches. swiglu_value and quantize_q8_32_warp, so the same bits. Written without a GPU (checked
  // bit for bit on the simulated device, GluEpilogue); off until a GPU run has checked it under
  // real concurrency and measured it. LUMEN_CUDA_GLU_EPILOGUE=1.
  bool glu_epilogue = false;
};

class CudaBackend final : public Backend {
 public:
  // Uses CUDA device `device` (throws lumen::Error when it does not exist).
  explicit CudaBackend(int device, CudaBackendOptions options = {});
  ~CudaBackend() override;
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  std::string_view name() const override { return "cuda"; }
  // cudaMemGetInfo on this backend's device.
  std::optional<DeviceMemory> device_memory() const override;
  const CudaBackendOptions& options() const;
  void set_options(const CudaBackendOptions& options);
  // Whether this backend's step kernels are queued as dependent launches: options().dependent_launch
  // on a device of compute capability 9.0 or later.
  bool dependent_launches() const;
  // How many GEMVs found their input quantized by the op before them
  // (CudaBackendOptions::fused_input_quantization), since the backend was made.
  uint64_t prequantized_inputs() const;
  // How many launches ran several GEMVs of one input (CudaBackendOptions::grouped_gemv).
  uint64_t grouped_gemv_launches() const;
  // GEMV launches the pipelined kernels ran (GemvKernels::Pipelined), counted on the host as ops
  // run (a replayed step's are not).
  uint64_t pipelined_gemv_launches() const;
  // Matmuls the int8 GEMM ran (options.int8_gemm), counted on the host as the op runs.
  uint64_t int8_gemm_launches() const;
  // How many moe_ffn_routed calls ran their experts on the device's tensor-core GEMM
  // (CudaBackendOptions::moe_device_gemm; routed_moe_plan.h), since the backend was made.
  uint64_t expert_gemm_layers() const;
  // Attention calls that merged their splits in their own launch (options.fused_attention_combine),
  // counted on the host as the op runs (a replayed step's are not).
  uint64_t fused_combine_calls() const;
  // matmul_glu calls that ran SwiGLU in the gate/up launch (options.glu_epilogue), counted on the
  // host as the op runs (a replayed step's are not).
  uint64_t glu_epilogue_launches() const;

  // Raw copies between host memory and device memory of this backend (tests, tools). Both wait
  // for the copy (and everything queued before it) to finish.
  void upload(void* device_dst, const void* host_src, size_t bytes);
  void download(void* host_dst, const void* device_src, size_t bytes);
  // Waits for all queued work; throws lumen::Error naming the first failed kernel's error.
  void synchronize();

  struct State;

 protected:
  // The optional features with CUDA kernels or a composition of them (moe_ffn: every expert
  // through get_rows, matmul_glu, matmul, scale and add; shift_keys: get_rows, rope, store_kv;
  // rotated KV caches: rotate_heads;
  // common/composed_*.h); the weight
  // types the GEMV and get_rows kernels read; f32, f16, bf16, FP8 E4M3, q8_0 and q4_0 KV caches
  // (kv_codec.h; see the .cc); heads up to the attention kernels' width. Everything else is refused at load
  // (Backend::require).
  bool do_supports(BackendFeature feature) const override;
  bool do_supports_weight_type(tensor::DType type) const override;
  bool do_supports_kv_type(tensor::DType type) const override;
  int64_t do_max_attention_head_dim() const override;
  int64_t do_max_latent_attention_head_dim() const override;

  // Device memory, zero-filled.
  std::unique_ptr<Buffer> do_allocate(size_t bytes) override;
  // Page-locked: the step's logits copy back at the link's speed, not through a staging copy.
  std::unique_ptr<Buffer> do_allocate_host(size_t bytes) override;
  // Copies the weights to device memory through pinned staging, asynchronously (ops queued
  // later see them). The copy lives as long as the backend.
  TensorView do_upload_weights(tensor::DType type, std::array<int64_t, 4> dims, const void* host_data) override;
  // Waits for all queued work, then converts src's rows to f32 on the host.
  void do_copy_to_host(const TensorView& src, float* dst) override;
  void do_copy_from_host(const float* src, TensorView& dst) override;

  // y may be host memory (outside a step, tests): the result is then computed into device
  // scratch and copied back before returning.
  void do_matmul(const TensorView& w, const TensorView& x, TensorView& y) override;
  void do_matmul_same_input(const TensorView& x, std::span<const MatmulOutput> outputs) override;
  void do_matmul_glu(const TensorView& gate_w, const TensorView& up_w, const TensorView& x, Glu glu, TensorView& gate,
                     TensorView& up) override;
  void do_moe_ffn(const TensorView& x, std::span<const ExpertWork> experts, int64_t n_slots, Glu glu,
                  TensorView& out) override;
  // cuda_routed_moe.cc
  void do_route_experts(const TensorView& logits, const TensorView* selection_bias, const RouterConfig& config,
                        TensorView& experts, TensorView& weights, TensorView* counts) override;
  void do_moe_ffn_routed(const TensorView& x, const TensorView& experts, const TensorView& weights,
                         const RoutedExperts& matrices, Glu glu, TensorView& out) override;
  void do_get_rows(const TensorView& table, std::span<const int32_t> ids, TensorView& out) override;
  void do_rms_norm(const TensorView& x, const TensorView& weight, float eps, TensorView& out) override;
  void do_add_rms_norm(const TensorView& a, const TensorView& b, const TensorView& weight, float eps, TensorView& sum,
                       TensorView& out) override;
  bool do_has_op(OpKind op) const override;
  void do_add(const TensorView& a, const TensorView& b, TensorView& out) override;
  void do_add_row(TensorView& x, const TensorView& row) override;
  void do_scale(TensorView& x, float factor) override;
  void do_rotate_heads(TensorView& x, int64_t head_dim) override;
  void do_swiglu(const TensorView& gate, const TensorView& up, TensorView& out) override;
  void do_geglu(const TensorView& gate, const TensorView& up, TensorView& out) override;
  // config.freq_factors may point to host or device memory.
  void do_rope(TensorView& x, std::span<const int32_t> positions, const RopeConfig& config) override;
  void do_rope_store_kv(TensorView& q, TensorView& k, const TensorView& v, std::span<const int32_t> positions,
                        const RopeConfig& config, std::span<const SequenceSlice> seqs, KvLayer& cache) override;
  void do_store_kv(const TensorView& k, const TensorView& v, std::span<const SequenceSlice> seqs,
                   KvLayer& cache) override;
  void do_copy_kv_block(KvLayer& cache, int64_t src, int64_t dst) override;
  void do_copy_kv_row(KvLayer& cache, int64_t src, int64_t dst) override;
  void do_shift_keys(KvLayer& cache, std::span<const int32_t> blocks, int32_t delta, const RopeConfig& config,
                     int64_t head_dim) override;
  void do_read_kv_block(const KvLayer& cache, int64_t block, void* host_k, void* host_v) override;
  void do_write_kv_block(KvLayer& cache, int64_t block, const void* host_k, const void* host_v) override;
  void do_attention(const TensorView& q, const KvLayer& cache, std::span<const SequenceSlice> seqs,
                    const AttentionConfig& config, TensorView& out) override;
  // Importance-based KV eviction (cuda_kv_eviction.cc): the scores summed on the device and added
  // into the host table once; the kept slices gathered, then written.
  void do_attention_scores(const TensorView& q, const KvLayer& cache, const SequenceSlice& seq, int64_t first_row,
                           const AttentionConfig& config, float* scores, int64_t slot_stride) override;
  void do_gather_kv_rows(KvLayer& cache, std::span<const int32_t> src_table, std::span<const int32_t> dst_table,
                         std::span<const int32_t> keep, int64_t head_dim, int64_t value_dim) override;
  // The LayerNorm blocks and an encoder's attention (cuda_encoder_ops.cc).
  void do_layer_norm(const TensorView& x, const TensorView& weight, const TensorView& bias, float eps,
                     TensorView& out) override;
  void do_gelu_erf(TensorView& x) override;
  void do_gelu_tanh(TensorView& x) override;
  void do_activation(TensorView& x, Activation kind) override;
  void do_bidirectional_attention(const TensorView& q, const TensorView& k, const TensorView& v,
                                  std::span<const SequenceSlice> seqs, const AttentionConfig& config,
                                  TensorView& out) override;
  // RWKV 7 (cuda_rwkv7.cc).
  void do_rwkv_wkv7(const Wkv7Rows& rows, int64_t head_size, std::span<const Wkv7Sequence> seqs,
                    TensorView& out) override;
  void do_rwkv7_norm(const TensorView& x, const TensorView& weight, const TensorView& bias, double eps, int64_t group,
                     TensorView& out) override;
  void do_rwkv7_token_shift(const TensorView& x, std::span<const TokenShiftSequence> seqs, const TensorView& mixes,
                            TensorView& out) override;
  void do_rwkv7_activation(TensorView& x, Rwkv7Activation f) override;
  void do_rwkv7_value_residual(TensorView& v, const TensorView& first, const TensorView& mix,
                               const TensorView& v0) override;
  void do_rwkv7_keys(Rwkv7KeyRows& rows, const Rwkv7KeyWeights& weights, int64_t head_size) override;
  void do_rwkv7_bonus_gate(TensorView& out, const TensorView& r, const TensorView& k, const TensorView& v,
                           const TensorView& g, const TensorView& r_k, int64_t head_size) override;
  // Mamba 2 (cuda_ssm.cc): a thread per channel, or 8 per channel holding its state in registers.
  void do_ssm_conv(const TensorView& x, const TensorView& weight, const TensorView& bias,
                   std::span<const SsmSequence> seqs, TensorView& out) override;
  void do_ssm_scan(const TensorView& x, const TensorView& dt, const TensorView& b, const TensorView& c,
                   const SsmScanWeights& weights, std::span<const SsmSequence> seqs, TensorView& y) override;

  // The step boundary: begin_step copies the step's metadata (token ids, positions, logit rows,
  // each layer group's slot mapping) to device memory in one transfer; ops given those arrays
  // read the device copies (step_uploads.h). The logits stay in device memory until end_step's
  // one copy back and synchronization.
  void do_begin_step(const StepMetadata& step) override;
  TensorView do_step_logits() override;
  void do_end_step() override;
  void do_abort_step() noexcept override;
  void do_copy_logit_rows(std::span<const int32_t> rows, int64_t width, float* logits) override;
  // With step_graphs on, a decode step runs from its shape's CUDA graph (step_graphs.h).
  void do_run_replayable(const std::function<void()>& ops) override;
  StepReplayStats do_step_replay_stats() const override;
  // CUDA events at begin_step and after end_step's copies back (step_timer.h).
  void do_time_steps(bool on) override;
  // CUDA events, each step held back until the host first waits for it (op_timer.h, op_hold.h).
  bool do_time_ops(bool on) override;
  void do_mark_op_time() override;
  std::vector<double> do_take_op_times() override;
  std::optional<DeviceCeilings> do_measure_device_ceilings() override;
  StepDeviceTime do_step_device_time() const override;

 private:
  // Outputs `members` of a matmul_same_input in one grouped GEMV launch (cuda_matmul.cc).
  void matmul_grouped(const TensorView& x, std::span<const MatmulOutput> outputs, std::span<const size_t> members);
  bool matmul_glu_epilogue(const TensorView& gate_w, const TensorView& up_w, const TensorView& x, TensorView& gate,
                           TensorView& up);
  // moe_ffn_routed for what the expert GEMV does not take (routed_moe_plan.h): the pairs grouped
  // on the host, each chosen expert's down outputs in `down`, expert after expert; returns each
  // pair's row there (cuda_routed_moe.cc).
  const int32_t* experts_grouped_on_host(const TensorView& x, const TensorView& experts, int64_t k,
                                         const RoutedExperts& m, Glu glu, float*& down);

  std::unique_ptr<State> state_;
};

// `options` with the LUMEN_CUDA_* environment variables applied (each option's comment names its
// variable), for A/B runs of binaries that do not expose the options; CudaBackend's constructor
// applies them (set_options does not). Throws on a malformed value.
CudaBackendOptions options_with_environment(CudaBackendOptions options);

// The number of CUDA devices this process can use (0 when there is no driver or no device).
int cuda_device_count();

// The backend for `device`, as the CLI's backend flag would create it.
std::unique_ptr<Backend> make_cuda_backend(int device, CudaBackendOptions options = {});

}  // namespace lumen::backend
