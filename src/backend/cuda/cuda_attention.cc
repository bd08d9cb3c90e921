// CudaBackend's K/V cache ops and attention. The paged layout is the CPU backend's
// (backend/backend.h: position p of a sequence is row p % block_size of block
// block_table[p / block_size]); the checks are the CPU backend's own functions, so both refuse
// the same inputs.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "backend/common/alibi.h"
#include "backend/common/kv_checks.h"
#include "backend/cuda/attention_kernels.h"
#include "backend/cuda/attention_plan.h"
#include "backend/cuda/cuda_backend_state.h"
#include "backend/cuda/cuda_ops_common.h"
#include "backend/cuda/graph_capture.h"
#include "backend/cuda/op_hold.h"
#include "backend/cuda/tensor_core_prefill.h"
#include "backend/cuda/upload_blob.h"
#include "util/error.h"

namespace lumen::backend {

namespace cuda {

DevicePrefillPlan upload_prefill_plan(CudaBackend::State& s, HostUploads::Slot slot, const PrefillPlan& plan) {
  std::vector<uint8_t> blob;
  const size_t seqs_at = append(blob, plan.seqs);
  const size_t tables_at = append(blob, plan.block_tables);
  const size_t tasks_at = append(blob, plan.tasks);
  const auto* base = static_cast<const uint8_t*>(s.uploads->upload(slot, blob.data(), blob.size()));
  DevicePrefillPlan device;
  device.seqs = reinterpret_cast<const AttentionSeq*>(base + seqs_at);
  device.block_tables = plan.block_tables.empty() ? nullptr : reinterpret_cast<const int32_t*>(base + tables_at);
  device.tasks = reinterpret_cast<const PrefillTask*>(base + tasks_at);
  device.n_tasks = static_cast<int64_t>(plan.tasks.size());
  return device;
}

}  // namespace cuda

namespace {

// Partial results of one range at most this large (the plan splits bigger calls).
constexpr size_t kPartialBudgetBytes = size_t{256} << 20;

bool is_f16(const TensorView& t) { return t.type == tensor::DType::F16; }

uint8_t* block_start(const TensorView& t, int64_t block_size, int64_t block) {
  return static_cast<uint8_t*>(t.data) + static_cast<size_t>(block * block_size) * t.row_bytes;
}

// What the CUDA kernels add to the shared checks (Backend::attention; a tree mask is refused
// there, as this backend does not claim supports_tree_attention).
void check_cuda_attention_inputs(const KvLayer& cache, const AttentionConfig& cfg) {
  if (cache.k.type != cache.v.type) fail("attention: the CUDA kernels need K and V of one type");
  if (cfg.alibi_max_bias != 0.0f && cfg.n_heads > cuda::kMaxAlibiHeads) {
    fail("attention: the CUDA kernels take ALiBi with up to {} query heads, not {}", cuda::kMaxAlibiHeads, cfg.n_heads);
  }
  if (values_in_keys(cache)) {
    // Multi-head latent attention: one KV head whose rows hold the values in their leading part.
    if (cfg.head_dim > cuda::kMaxLatentHeadDim) {
      fail("attention: the CUDA kernels take latent rows of up to {} values, not {}", cuda::kMaxLatentHeadDim,
           cfg.head_dim);
    }
    if (cfg.n_kv_heads != 1)
      fail("attention: the CUDA kernels take a latent cache of one KV head, not {}", cfg.n_kv_heads);
    return;
  }
  if (cfg.head_dim > cuda::kMaxHeadDim) {
    fail("attention: the CUDA kernels take head_dim up to {}, not {}", cuda::kMaxHeadDim, cfg.head_dim);
  }
  if (attention_value_dim(cfg) != cfg.head_dim) {
    fail("attention: the CUDA kernels take values narrower than keys only from a latent cache (values in its keys)");
  }
}

using cuda::align16;
using cuda::append;

}  // namespace

void CudaBackend::do_copy_kv_block(KvLayer& cache, int64_t src, int64_t dst) {
  State& s = *state_;
  if (src == dst) return;
  for (TensorView* t : {&cache.k, &cache.v}) {
    if (t == &cache.v && values_in_keys(cache)) break;  // copied with the keys
    cuda::require_device(s, *t, "copy_kv_block", "cache");
    const size_t bytes = t->row_bytes * static_cast<size_t>(cache.block_size);
    cuda::check_cuda(cudaMemcpyAsync(block_start(*t, cache.block_size, dst),
                                     block_start(*t, cache.block_size, src), bytes,
                                     cudaMemcpyDeviceToDevice, s.stream),
                     "cudaMemcpyAsync");
  }
}

void CudaBackend::do_copy_kv_row(KvLayer& cache, int64_t src, int64_t dst) {
  State& s = *state_;
  if (src == dst) return;
  for (TensorView* t : {&cache.k, &cache.v}) {
    if (t == &cache.v && values_in_keys(cache)) break;  // copied with the keys
    cuda::require_device(s, *t, "copy_kv_row", "cache");
    auto* base = static_cast<uint8_t*>(t->data);
    cuda::check_cuda(
        cudaMemcpyAsync(base + static_cast<size_t>(dst) * t->row_bytes, base + static_cast<size_t>(src) * t->row_bytes,
                        t->row_bytes, cudaMemcpyDeviceToDevice, s.stream),
        "cudaMemcpyAsync");
  }
}

void CudaBackend::do_read_kv_block(const KvLayer& cache, int64_t block, void* host_k, void* host_v) {
  State& s = *state_;
  cuda::refuse_in_capture("read_kv_block");
  cuda::release_op_hold();  // a copy to or from host memory may wait for the device
  // kv_value_block_bytes: the V rows' own bytes (none for a latent cache, whose values are its keys).
  cuda::check_cuda(cudaMemcpyAsync(host_k, block_start(cache.k, cache.block_size, block), kv_block_bytes(cache),
                                   cudaMemcpyDeviceToHost, s.stream),
                   "cudaMemcpyAsync");
  if (const size_t v_bytes = kv_value_block_bytes(cache); v_bytes > 0) {
    cuda::check_cuda(cudaMemcpyAsync(host_v, block_start(cache.v, cache.block_size, block), v_bytes,
                                     cudaMemcpyDeviceToHost, s.stream),
                     "cudaMemcpyAsync");
  }
  synchronize();
}

void CudaBackend::do_write_kv_block(KvLayer& cache, int64_t block, const void* host_k, const void* host_v) {
  State& s = *state_;
  cuda::refuse_in_capture("write_kv_block");
  cuda::release_op_hold();  // a copy to or from host memory may wait for the device
  // From pageable memory the copy returns once the source is staged: the caller may reuse it.
  cuda::check_cuda(cudaMemcpyAsync(block_start(cache.k, cache.block_size, block), host_k, kv_block_bytes(cache),
                                   cudaMemcpyHostToDevice, s.stream),
                   "cudaMemcpyAsync");
  if (const size_t v_bytes = kv_value_block_bytes(cache); v_bytes > 0) {
    cuda::check_cuda(cudaMemcpyAsync(block_start(cache.v, cache.block_size, block), host_v, v_bytes,
                                     cudaMemcpyHostToDevice, s.stream),
                     "cudaMemcpyAsync");
  }
}

namespace {

// One attention call's launches: Stats then ExactPv (llama.cpp's exact f16 arithmetic), or
// Flash; `tasks` names the tasks, `combine` the items to merge (the same params in decode mode,
// where the counts are unused).
void launch_attention_modes(const cuda::AttentionParams& tasks, const cuda::AttentionParams& combine, bool exact,
                            int64_t n_tasks, int64_t n_items, cudaStream_t stream) {
  const auto run = [&](cuda::AttentionMode mode) {
    cuda::launch_attention_tasks(mode, tasks, n_tasks, stream);
    cuda::launch_attention_combine(mode, combine, n_items, stream);
  };
  if (exact) {
    run(cuda::AttentionMode::Stats);
    run(cuda::AttentionMode::ExactPv);
  } else {
    run(cuda::AttentionMode::Flash);
  }
}

// A decode step laid out for it (step_uploads.h: CUDA graphs on) runs the plan-free decode
// attention: its launches depend on the step's shape only. False when its partial results
// would not fit the scratch budget (a very long context): the host plan then splits the call.
bool run_decode_attention(CudaBackend::State& s, const cuda::DecodeTables& tables, const AttentionConfig& config,
                          cuda::AttentionParams p, bool exact) {
  p.decode.n_seqs = tables.n_seqs;
  p.decode.n_kv_heads = static_cast<int32_t>(config.n_kv_heads);
  p.decode.group = static_cast<int32_t>(config.n_heads / config.n_kv_heads);
  p.decode.max_splits = tables.max_splits;
  const auto slots = static_cast<size_t>(cuda::decode_partial_slots(p.decode));
  const size_t stats_bytes = align16(slots * sizeof(cuda::PartialStats));
  const size_t bytes = stats_bytes + slots * static_cast<size_t>(p.value_dim) * sizeof(float);
  if (bytes > kPartialBudgetBytes) return false;
  auto* partials = static_cast<uint8_t*>(s.attention_partials.ensure(bytes, s.stream));
  p.seqs = tables.seqs;
  p.block_tables = tables.tables;
  p.partial_stats = reinterpret_cast<cuda::PartialStats*>(partials);
  p.partial_acc = reinterpret_cast<float*>(partials + stats_bytes);
  if (exact) {
    const auto vectors = static_cast<size_t>(tables.n_seqs) * static_cast<size_t>(config.n_heads);
    p.vector_stats = static_cast<float2*>(s.attention_vector_stats.ensure(vectors * sizeof(float2), s.stream));
  } else if (s.options.fused_attention_combine && cuda::fused_combine_takes(p.head_dim) && !p.values_in_keys) {
    // One launch: each item's last block merges it (attention.cu, combine_if_last).
    p.combine_counters = s.attention_combine_counters.ensure(cuda::decode_items(p.decode), s.stream,
                                                             "zeroing attention's combine counts");
    cuda::launch_attention_tasks(cuda::AttentionMode::Flash, p, 0, s.stream);
    s.check_launch("attention");
    ++s.fused_combine_calls;
    return true;
  }
  launch_attention_modes(p, p, exact, 0, 0, s.stream);  // sizes from p.decode
  s.check_launch("attention");
  return true;
}

// The tensor-core prefill attention over `taken` (sequences it takes, of a call it can take):
// its plan uploaded once per forward pass (every layer asks the same), then one launch.
void run_tensor_core_prefill(CudaBackend::State& s, const cuda::AttentionParams& p,
                             std::span<const SequenceSlice> taken, const AttentionConfig& config, int64_t block_size) {
  std::vector<int64_t> key = cuda::attention_plan_key(taken, config, block_size);
  if (key != s.prefill_plan_key) {
    s.prefill_plan_device = cuda::upload_prefill_plan(s, cuda::HostUploads::kPrefillPlan,
                                                      cuda::plan_tensor_core_prefill(taken, config, block_size));
    s.prefill_plan_key = std::move(key);
  }
  cuda::TensorCorePrefillParams t;
  t.q = p.q;
  t.q_head_stride = p.q_stride;
  t.q_token_stride = p.n_heads * p.q_stride;
  t.out = p.out;
  t.out_head_stride = p.out_stride;
  t.out_token_stride = p.n_heads * p.out_stride;
  t.dims = p.head_dim;
  t.n_heads = p.n_heads;
  t.n_kv_heads = config.n_kv_heads;
  t.head_dim = p.head_dim;
  t.score.scale = p.scale;
  t.score.softcap = p.softcap;
  t.score.capped_scale = p.softcap != 0.0f ? p.scale / p.softcap : 0.0f;
  t.window = p.window;
  t.sinks = p.sinks;
  t.k = p.k;
  t.v = p.v;
  t.k_row_bytes = p.k_row_bytes;
  t.v_row_bytes = p.v_row_bytes;
  t.block_size = p.block_size;
  t.seqs = s.prefill_plan_device.seqs;
  t.block_tables = s.prefill_plan_device.block_tables;
  t.tasks = s.prefill_plan_device.tasks;
  cuda::launch_tensor_core_prefill(t, s.prefill_plan_device.n_tasks, s.stream);
}

// The launches of one attention call with its parameters set: the plan-free decode attention
// inside a step laid out for it, else the tensor-core prefill for the sequences it takes and the
// split-KV kernels over a host plan for the rest. True when the kernels also wrote the output's
// quantization that p asks for (p.out_act), which the tensor-core kernel does not.
bool launch_attention(CudaBackend::State& s, cuda::AttentionParams p, std::span<const SequenceSlice> seqs,
                      const KvLayer& cache, const AttentionConfig& config, bool exact) {
  const int64_t value_dim = p.value_dim;
  if (const std::optional<cuda::DecodeTables> tables = s.step->decode_tables(seqs, cache.block_size)) {
    if (run_decode_attention(s, *tables, config, p, exact)) return p.out_act != tensor::DType::F32;
  }
  // The host plan below is uploaded per call: a recorded step would replay this step's plan.
  cuda::refuse_in_capture("attention over a host plan");

  // Prefill rows through the tensor cores (CudaBackendOptions::tensor_core_prefill), the others
  // (decode rows, verification rows, trees, spans) through the split-KV kernels below.
  std::vector<SequenceSlice> rest;
  if (s.options.tensor_core_prefill && s.compute_capability >= 80 &&
      cuda::tensor_core_prefill_refusal(cache, config).empty()) {
    std::vector<SequenceSlice> taken;
    for (const SequenceSlice& seq : seqs) (cuda::tensor_core_prefill_takes(seq) ? taken : rest).push_back(seq);
    if (!taken.empty()) {
      run_tensor_core_prefill(s, p, taken, config, cache.block_size);
      seqs = rest;
      p.out_act = tensor::DType::F32;  // the tensor-core kernel writes f32 only
      if (seqs.empty()) {
        s.check_launch("attention");
        return false;
      }
    }
  }

  std::vector<int64_t> key = cuda::attention_plan_key(seqs, config, cache.block_size);
  if (key != s.plan_key) {
    const int64_t max_slots = static_cast<int64_t>(
        kPartialBudgetBytes / (sizeof(cuda::PartialStats) + static_cast<size_t>(value_dim) * sizeof(float)));
    s.plan = cuda::plan_attention(seqs, config, cache.block_size, max_slots);
    std::vector<uint8_t> blob;
    const size_t seqs_at = append(blob, s.plan.seqs);
    const size_t tables_at = append(blob, s.plan.block_tables);
    const size_t items_at = append(blob, s.plan.items);
    const size_t tasks_at = append(blob, s.plan.tasks);
    const size_t masks_at = append(blob, s.plan.masks);
    const size_t positions_at = append(blob, s.plan.positions);
    const size_t key_ends_at = append(blob, s.plan.key_ends);
    const auto* base =
        static_cast<const uint8_t*>(s.uploads->upload(cuda::HostUploads::kAttentionPlan, blob.data(), blob.size()));
    s.plan_device.seqs = reinterpret_cast<const cuda::AttentionSeq*>(base + seqs_at);
    s.plan_device.block_tables = reinterpret_cast<const int32_t*>(base + tables_at);
    s.plan_device.items = reinterpret_cast<const cuda::AttentionItem*>(base + items_at);
    s.plan_device.tasks = reinterpret_cast<const cuda::AttentionTask*>(base + tasks_at);
    s.plan_device.masks = base + masks_at;
    s.plan_device.positions = reinterpret_cast<const int32_t*>(base + positions_at);
    s.plan_device.key_ends = reinterpret_cast<const int32_t*>(base + key_ends_at);
    s.plan_key = std::move(key);
  }
  const cuda::AttentionPlan& plan = s.plan;
  if (plan.items.empty()) return false;

  const auto slots = static_cast<size_t>(plan.max_range_slots);
  const size_t stats_bytes = align16(slots * sizeof(cuda::PartialStats));
  auto* partials = static_cast<uint8_t*>(
      s.attention_partials.ensure(stats_bytes + slots * static_cast<size_t>(value_dim) * sizeof(float), s.stream));
  p.seqs = s.plan_device.seqs;
  p.block_tables = s.plan_device.block_tables;
  p.masks = s.plan_device.masks;
  p.positions = s.plan_device.positions;
  p.key_ends = s.plan_device.key_ends;
  p.partial_stats = reinterpret_cast<cuda::PartialStats*>(partials);
  p.partial_acc = reinterpret_cast<float*>(partials + stats_bytes);
  if (exact) {
    p.vector_stats = static_cast<float2*>(
        s.attention_vector_stats.ensure(static_cast<size_t>(plan.vectors) * sizeof(float2), s.stream));
  }
  for (const cuda::AttentionPlan::Range& range : plan.ranges) {
    // Tasks name items by their index in the whole plan; the combine walks the range's items.
    cuda::AttentionParams tasks = p;
    tasks.items = s.plan_device.items;
    tasks.tasks = s.plan_device.tasks + range.task_begin;
    cuda::AttentionParams combine = p;
    combine.items = s.plan_device.items + range.item_begin;
    launch_attention_modes(tasks, combine, exact, range.task_end - range.task_begin,
                           range.item_end - range.item_begin, s.stream);
  }
  s.check_launch("attention");
  return p.out_act != tensor::DType::F32;
}

}  // namespace

void CudaBackend::do_attention(const TensorView& q, const KvLayer& cache, std::span<const SequenceSlice> seqs,
                               const AttentionConfig& config, TensorView& out) {
  State& s = *state_;
  check_cuda_attention_inputs(cache, config);
  for (const TensorView* t : {&q, static_cast<const TensorView*>(&out), &cache.k, &cache.v}) {
    cuda::require_device(s, *t, "attention", "tensors");
  }
  // The kernels read the sinks where the model uploaded them: no copy inside a step (a recorded
  // graph replays its launches' pointers, and the weights do not move).
  if (config.sinks != nullptr && !s.is_device(config.sinks)) {
    fail("attention: the sinks are not in device memory (upload them to the CUDA backend)");
  }
  const int64_t dim = config.head_dim;
  const int64_t value_dim = attention_value_dim(config);  // of the partial results and the output

  cuda::AttentionParams p;
  p.q = static_cast<const float*>(q.data);
  p.q_stride = cuda::stride_of(q);
  p.out = static_cast<float*>(out.data);
  p.out_stride = cuda::stride_of(out);
  p.n_heads = config.n_heads;
  p.head_dim = dim;
  p.value_dim = value_dim;
  p.values_in_keys = values_in_keys(cache);
  p.scale = config.scale;
  p.softcap = config.softcap;
  p.window = config.sliding_window;
  p.k = cache.k.data;
  p.v = cache.v.data;
  p.k_row_bytes = cache.k.row_bytes;
  p.v_row_bytes = cache.v.row_bytes;
  p.cache_type = cache.k.type;
  p.block_size = cache.block_size;
  p.sinks = config.sinks;
  const bool exact = is_f16(cache.v) && s.options.exact_f16_attention;
  if (config.alibi_max_bias != 0.0f) {  // the slopes as the CPU computes them (common/alibi.h)
    if (s.alibi_max_bias != config.alibi_max_bias || std::ssize(s.alibi_slopes) != config.n_heads) {
      s.alibi_slopes.resize(static_cast<size_t>(config.n_heads));
      for (int64_t h = 0; h < config.n_heads; ++h) {
        s.alibi_slopes[static_cast<size_t>(h)] = common::alibi_slope(config.alibi_max_bias, config.n_heads, h);
      }
      s.alibi_max_bias = config.alibi_max_bias;
    }
    p.alibi = true;
    std::copy(s.alibi_slopes.begin(), s.alibi_slopes.end(), p.alibi_slopes);
  }

  // The output quantized for the output projection after it (fused_input_quantization.h): the
  // combine's warps each hold a 32-value block, so Q8_0 and Q8_1 (not Q8_K's 256), over heads
  // laid side by side.
  const int64_t tokens = out.dims[2] * out.dims[3], cols = config.n_heads * value_dim;
  std::optional<tensor::DType> emitted;
  if (s.options.fused_input_quantization && value_dim % 32 == 0 && p.out_stride == value_dim) {
    const cuda::FusedOutput fused = cuda::fused_output(s, out.data, tokens, cols);
    if (fused.act == tensor::DType::Q8_0 || fused.act == tensor::DType::Q8_1) {
      p.out_act = *fused.act;
      p.out_q = fused.q;
      emitted = fused.act;
    }
  }
  const bool quantized = launch_attention(s, p, seqs, cache, config, exact);
  if (s.options.fused_input_quantization) {
    s.fused_inputs.produced(out.data, out.data, tokens, cols, cols, quantized ? emitted : std::nullopt, op_calls());
  }
}

}  // namespace lumen::backend
