// CudaBackend::route_experts and moe_ffn_routed (CudaBackendOptions::routed_moe): a MoE layer
// whose routing never reaches the host in decode, nor in prompts while the device ways take them.
//
// route_experts runs route_experts.cu (one warp a token). moe_ffn_routed groups the (token, slot)
// pairs by expert on the device and runs every group's gate and up, the GLU, then every group's
// down, and a shared expert's ops, then the weighted sum in slot order, on one of two device ways
// (routed_moe_plan.h chooses):
//  - the expert GEMV (gemv_experts.cu: each chosen expert's rows read once per 8 of its pairs):
//    every decode-sized batch, and a prompt while its experts' work stays under
//    CudaBackendOptions::moe_gemv_macs_per_expert;
//  - the expert GEMM (gemm_experts.cu: f16 tensor cores), for prompts past it, with
//    CudaBackendOptions::moe_device_gemm.
// Other batches copy the ids to the host once and run each chosen expert through this backend's
// matmuls (GEMMs for a prompt's rows), then the same weighted sum.
// gpt-oss's experts (BackendFeature::BiasedExperts) run every way: the gate and up biases go in
// before the GLU (the clamped SwiGLU) and the down bias before the weighted sum
// (biased_experts.cu), as the CPU adds them.
#include <algorithm>
#include <vector>

#include "backend/common/expert_router.h"
#include "backend/cuda/cuda_backend_state.h"
#include "backend/cuda/cuda_ops_common.h"
#include "backend/cuda/expert_gemm_math.h"
#include "backend/cuda/graph_capture.h"
#include "backend/cuda/kernels.h"
#include "backend/cuda/routed_moe_kernels.h"
#include "util/error.h"

namespace lumen::backend {

namespace {

using tensor::DType;

// Whether w's rows are packed as its type packs them (what the GEMV kernels index by).
bool packed_rows(const TensorView& w) {
  const auto expected = tensor::row_bytes(w.type, w.dims[0]);
  return expected && *expected == w.row_bytes;
}

bool quantized_gemv_type(DType type) {
  const DType act = cuda::gemv_activation_type(type);
  return act != DType::F32 && act != DType::I8;
}

// One matrix of every group of pairs: expert e's rows times the x rows of its pairs (pair p reads
// row p / pairs_per_x_row) into row p of y.
cuda::ExpertGemvArgs expert_gemv(const TensorView& w, float* y, const cuda::ExpertPairGroups& groups,
                                 int64_t max_groups, int64_t pairs_per_x_row) {
  cuda::ExpertGemvArgs a;
  a.weights[0] = static_cast<const uint8_t*>(w.data);
  a.y[0] = y;
  a.expert_bytes = static_cast<size_t>(w.dims[1]) * w.row_bytes;
  a.row_bytes = w.row_bytes;
  a.rows = w.dims[1];
  a.cols = w.dims[0];
  a.groups = groups;
  a.max_groups = max_groups;
  a.pairs_per_x_row = pairs_per_x_row;
  a.y_stride = w.dims[1];
  return a;
}

template <typename T>
std::vector<T> download_values(CudaBackend& backend, const TensorView& t) {
  std::vector<T> host(static_cast<size_t>(t.elements()));
  backend.download(host.data(), t.data, host.size() * sizeof(T));
  return host;
}

// Floats from expert e's bias row to expert e + 1's in a {width, 1, n_experts} bias (the rows
// expert_matrix views).
int64_t bias_stride(const TensorView& bias) {
  return bias.dims[1] * static_cast<int64_t>(bias.row_bytes / sizeof(float));
}

const float* bias_data(const TensorView* bias) {
  return bias != nullptr ? static_cast<const float*>(bias->data) : nullptr;
}

}  // namespace

namespace cuda {

void expert_glu(CudaBackend::State& s, TensorView& gate, const TensorView& up, const TensorView* gate_bias,
                const TensorView* up_bias, Glu glu) {
  for (const TensorView* t : {gate_bias, up_bias}) {
    if (t != nullptr) require_device(s, *t, "moe_ffn", "expert bias");
  }
  ExpertRows rows;
  rows.n_experts = 1;
  rows.n_rows = gate.rows();
  if (stride_of(gate) != stride_of(up)) fail("moe_ffn: gate and up rows of different strides");
  if (!launch_expert_glu(static_cast<float*>(gate.data), static_cast<const float*>(up.data), stride_of(gate),
                         bias_data(gate_bias), bias_data(up_bias), rows, gate.dims[0], glu, s.stream)) {
    fail("moe_ffn: expert biases with GeGLU are not supported on the cuda backend");
  }
  s.check_launch("moe_ffn");
}

}  // namespace cuda

void CudaBackend::do_route_experts(const TensorView& logits, const TensorView* selection_bias,
                                   const RouterConfig& config, TensorView& experts, TensorView& weights,
                                   TensorView* counts) {
  State& s = *state_;
  for (const auto& [t, name] : {std::pair{&logits, "logits"},
                                {selection_bias, "selection_bias"},
                                {&experts, "experts"},
                                {&weights, "weights"},
                                {counts, "counts"}}) {
    if (t != nullptr) cuda::require_device(s, *t, "route_experts", name);
  }
  const int64_t n = logits.rows();
  if (n == 0) return;
  if (config.n_experts > cuda::kMaxDeviceRoutedExperts) {
    // More experts than a warp's shared-memory row holds: route on the host (a copy each way).
    cuda::refuse_in_capture("route_experts");
    std::vector<float> rows(static_cast<size_t>(n * config.n_experts));
    copy_to_host(logits, rows.data());
    std::vector<float> bias;
    if (selection_bias != nullptr) {
      bias.resize(static_cast<size_t>(config.n_experts));
      copy_to_host(*selection_bias, bias.data());
    }
    common::Routing routing;
    common::route_tokens(rows, config, routing, bias);
    upload(experts.data, routing.experts.data(), routing.experts.size() * sizeof(int32_t));
    upload(weights.data, routing.weights.data(), routing.weights.size() * sizeof(float));
    if (counts != nullptr) {
      std::vector<float> host_counts(static_cast<size_t>(config.n_experts));
      copy_to_host(*counts, host_counts.data());
      for (const int32_t e : routing.experts) host_counts[static_cast<size_t>(e)] += 1.0f;
      upload(counts->data, host_counts.data(), host_counts.size() * sizeof(float));
    }
    return;
  }
  cuda::RouteExpertsArgs args;
  args.logits = static_cast<const float*>(logits.data);
  args.logits_stride = cuda::stride_of(logits);
  args.bias = selection_bias != nullptr ? static_cast<const float*>(selection_bias->data) : nullptr;
  args.config = config;
  args.experts = static_cast<int32_t*>(experts.data);
  args.weights = static_cast<float*>(weights.data);
  args.counts = counts != nullptr ? static_cast<float*>(counts->data) : nullptr;
  args.n_tokens = n;
  cuda::launch_route_experts(args, s.stream);
  s.check_launch("route_experts");
}

namespace {

float* scratch_floats(CudaBackend::State& s, cuda::DeviceScratch& scratch, int64_t count) {
  return static_cast<float*>(scratch.ensure(static_cast<size_t>(count) * sizeof(float), s.stream));
}

cuda::Q8Activations scratch_q8(CudaBackend::State& s, cuda::DeviceScratch& scratch, int64_t rows, int64_t width) {
  return cuda::carve_q8_activations(scratch.ensure(cuda::q8_activation_bytes(rows, width), s.stream), rows, width);
}

// One matrix of every group of pairs on the expert GEMM: as expert_gemv, from f16 rows of x
// (x16, scaled as scale_state says). max_group_pairs: the batch's tokens.
cuda::ExpertGemmArgs expert_gemm(const TensorView& w, float* y, const cuda::ExpertPairGroups& groups,
                                 int64_t max_groups, int64_t max_group_pairs, int64_t pairs_per_x_row,
                                 const uint16_t* x16, const float* scale_state) {
  cuda::ExpertGemmArgs a;
  static_cast<cuda::ExpertGemvArgs&>(a) = expert_gemv(w, y, groups, max_groups, pairs_per_x_row);
  a.max_group_pairs = max_group_pairs;
  a.x16 = x16;
  a.scale_state = scale_state;
  return a;
}

// Every pair's down output, in pair order, without the ids leaving the device: the pairs grouped
// by expert there, then gate and up over the groups, the GLU, and down over the groups, on the
// expert GEMV (gemv_experts.cu: x quantized to Q8 blocks) or on the expert GEMM (gemm_experts.cu:
// x scaled into f16, as the host way's GEMMs take it).
float* experts_on_device(CudaBackend::State& s, const TensorView& x, const int32_t* ids, int64_t k,
                         const RoutedExperts& m, Glu glu, cuda::RoutedExpertsPath path) {
  const int64_t n = x.rows(), cols = x.dims[0], pairs = n * k;
  const int64_t ff = m.gate->dims[1], n_experts = m.gate->dims[2];
  float* gate = scratch_floats(s, s.routed_moe.gate, pairs * ff);
  float* up = scratch_floats(s, s.routed_moe.up, pairs * ff);
  float* down = scratch_floats(s, s.routed_moe.down, pairs * cols);

  // The pairs grouped by expert: as many groups as pairs, or as experts, at most.
  const int64_t max_groups = std::min(pairs, n_experts);
  auto* group_ints = static_cast<int32_t*>(s.routed_moe.groups.ensure(
      static_cast<size_t>(1 + max_groups + (max_groups + 1) + pairs) * sizeof(int32_t), s.stream));
  cuda::ExpertPairGroups groups;
  groups.n_groups = group_ints;
  groups.expert = group_ints + 1;
  groups.begin = groups.expert + max_groups;
  groups.pairs = groups.begin + max_groups + 1;
  cuda::launch_group_pairs(ids, pairs, n_experts, groups, s.stream);

  // gpt-oss: each pair's expert's biases (its id's rows), before the GLU and after down.
  const bool biased = m.gate_bias != nullptr;
  cuda::ExpertRows pair_experts;
  pair_experts.ids = ids;
  pair_experts.n_experts = n_experts;
  pair_experts.n_rows = pairs;
  const auto add_down_bias = [&] {
    if (!biased) return;
    pair_experts.bias_stride = bias_stride(*m.down_bias);
    cuda::launch_add_expert_bias(down, cols, bias_data(m.down_bias), pair_experts, cols, s.stream);
  };
  const auto glu_into_gate = [&] {
    if (biased || glu == Glu::SwigluOai) {
      pair_experts.bias_stride = biased ? bias_stride(*m.gate_bias) : 0;
      if (!cuda::launch_expert_glu(gate, up, ff, biased ? bias_data(m.gate_bias) : nullptr,
                                   biased ? bias_data(m.up_bias) : nullptr, pair_experts, ff, glu, s.stream)) {
        fail("moe_ffn_routed: expert biases with GeGLU are not supported on the cuda backend");
      }
    } else if (glu == Glu::Swiglu) {
      cuda::launch_swiglu(gate, ff, up, ff, gate, ff, pairs, ff, s.stream);
    } else {
      cuda::launch_geglu(gate, ff, up, ff, gate, ff, pairs, ff, s.gelu_table, s.stream);
    }
  };

  if (path == cuda::RoutedExpertsPath::ExpertGemm) {
    // Two scale states (launch_convert_activations_f16's four floats each): x's and the GLU's.
    auto* scales = static_cast<float*>(s.routed_moe.f16_scales.ensure(8 * sizeof(float), s.stream));
    auto* x16 =
        static_cast<uint16_t*>(s.routed_moe.x_f16.ensure(static_cast<size_t>(n * cols) * sizeof(uint16_t), s.stream));
    cuda::launch_convert_activations_f16(static_cast<const float*>(x.data), cuda::stride_of(x), n, cols, scales, x16,
                                         s.stream);
    cuda::ExpertGemmArgs gate_up = expert_gemm(*m.gate, gate, groups, max_groups, n, k, x16, scales);
    gate_up.weights[1] = static_cast<const uint8_t*>(m.up->data);
    gate_up.y[1] = up;
    gate_up.n_matrices = 2;
    if (!cuda::launch_gemm_experts(m.gate->type, gate_up, s.stream)) {
      fail("moe_ffn_routed: the expert GEMM refused {} experts its plan accepted", tensor::dtype_name(m.gate->type));
    }
    glu_into_gate();
    // The GLU's rows of pairs in no group (an id outside the experts) were never written; their
    // values join the largest |value| that sets the scale, which can only cost the other rows
    // precision (and such ids are bad input: the CPU refuses them).
    auto* act16 = static_cast<uint16_t*>(
        s.routed_moe.act_f16.ensure(static_cast<size_t>(pairs * ff) * sizeof(uint16_t), s.stream));
    cuda::launch_convert_activations_f16(gate, ff, pairs, ff, scales + 4, act16, s.stream);
    if (!cuda::launch_gemm_experts(m.down->type,
                                   expert_gemm(*m.down, down, groups, max_groups, n, 1, act16, scales + 4), s.stream)) {
      fail("moe_ffn_routed: the expert GEMM refused {} experts its plan accepted", tensor::dtype_name(m.down->type));
    }
    add_down_bias();
    s.check_launch("moe_ffn_routed");
    return down;
  }

  // Gate and up of every pair, from its token's row of x.
  const cuda::Q8Activations xq = scratch_q8(s, s.routed_moe.x_q8, n, cols);
  cuda::launch_quantize_activations(cuda::gemv_activation_type(m.gate->type), static_cast<const float*>(x.data),
                                    cuda::stride_of(x), n, cols, xq, s.stream);
  cuda::ExpertGemvArgs gate_up = expert_gemv(*m.gate, gate, groups, max_groups, k);
  gate_up.weights[1] = static_cast<const uint8_t*>(m.up->data);
  gate_up.y[1] = up;
  gate_up.n_matrices = 2;
  cuda::launch_gemv_experts(m.gate->type, gate_up, xq, s.stream);

  // The GLU into gate, then down of every pair.
  glu_into_gate();
  const cuda::Q8Activations actq = scratch_q8(s, s.routed_moe.act_q8, pairs, ff);
  cuda::launch_quantize_activations(cuda::gemv_activation_type(m.down->type), gate, ff, pairs, ff, actq, s.stream);
  cuda::launch_gemv_experts(m.down->type, expert_gemv(*m.down, down, groups, max_groups, 1), actq, s.stream);
  add_down_bias();
  s.check_launch("moe_ffn_routed");
  return down;
}

}  // namespace

// Prompts of large experts (past moe_gemv_macs_per_expert) and float experts: the ids come to
// the host once and are grouped by expert there; each chosen expert's rows are gathered and run
// through this backend's matmul_glu and matmul (a GEMM past max_gemv_tokens rows), its down
// outputs written expert after expert.
// Returns the pairs' rows of that output (a device array the combine reads). One wait and a few
// launches per chosen expert, where the composed moe_ffn also scales each routed row alone.
const int32_t* CudaBackend::experts_grouped_on_host(const TensorView& x, const TensorView& experts, int64_t k,
                                                    const RoutedExperts& m, Glu glu, float*& down) {
  State& s = *state_;
  cuda::refuse_in_capture("moe_ffn_routed");
  const int64_t n = x.rows(), cols = x.dims[0], pairs = n * k;
  const int64_t ff = m.gate->dims[1];
  common::Routing& routing = s.routed_moe.routing;
  routing.experts = download_values<int32_t>(*this, experts);
  routing.weights.assign(routing.experts.size(), 0.0f);  // not needed here: the combine reads the device's
  RouterConfig config;
  config.n_experts = m.gate->dims[2];
  config.n_used = k;
  common::ExpertGroups& groups = s.routed_moe.host_groups;
  common::group_by_expert(routing, config, groups);  // refuses an id outside the experts

  std::vector<int32_t>& pair_rows = s.routed_moe.pair_rows;
  pair_rows.assign(static_cast<size_t>(pairs), 0);
  for (size_t i = 0; i < groups.rows.size(); ++i) {
    pair_rows[static_cast<size_t>(groups.rows[i] * k + groups.slots[i])] = static_cast<int32_t>(i);
  }
  float* gathered = scratch_floats(s, s.routed_moe.gathered, pairs * cols);
  float* gate = scratch_floats(s, s.routed_moe.gate, pairs * ff);
  float* up = scratch_floats(s, s.routed_moe.up, pairs * ff);
  down = scratch_floats(s, s.routed_moe.down, pairs * cols);
  TensorView all_rows = f32_matrix(gathered, cols, pairs);
  get_rows(x, groups.rows, all_rows);
  for (size_t g = 0; g < groups.expert.size(); ++g) {
    const int64_t first = groups.begin[g], rows = groups.begin[g + 1] - first;
    const TensorView gate_w = expert_matrix(*m.gate, groups.expert[g]);
    const TensorView up_w = expert_matrix(*m.up, groups.expert[g]);
    const TensorView down_w = expert_matrix(*m.down, groups.expert[g]);
    const TensorView xe = f32_matrix(gathered + first * cols, cols, rows);
    TensorView gate_out = f32_matrix(gate + first * ff, ff, rows);
    TensorView up_out = f32_matrix(up + first * ff, ff, rows);
    TensorView down_out = f32_matrix(down + first * cols, cols, rows);
    if (m.gate_bias != nullptr || glu == Glu::SwigluOai) {  // gpt-oss: the biases around the GLU
      const MatmulOutput products[] = {{&gate_w, &gate_out}, {&up_w, &up_out}};
      matmul_same_input(xe, products);
      const TensorView* gate_bias = nullptr;
      const TensorView* up_bias = nullptr;
      TensorView biases[3];
      if (m.gate_bias != nullptr) {
        biases[0] = expert_matrix(*m.gate_bias, groups.expert[g]);
        biases[1] = expert_matrix(*m.up_bias, groups.expert[g]);
        biases[2] = expert_matrix(*m.down_bias, groups.expert[g]);
        gate_bias = &biases[0];
        up_bias = &biases[1];
      }
      cuda::expert_glu(s, gate_out, up_out, gate_bias, up_bias, glu);
      matmul(down_w, gate_out, down_out);
      if (m.gate_bias != nullptr) add_row(down_out, biases[2]);
    } else {
      matmul_glu(gate_w, up_w, xe, glu, gate_out, up_out);
      matmul(down_w, gate_out, down_out);
    }
  }
  auto* device_rows = static_cast<int32_t*>(
      s.routed_moe.pair_rows_device.ensure(static_cast<size_t>(pairs) * sizeof(int32_t), s.stream));
  upload(device_rows, pair_rows.data(), pair_rows.size() * sizeof(int32_t));
  return device_rows;
}

void CudaBackend::do_moe_ffn_routed(const TensorView& x, const TensorView& experts, const TensorView& weights,
                                    const RoutedExperts& m, Glu glu, TensorView& out) {
  State& s = *state_;
  for (const auto& [t, name] : {std::pair{&x, "x"},
                                {&experts, "experts"},
                                {&weights, "weights"},
                                {&out, "out"},
                                {m.gate, "gate"},
                                {m.up, "up"},
                                {m.down, "down"},
                                {m.shared_gate, "shared gate"},
                                {m.shared_up, "shared up"},
                                {m.shared_down, "shared down"},
                                {m.shared_logit, "shared logit"},
                                {m.gate_bias, "gate bias"},
                                {m.up_bias, "up bias"},
                                {m.down_bias, "down bias"}}) {
    if (t != nullptr) cuda::require_device(s, *t, "moe_ffn_routed", name);
  }
  const int64_t n = x.rows(), cols = x.dims[0], k = experts.dims[0];
  if (n == 0) return;
  const int64_t n_experts = m.gate->dims[2];
  cuda::RoutedExpertsBatch batch;
  batch.tokens = n;
  batch.used = k;
  batch.n_experts = n_experts;
  batch.cols = cols;
  batch.ff = m.gate->dims[1];
  batch.gemv_types = m.gate->type == m.up->type && quantized_gemv_type(m.gate->type) &&
                     quantized_gemv_type(m.down->type) && packed_rows(*m.gate) && packed_rows(*m.up) &&
                     packed_rows(*m.down);
  batch.gemm_types = m.gate->type == m.up->type && cuda::expert_gemm::stages_type(m.gate->type) &&
                     cuda::expert_gemm::stages_type(m.down->type) && packed_rows(*m.gate) && packed_rows(*m.up) &&
                     packed_rows(*m.down) && batch.cols % cuda::expert_gemm::kK == 0 &&
                     batch.ff % cuda::expert_gemm::kK == 0;
  const cuda::RoutedExpertsPath path =
      cuda::choose_routed_experts_path(batch, s.options.moe_gemv_macs_per_expert,
                                       s.options.moe_device_gemm && s.compute_capability >= 80);  // mma.sync's f16
  const auto* ids = static_cast<const int32_t*>(experts.data);
  cuda::CombineExpertsArgs combine;
  float* down = nullptr;
  if (path != cuda::RoutedExpertsPath::HostGrouped) {
    if (path == cuda::RoutedExpertsPath::ExpertGemm) ++s.expert_gemm_layers;
    down = experts_on_device(s, x, ids, k, m, glu, path);
  } else {
    combine.pair_rows = experts_grouped_on_host(x, experts, k, m, glu, down);
  }

  // A shared expert runs as a dense FFN would (this backend's own ops).
  if (m.shared_gate != nullptr) {
    const int64_t ff_shared = m.shared_gate->dims[1];
    TensorView sg = f32_matrix(scratch_floats(s, s.routed_moe.shared_gate, n * ff_shared), ff_shared, n);
    TensorView su = f32_matrix(scratch_floats(s, s.routed_moe.shared_up, n * ff_shared), ff_shared, n);
    TensorView sd = f32_matrix(scratch_floats(s, s.routed_moe.shared_down, n * cols), cols, n);
    matmul_glu(*m.shared_gate, *m.shared_up, x, glu, sg, su);
    matmul(*m.shared_down, sg, sd);
    combine.shared = static_cast<const float*>(sd.data);
    combine.shared_stride = cols;
    combine.shared_logit = m.shared_logit != nullptr ? static_cast<const float*>(m.shared_logit->data) : nullptr;
  }
  combine.y = down;
  combine.ids = ids;
  combine.n_experts = n_experts;
  combine.y_stride = cols;
  combine.weights = static_cast<const float*>(weights.data);
  combine.k = k;
  combine.out = static_cast<float*>(out.data);
  combine.out_stride = cuda::stride_of(out);
  combine.cols = cols;
  combine.n_tokens = n;
  cuda::launch_combine_experts(combine, s.stream);
  s.check_launch("moe_ffn_routed");
}

}  // namespace lumen::backend
