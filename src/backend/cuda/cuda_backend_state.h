#pragma once
// Internal to the CUDA backend: what a CudaBackend holds, shared by the files that implement its
// ops (cuda_backend.cc, cuda_row_ops.cc, cuda_matmul.cc, cuda_attention.cc and the other cuda_*.cc).
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <memory>
#include <string_view>
#include <vector>

#include "backend/common/composed_moe_ffn.h"
#include "backend/common/composed_shift_keys.h"
#include "backend/common/expert_router.h"
#include "backend/cuda/attention_plan.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/device_memory.h"
#include "backend/cuda/fused_input_quantization.h"
#include "backend/cuda/step_graphs.h"
#include "backend/cuda/op_timer.h"
#include "backend/cuda/step_timer.h"
#include "backend/cuda/step_uploads.h"
#include "backend/cuda/tensor_core_prefill_plan.h"

namespace lumen::backend {

struct CudaBackend::State {
  int device = 0;
  int compute_capability = 0;  // major * 10 + minor
  CudaBackendOptions options;
  cudaStream_t stream = nullptr;
  cublasHandle_t cublas = nullptr;
  std::shared_ptr<cuda::AllocationRegistry> registry = std::make_shared<cuda::AllocationRegistry>();
  std::unique_ptr<cuda::HostUploads> uploads;
  std::unique_ptr<cuda::WeightStager> stager;
  std::unique_ptr<cuda::StepUploads> step;  // the open step's metadata on the device
  // The open step's rows reduced to their argmax by a launch already queued at the end of its ops
  // (inside a recording when the step is recorded or replayed): end_step then only copies back.
  bool step_argmax_queued = false;
  std::unique_ptr<cuda::StepGraphs> graphs;  // decode steps recorded as CUDA graphs
  std::unique_ptr<cuda::StepTimer> step_timer = std::make_unique<cuda::StepTimer>();  // time_steps()
  std::unique_ptr<cuda::OpTimer> op_timer = std::make_unique<cuda::OpTimer>();        // time_ops()
  // moe_ffn and shift_keys composed from this backend's own ops; their scratch is device memory,
  // freed first.
  std::unique_ptr<common::ComposedMoeFfn> moe = std::make_unique<common::ComposedMoeFfn>();
  std::unique_ptr<common::ComposedShiftKeys> shift = std::make_unique<common::ComposedShiftKeys>();

  std::vector<void*> weights;  // device copies made by upload_weights, freed with the backend

  uint16_t* gelu_table = nullptr;  // 65536 f16 entries (backend/common/gelu_table.h)

  cuda::DeviceScratch q8_activations;  // matmul: quantized activations
  // Inside matmul_same_input (Q/K/V, gate/up): what q8_activations holds, so the outputs after
  // the first reuse it instead of quantizing the same input again.
  struct QuantizedInput {
    const float* x = nullptr;
    tensor::DType type = tensor::DType::F32;
    int64_t n_tokens = 0;
    int64_t cols = 0;
    bool operator==(const QuantizedInput&) const = default;
  };
  bool sharing_input = false;
  QuantizedInput quantized_input;
  // The same for the GEMM path's f16 conversion (gemm_x and gemm_scale): Q/K/V and gate/up of a
  // prompt convert their input once.
  QuantizedInput converted_input;
  // Which producers quantize their output for the next matmul (options.fused_input_quantization).
  cuda::FusedInputQuantization fused_inputs;
  uint64_t int8_gemm_launches = 0;     // options.int8_gemm: matmuls it ran
  uint64_t grouped_gemv_launches = 0;  // options.grouped_gemv: launches of several GEMVs
  uint64_t pipelined_gemv_launches = 0;  // GemvKernels::Pipelined: launches it took
  uint64_t expert_gemm_layers = 0;     // options.moe_device_gemm: moe_ffn_routed calls on the GEMM
  uint64_t fused_combine_calls = 0;    // options.fused_attention_combine: attention calls fused
  uint64_t glu_epilogue_launches = 0;  // options.glu_epilogue: gate/up launches with SwiGLU in them
  cuda::DeviceScratch gemm_weights;    // matmul: a chunk of f16 weight rows
  cuda::DeviceScratch gemm_x;          // matmul: f16 activations
  cuda::DeviceScratch gemm_scale;      // matmul: the activations' scale state (kernels.h)
  cuda::DeviceScratch staged_x;        // matmul: host activations copied in
  cuda::DeviceScratch staged_y;        // matmul: results bound for host memory
  cuda::DeviceScratch rows_f32;        // copy_to_host of non-f32 tensors
  cuda::DeviceScratch attention_partials;
  cuda::DeviceScratch kv_scores;      // attention_scores: a chunk of rows' probabilities
  cuda::DeviceScratch kv_score_sums;  // attention_scores: the call's sums per slot and KV head
  cuda::DeviceScratch kv_gathered;    // gather_kv_rows: the kept slices, between read and write
  cuda::DeviceScratch attention_vector_stats;
  // The fused combine's counts (AttentionParams::combine_counters), one per decode item.
  cuda::ZeroedCounters attention_combine_counters;
  // The GLU epilogue (options.glu_epilogue): its counts, one per 32 rows of the FFN, and SwiGLU's
  // quantized output, which cannot share q8_activations: the launch that writes it still reads its
  // own input from there.
  cuda::ZeroedCounters glu_epilogue_counters;
  cuda::DeviceScratch glu_q8_activations;
  cuda::DeviceScratch encoder_k_f16, encoder_v_f16;  // bidirectional_attention on the tensor cores
  // moe_ffn_routed (cuda_routed_moe.cc): the pairs' gate, up and down outputs, the shared
  // expert's, the quantized inputs of the two expert GEMVs, the f16 inputs of the two expert GEMMs
  // and their scale states, and the pairs grouped by expert; for the path grouped on the host,
  // the gathered rows, the grouping and each pair's row.
  struct {
    cuda::DeviceScratch gate, up, down, shared_gate, shared_up, shared_down, x_q8, act_q8, groups;
    cuda::DeviceScratch x_f16, act_f16, f16_scales;
    cuda::DeviceScratch gathered, pair_rows_device;
    common::Routing routing;
    common::ExpertGroups host_groups;
    std::vector<int32_t> pair_rows;
  } routed_moe;

  // The last attention plan, what it was made from, and where its arrays are on the device
  // (see cuda_attention.cc): every layer of a forward pass reuses it.
  std::vector<int64_t> plan_key;
  // ALiBi's slopes for the last (max_bias, heads) asked for: every layer asks the same.
  std::vector<float> alibi_slopes;
  float alibi_max_bias = 0.0f;
  cuda::AttentionPlan plan;
  struct {
    const cuda::AttentionSeq* seqs = nullptr;
    const int32_t* block_tables = nullptr;
    const cuda::AttentionItem* items = nullptr;
    const cuda::AttentionTask* tasks = nullptr;
    const uint8_t* masks = nullptr;
    const int32_t* positions = nullptr;
    const int32_t* key_ends = nullptr;
  } plan_device;
  // The tensor-core prefill attention's last plan (tensor_core_prefill_plan.h), keyed as above.
  std::vector<int64_t> prefill_plan_key;
  cuda::DevicePrefillPlan prefill_plan_device;

  ~State();

  // Throws with the name of the op if the last launch failed.
  void check_launch(std::string_view op) const;
  // Tells the kernels' launch functions whether this stream's kernels are dependent launches
  // (options.dependent_launch, dependent_launch_streams.h).
  void apply_dependent_launch() const;
  bool is_device(const void* p) const { return registry->is_device(p); }
};

}  // namespace lumen::backend
