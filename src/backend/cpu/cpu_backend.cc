#include "backend/cpu/cpu_backend.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>

#include <sys/mman.h>

#include <fmt/core.h>

#include "backend/common/op_checks.h"
#include "backend/cpu/activation.h"
#include "backend/cpu/elementwise.h"
#include "backend/cpu/get_rows.h"
#include "backend/cpu/hadamard.h"
#include "backend/cpu/kv_importance.h"
#include "backend/cpu/kv_shift.h"
#include "backend/cpu/kv_store.h"
#include "backend/cpu/rms_norm.h"
#include "backend/cpu/rope.h"
#include "util/checked_math.h"
#include "util/error.h"
#include "util/system_memory.h"

namespace lumen::backend {

namespace {

constexpr size_t kAlignment = 64;
// Below these many elements an op runs on the calling thread: waking the pool costs more.
constexpr int64_t kCheapOpTaskElements = 32768;  // add, scale, norm: memory-bound, ~1 ns each
constexpr int64_t kActivationTaskElements = 512;  // expf / table lookups: several ns each

class HostBuffer final : public Buffer {
 public:
  // lazy_bytes: the backend's count of mapped (lazily backed) bytes, which this buffer's
  // mapping adds to while it lives (the packing budget's promise: pack_budget.h).
  HostBuffer(size_t bytes, std::shared_ptr<std::atomic<uint64_t>> lazy_bytes)
      : size_(bytes), lazy_bytes_(std::move(lazy_bytes)) {
    if (bytes > SIZE_MAX - kAlignment) fail("allocate: {} bytes is too large", bytes);
    const size_t padded = std::max(kAlignment, (bytes + kAlignment - 1) / kAlignment * kAlignment);
    if (padded >= kMappedBytes) {
      // Large buffers (the KV pool) come zeroed from the kernel, page by page as they are
      // touched: a pool sized for many sequences costs no start-up time and no resident memory
      // until used.
      void* p = mmap(nullptr, padded, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED) fail("allocate: out of memory for {} bytes", bytes);
      data_ = p;
      mapped_bytes_ = padded;
      *lazy_bytes_ += padded;
      return;
    }
    data_ = std::aligned_alloc(kAlignment, padded);
    if (data_ == nullptr) fail("allocate: out of memory for {} bytes", bytes);
    std::memset(data_, 0, padded);
  }
  ~HostBuffer() override {
    if (mapped_bytes_ != 0) {
      munmap(data_, mapped_bytes_);
      *lazy_bytes_ -= mapped_bytes_;
    } else {
      std::free(data_);
    }
  }
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;
  void* data() override { return data_; }
  size_t size() const override { return size_; }

 private:
  static constexpr size_t kMappedBytes = size_t{1} << 20;
  void* data_ = nullptr;
  size_t size_;
  size_t mapped_bytes_ = 0;
  std::shared_ptr<std::atomic<uint64_t>> lazy_bytes_;
};

// Runs fn(row, col_begin, col_end) over a rows x cols tensor, on the pool when it is big
// enough. With split_rows the pieces may be parts of rows (elementwise ops); otherwise whole
// rows (ops that need a row at once). The lambda handed to the pool captures one pointer, so
// std::function stores it inline: no allocation per call.
template <typename Fn>
void for_each_piece(ThreadPool& pool, int64_t rows, int64_t cols, int64_t task_elements,
                    bool split_rows, const Fn& fn) {
  const int64_t total = rows * cols;
  if (total <= 0) return;
  const int64_t max_tasks = std::min<int64_t>((total + task_elements - 1) / task_elements,
                                              4 * static_cast<int64_t>(pool.size()));
  if (pool.size() == 1 || max_tasks <= 1 || (!split_rows && rows == 1)) {
    for (int64_t r = 0; r < rows; ++r) fn(r, 0, cols);
    return;
  }
  struct Plan {
    const Fn* fn;
    int64_t rows, cols, rows_per_task, cols_per_task, col_tasks;
  } plan{&fn, rows, cols, 1, cols, 1};
  if (rows >= max_tasks || !split_rows) {
    plan.rows_per_task = (rows + max_tasks - 1) / max_tasks;
  } else {
    const int64_t parts = (max_tasks + rows - 1) / rows;
    plan.cols_per_task = ((cols + parts - 1) / parts + 15) / 16 * 16;
    plan.col_tasks = (cols + plan.cols_per_task - 1) / plan.cols_per_task;
  }
  const int64_t row_tasks = (rows + plan.rows_per_task - 1) / plan.rows_per_task;
  const Plan* p = &plan;
  pool.parallel_for(row_tasks * plan.col_tasks, [p](int64_t task, unsigned) {
    const int64_t row_begin = (task / p->col_tasks) * p->rows_per_task;
    const int64_t col_begin = (task % p->col_tasks) * p->cols_per_task;
    const int64_t col_end = std::min(p->cols, col_begin + p->cols_per_task);
    for (int64_t r = row_begin; r < std::min(p->rows, row_begin + p->rows_per_task); ++r) {
      (*p->fn)(r, col_begin, col_end);
    }
  });
}

}  // namespace

CpuBackend::CpuBackend(unsigned threads) : pool_(threads) {}

// The CPU's matmul and get_rows read every type with a reference dequantizer (its kernels and
// the file's tensors agree on them: model/arch/tensor_spec.cc).
bool CpuBackend::do_supports_weight_type(tensor::DType type) const { return tensor::has_reference_kernels(type); }

std::unique_ptr<Buffer> CpuBackend::do_allocate(size_t bytes) {
  return std::make_unique<HostBuffer>(bytes, lazy_buffer_bytes_);
}

TensorView CpuBackend::do_upload_weights(tensor::DType type, std::array<int64_t, 4> dims, const void* host_data) {
  const auto bytes = tensor::row_bytes(type, dims[0]);  // whole blocks: checked by Backend
  // The view aliases the caller's (read-only, mmapped) memory; ops never write weights.
  // A matrix the matmul has packed kernels for is also registered for packing (replacing
  // whatever was registered at this address before: the new upload's bytes are what count).
  // A 3-D tensor of MoE experts registers each expert's matrix: matmuls see those slices.
  if (cpu::packing_pays_off(type)) {
    const int64_t matrices = dims[2] * dims[3];
    const size_t matrix_bytes = static_cast<size_t>(*bytes) * static_cast<size_t>(dims[1]);
    for (int64_t m = 0; m < matrices; ++m) {
      packed_weights_.insert_or_assign(static_cast<const uint8_t*>(host_data) + static_cast<size_t>(m) * matrix_bytes,
                                       PackedSlot{type, dims[1], dims[0], nullptr});
    }
  }
  return TensorView{type, dims, static_cast<size_t>(*bytes), const_cast<void*>(host_data)};
}

const cpu::PackedWeights* CpuBackend::packed_weights(const cpu::WeightMatrix& w) {
  const auto it = packed_weights_.find(w.data);
  if (it == packed_weights_.end()) return nullptr;
  PackedSlot& slot = it->second;
  // A view of another shape at the same address (e.g. a sub-matrix) is not the packed one.
  if (slot.type != w.type || slot.rows != w.rows || slot.cols != w.cols ||
      tensor::row_bytes(w.type, w.cols) != w.row_bytes) {
    return nullptr;
  }
  // Packing costs about one read and one write of the matrix, spread over the pool; it replaces
  // the load-time repacking llama.cpp does, but only for matrices that are multiplied, and only
  // while the memory left allows (pack_budget.h).
  if (!slot.packed) {
    if (slot.left_unpacked) return nullptr;
    const size_t bytes = cpu::packed_matrix_bytes(w.type, w.rows, w.cols);
    const cpu::PackBudget budget = pack_budget();
    if (!budget.allows(bytes)) {
      slot.left_unpacked = true;
      leave_unpacked(bytes, budget);
      return nullptr;
    }
    slot.packed = std::make_unique<cpu::PackedWeights>(w, pool_, packed_arena_);
  }
  return slot.packed.get();
}

cpu::PackBudget CpuBackend::pack_budget() const {
  const MemoryReport memory = memory_probe_ ? memory_probe_() : MemoryReport{available_ram_bytes(), total_ram_bytes()};
  return cpu::PackBudget{memory.available, memory.total, lazy_buffer_bytes_->load()};
}

void CpuBackend::leave_unpacked(size_t bytes, const cpu::PackBudget& budget) {
  if (unpacked_bytes_ == 0) {
    constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
    fmt::print(stderr,
               "lumen: {:.1f} GiB of memory available, {:.1f} GiB of it promised to the KV cache: the weights not yet "
               "repacked stay in the file's layout (slower matmuls, the same results)\n",
               static_cast<double>(budget.available) / kGiB, static_cast<double>(budget.promised) / kGiB);
  }
  unpacked_bytes_ += bytes;
}

void CpuBackend::set_memory_probe(std::function<MemoryReport()> probe) { memory_probe_ = std::move(probe); }

void CpuBackend::do_copy_to_host(const TensorView& src, float* dst) {
  for (int64_t r = 0; r < src.rows(); ++r) {
    cpu::get_row(src, static_cast<int32_t>(r), dst + r * src.dims[0]);
  }
}

void CpuBackend::do_copy_from_host(const float* src, TensorView& dst) {
  const auto row = static_cast<size_t>(dst.dims[0]);
  for (int64_t r = 0; r < dst.rows(); ++r) {
    std::memcpy(static_cast<char*>(dst.data) + static_cast<size_t>(r) * dst.row_bytes,
                src + static_cast<size_t>(r) * row, row * sizeof(float));
  }
}

void CpuBackend::do_matmul(const TensorView& w, const TensorView& x, TensorView& y) {
  const MatmulOutput output{&w, &y};
  do_matmul_same_input(x, {&output, 1});
}

cpu::MatmulTarget CpuBackend::matmul_target(const TensorView& w, TensorView& y, cpu::WeightMatrix& weights) {
  weights = weight_matrix(w);
  return {&weights, y.row<float>(0), static_cast<int64_t>(y.row_bytes / sizeof(float))};
}

void CpuBackend::do_matmul_same_input(const TensorView& x, std::span<const MatmulOutput> outputs) {
  if (outputs.size() > cpu::kMaxMatmulTargets) {
    Backend::do_matmul_same_input(x, outputs);  // one at a time
    return;
  }
  std::array<cpu::WeightMatrix, cpu::kMaxMatmulTargets> weights;
  std::array<cpu::MatmulTarget, cpu::kMaxMatmulTargets> targets;
  for (size_t i = 0; i < outputs.size(); ++i) {
    targets[i] = matmul_target(*outputs[i].w, *outputs[i].y, weights[i]);
  }
  cpu::matmul_same_input({targets.data(), outputs.size()}, x.row<const float>(0),
                         static_cast<int64_t>(x.row_bytes / sizeof(float)), x.rows(), pool_,
                         matmul_scratch_);
}

void CpuBackend::do_matmul_glu(const TensorView& gate_w, const TensorView& up_w, const TensorView& x, Glu glu,
                               TensorView& gate, TensorView& up) {
  cpu::WeightMatrix gate_weights, up_weights;
  const cpu::MatmulTarget gate_target = matmul_target(gate_w, gate, gate_weights);
  const cpu::MatmulTarget up_target = matmul_target(up_w, up, up_weights);
  cpu::matmul_glu(gate_target, up_target, glu == Glu::Geglu ? &cpu::geglu_row : &cpu::swiglu_row,
                  x.row<const float>(0), static_cast<int64_t>(x.row_bytes / sizeof(float)),
                  x.rows(), pool_, matmul_scratch_);
}

cpu::WeightMatrix CpuBackend::weight_matrix(const TensorView& w) {
  cpu::WeightMatrix weights{w.type, w.dims[1], w.dims[0], w.data, w.row_bytes};
  weights.packed = packed_weights(weights);
  return weights;
}

void CpuBackend::set_composed_ops(bool on) {
  if (on && !composed_moe_) {
    // gpt-oss's experts: the biases added and the GLU taken as the native op does (moe_ffn.cc),
    // one row at a time (the composition is a test's, not a fast path).
    composed_moe_ = std::make_unique<common::ComposedMoeFfn>(
        [](TensorView& gate, const TensorView& up, const TensorView* gate_bias, const TensorView* up_bias, Glu glu) {
          const cpu::GluRowFn glu_row = glu == Glu::Geglu       ? &cpu::geglu_row
                                        : glu == Glu::SwigluOai ? &cpu::swiglu_oai_row
                                                                : &cpu::swiglu_row;
          const int64_t ff = gate.dims[0];
          std::vector<float> u(static_cast<size_t>(ff));
          for (int64_t r = 0; r < gate.rows(); ++r) {
            float* g = gate.row<float>(r);
            std::copy_n(up.row<const float>(r), ff, u.data());
            for (int64_t c = 0; c < ff; ++c) {
              if (gate_bias != nullptr) g[c] += gate_bias->row<const float>(0)[c];
              if (up_bias != nullptr) u[static_cast<size_t>(c)] += up_bias->row<const float>(0)[c];
            }
            glu_row(g, u.data(), ff, g);
          }
        });
    composed_shift_ = std::make_unique<common::ComposedShiftKeys>();
  }
  if (!on) composed_moe_.reset(), composed_shift_.reset();
}

void CpuBackend::do_moe_ffn(const TensorView& x, std::span<const ExpertWork> experts, int64_t n_slots, Glu glu,
                            TensorView& out) {
  if (composed_moe_) {
    composed_moe_->run(*this, x, experts, n_slots, glu, out);
    return;
  }
  experts_.clear();
  const auto bias = [](const TensorView* b) { return b != nullptr ? b->row<const float>(0) : nullptr; };
  for (const ExpertWork& e : experts) {
    experts_.push_back({weight_matrix(*e.gate), weight_matrix(*e.up), weight_matrix(*e.down), e.rows, e.slots,
                        e.weights, bias(e.gate_bias), bias(e.up_bias), bias(e.down_bias)});
  }
  const cpu::GluRowFn glu_row = glu == Glu::Geglu       ? &cpu::geglu_row
                                : glu == Glu::SwigluOai ? &cpu::swiglu_oai_row
                                                        : &cpu::swiglu_row;
  cpu::moe_ffn(x.row<const float>(0), static_cast<int64_t>(x.row_bytes / sizeof(float)), x.rows(), x.dims[0], experts_,
               n_slots, glu_row, out.row<float>(0), static_cast<int64_t>(out.row_bytes / sizeof(float)), pool_,
               moe_scratch_);
}

void CpuBackend::do_get_rows(const TensorView& table, std::span<const int32_t> ids, TensorView& out) {
  const auto n_ids = static_cast<int64_t>(ids.size());
  for_each_piece(pool_, n_ids, table.dims[0], kCheapOpTaskElements, false,
                 [&](int64_t i, int64_t, int64_t) {
                   cpu::get_row(table, ids[static_cast<size_t>(i)], out.row<float>(i));
                 });
}

void CpuBackend::do_rms_norm(const TensorView& x, const TensorView& weight, float eps, TensorView& out) {
  for_each_piece(pool_, x.rows(), x.dims[0], kCheapOpTaskElements, false,
                 [&](int64_t r, int64_t, int64_t) {
                   cpu::rms_norm_row(x.row<const float>(r), weight.row<const float>(0), eps,
                                     x.dims[0], out.row<float>(r));
                 });
}

void CpuBackend::do_add(const TensorView& a, const TensorView& b, TensorView& out) {
  for_each_piece(pool_, a.rows(), a.dims[0], kCheapOpTaskElements, true,
                 [&](int64_t r, int64_t c0, int64_t c1) {
                   cpu::add_row_values(a.row<const float>(r) + c0, b.row<const float>(r) + c0,
                                       c1 - c0, out.row<float>(r) + c0);
                 });
}

void CpuBackend::do_add_rms_norm(const TensorView& a, const TensorView& b, const TensorView& weight, float eps,
                                 TensorView& sum, TensorView& out) {
  // Whole rows per task: a row's norm reads its complete sum, still in cache from the add. The
  // two kernels are do_add's and do_rms_norm's, so the results are theirs bit for bit.
  for_each_piece(pool_, a.rows(), a.dims[0], kCheapOpTaskElements, false, [&](int64_t r, int64_t, int64_t) {
    float* s = sum.row<float>(r);
    cpu::add_row_values(a.row<const float>(r), b.row<const float>(r), a.dims[0], s);
    cpu::rms_norm_row(s, weight.row<const float>(0), eps, a.dims[0], out.row<float>(r));
  });
}

void CpuBackend::do_add_row(TensorView& x, const TensorView& row) {
  for_each_piece(pool_, x.rows(), x.dims[0], kCheapOpTaskElements, true,
                 [&](int64_t r, int64_t c0, int64_t c1) {
                   float* dst = x.row<float>(r) + c0;
                   cpu::add_row_values(dst, row.row<const float>(0) + c0, c1 - c0, dst);
                 });
}

void CpuBackend::do_scale(TensorView& x, float factor) {
  for_each_piece(pool_, x.rows(), x.dims[0], kCheapOpTaskElements, true,
                 [&](int64_t r, int64_t c0, int64_t c1) {
                   cpu::scale_row_values(x.row<float>(r) + c0, c1 - c0, factor);
                 });
}

void CpuBackend::do_swiglu(const TensorView& gate, const TensorView& up, TensorView& out) {
  for_each_piece(pool_, gate.rows(), gate.dims[0], kActivationTaskElements, true,
                 [&](int64_t r, int64_t c0, int64_t c1) {
                   cpu::swiglu_row(gate.row<const float>(r) + c0, up.row<const float>(r) + c0,
                                   c1 - c0, out.row<float>(r) + c0);
                 });
}

void CpuBackend::do_geglu(const TensorView& gate, const TensorView& up, TensorView& out) {
  for_each_piece(pool_, gate.rows(), gate.dims[0], kActivationTaskElements, true,
                 [&](int64_t r, int64_t c0, int64_t c1) {
                   cpu::geglu_row(gate.row<const float>(r) + c0, up.row<const float>(r) + c0,
                                  c1 - c0, out.row<float>(r) + c0);
                 });
}

void CpuBackend::do_rotate_heads(TensorView& x, int64_t head_dim) {
  for_each_piece(pool_, x.rows(), x.dims[0], kCheapOpTaskElements, false,
                 [&](int64_t r, int64_t, int64_t) {
                   float* row = x.row<float>(r);
                   for (int64_t h = 0; h < x.dims[0]; h += head_dim) cpu::hadamard_rotate(row + h, head_dim);
                 });
}

void CpuBackend::do_rope(TensorView& x, std::span<const int32_t> positions, const RopeConfig& config) {
  const int64_t heads = x.dims[1];
  const int64_t tokens = x.dims[2] * x.dims[3];
  const cpu::RopeParams params = cpu::make_rope_params(config, x.dims[0]);
  struct Job {
    TensorView* x;
    const cpu::RopeParams* params;
    const float* table;
    int64_t heads;
  } job{&x, &params, rope_table_.rows(params, positions, pool_), heads};
  const Job* j = &job;
  pool_.parallel_for(tokens, [j](int64_t t, unsigned) {
    const float* cos_sin = j->table + t * j->params->rope_dims;
    for (int64_t h = 0; h < j->heads; ++h) {
      cpu::rope_head(*j->params, cos_sin, j->x->row<float>(t * j->heads + h));
    }
  });
}

void CpuBackend::do_store_kv(const TensorView& k, const TensorView& v, std::span<const SequenceSlice> seqs,
                             KvLayer& cache) {
  cpu::store_kv(k, v, seqs, cache);
}

// The three ops in turn: on a CPU the launches the fused op saves a GPU cost nothing, and the
// second rope reuses the first's table (the same positions).
void CpuBackend::do_rope_store_kv(TensorView& q, TensorView& k, const TensorView& v, std::span<const int32_t> positions,
                                  const RopeConfig& config, std::span<const SequenceSlice> seqs, KvLayer& cache) {
  do_rope(q, positions, config);
  do_rope(k, positions, config);
  do_store_kv(common::token_rows(k), v, seqs, cache);
}

void CpuBackend::do_copy_kv_row(KvLayer& cache, int64_t src, int64_t dst) { cpu::copy_kv_row(cache, src, dst); }

void CpuBackend::do_copy_kv_block(KvLayer& cache, int64_t src, int64_t dst) { cpu::copy_kv_block(cache, src, dst); }

void CpuBackend::do_shift_keys(KvLayer& cache, std::span<const int32_t> blocks, int32_t delta, const RopeConfig& config,
                               int64_t head_dim) {
  if (composed_shift_) {
    composed_shift_->run(*this, cache, blocks, delta, config, head_dim);
    return;
  }
  cpu::shift_keys(cache, blocks, delta, config, head_dim);
}

void CpuBackend::do_attention_scores(const TensorView& q, const KvLayer& cache, const SequenceSlice& seq,
                                     int64_t first_row, const AttentionConfig& config, float* scores,
                                     int64_t slot_stride) {
  cpu::attention_scores(q, cache, seq, first_row, config, scores, slot_stride, pool_);
}

void CpuBackend::do_gather_kv_rows(KvLayer& cache, std::span<const int32_t> src_table,
                                   std::span<const int32_t> dst_table, std::span<const int32_t> keep, int64_t head_dim,
                                   int64_t value_dim) {
  cpu::gather_kv_rows(cache, src_table, dst_table, keep, head_dim, value_dim);
}

void CpuBackend::do_read_kv_block(const KvLayer& cache, int64_t block, void* host_k, void* host_v) {
  cpu::read_kv_block(cache, block, host_k, host_v);
}

void CpuBackend::do_write_kv_block(KvLayer& cache, int64_t block, const void* host_k, const void* host_v) {
  cpu::write_kv_block(cache, block, host_k, host_v);
}

void CpuBackend::do_attention(const TensorView& q, const KvLayer& cache, std::span<const SequenceSlice> seqs,
                              const AttentionConfig& config, TensorView& out) {
  cpu::attention(q, cache, seqs, config, out, pool_, attention_scratch_);
}

void CpuBackend::do_attention_scored(const TensorView& q, const KvLayer& cache, std::span<const SequenceSlice> seqs,
                                     const AttentionConfig& config, std::span<const AttentionScoreTarget> targets,
                                     TensorView& out) {
  cpu::attention_scored(q, cache, seqs, config, targets, out, pool_, attention_scratch_);
}

}  // namespace lumen::backend
