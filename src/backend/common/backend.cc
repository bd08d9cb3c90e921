// The Backend's public methods: check the arguments once for every backend (op_checks.h), let
// the observers see the call, run the backend's do_* implementation. The attention ops are in
// backend_attention.cc.
#include "backend/backend.h"

#include <algorithm>
#include <cstddef>
#include <new>

#include "backend/common/observed.h"

#include "backend/common/get_rows_check.h"
#include "backend/common/op_checks.h"
#include "backend/common/ssm_checks.h"
#include "backend/common/wkv7_checks.h"

namespace lumen::backend {

void Backend::add_observer(OpObserver* observer) {
  if (observer != nullptr) observers_.push_back(observer);
}

void Backend::remove_observer(OpObserver* observer) { std::erase(observers_, observer); }

void Backend::begin_step(const StepMetadata& step) {
  if (in_step_) fail("begin_step: the previous step is still open (end_step or abort_step first)");
  ended_logit_rows_ = 0;
  common::check_step(step);
  OpCall call{OpKind::BeginStep};
  call.step = &step;
  observed(call, [&] {
    do_begin_step(step);
    step_ = step;
    in_step_ = true;
  });
}

TensorView Backend::step_logits() {
  if (!in_step_ || step_.logits == nullptr) fail("step_logits: no open step returns logits");
  return do_step_logits();
}

TensorView Backend::do_step_logits() {
  return f32_matrix(step_.logits, step_.logit_width, static_cast<int64_t>(step_.logit_rows.size()));
}

void Backend::end_step() {
  if (!in_step_) fail("end_step: no step is open");
  OpCall call{OpKind::EndStep};
  call.step = &step_;
  try {
    observed(call, [&] { do_end_step(); });
  } catch (...) {
    abort_step();
    throw;
  }
  in_step_ = false;
  ended_logit_rows_ = step_.logits != nullptr ? step_.logit_rows.size() : 0;
  ended_logit_width_ = step_.logit_width;
  step_ = {};
}

void Backend::copy_logit_rows(std::span<const int32_t> rows, float* logits) {
  if (in_step_) fail("copy_logit_rows: a step is open (the last step's logits are gone)");
  for (const int32_t row : rows) {
    if (row < 0 || static_cast<size_t>(row) >= ended_logit_rows_) {
      fail("copy_logit_rows: row {} of the last step's {} rows of logits", row, ended_logit_rows_);
    }
  }
  if (!rows.empty()) do_copy_logit_rows(rows, ended_logit_width_, logits);
}

void Backend::do_copy_logit_rows(std::span<const int32_t> /*rows*/, int64_t /*width*/, float* /*logits*/) {
  fail("copy_logit_rows: this backend reduces no rows: every row of logits is in the step's host array");
}

void Backend::time_steps(bool on) {
  if (in_step_) fail("time_steps: a step is open");
  do_time_steps(on);
}

bool Backend::time_ops(bool on) {
  if (in_step_) fail("time_ops: a step is open");
  return do_time_ops(on);
}

std::vector<double> Backend::take_op_times() {
  if (in_step_) fail("take_op_times: a step is open");
  return do_take_op_times();
}

std::optional<DeviceCeilings> Backend::measure_device_ceilings() {
  if (in_step_) fail("measure_device_ceilings: a step is open");
  return do_measure_device_ceilings();
}

void Backend::abort_step() noexcept {
  if (!in_step_) return;
  do_abort_step();
  in_step_ = false;
  step_ = {};
}

void Backend::run_replayable(const std::function<void()>& ops) {
  if (!in_step_) fail("run_replayable: no step is open");
  // A replayed step runs none of its ops on the host: what one op left for the next (op_calls)
  // does not carry over its boundaries.
  ++op_calls_;
  struct CountEnd {
    uint64_t& calls;
    ~CountEnd() { ++calls; }
  } count_end{op_calls_};
  if (!observers_.empty()) {
    ops();
    return;
  }
  do_run_replayable(ops);
}

std::unique_ptr<Buffer> Backend::allocate(size_t bytes) {
  OpCall call{OpKind::Allocate};
  call.bytes = bytes;
  std::unique_ptr<Buffer> buffer;
  observed(call, [&] {
    buffer = do_allocate(bytes);
    call.buffer = buffer.get();
  });
  return buffer;
}

namespace {

// Ordinary host memory (Backend::do_allocate_host's default), zeroed, aligned for any vector load.
class HostBuffer final : public Buffer {
 public:
  explicit HostBuffer(size_t bytes)
      : bytes_(bytes), data_(new (std::align_val_t{64}) std::byte[std::max<size_t>(bytes, 1)]()) {}
  ~HostBuffer() override { ::operator delete[](data_, std::align_val_t{64}); }
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;
  void* data() override { return data_; }
  size_t size() const override { return bytes_; }

 private:
  size_t bytes_;
  std::byte* data_;
};

}  // namespace

std::unique_ptr<Buffer> Backend::allocate_host(size_t bytes) {
  if (in_step_) fail("allocate_host: not inside a step");
  return do_allocate_host(bytes);
}

std::unique_ptr<Buffer> Backend::do_allocate_host(size_t bytes) { return std::make_unique<HostBuffer>(bytes); }

TensorView Backend::upload_weights(tensor::DType type, std::array<int64_t, 4> dims, const void* host_data) {
  common::check_upload(type, dims, host_data);
  OpCall call{OpKind::UploadWeights};
  call.host_in = host_data;
  TensorView view;
  observed(call, [&] {
    view = do_upload_weights(type, dims, host_data);
    call.result = &view;
  });
  return view;
}

void Backend::copy_to_host(const TensorView& src, float* dst) {
  common::check_get_rows(src, 0, f32_matrix(dst, src.dims[0], 0));
  OpCall call{OpKind::CopyToHost};
  call.in = {&src};
  call.host_out = dst;
  observed(call, [&] { do_copy_to_host(src, dst); });
}

void Backend::copy_from_host(const float* src, TensorView& dst) {
  common::check_f32(dst, dst.dims[0], "copy_from_host", "dst");
  OpCall call{OpKind::CopyFromHost};
  call.out = {&dst};
  call.host_in = src;
  observed(call, [&] { do_copy_from_host(src, dst); });
}

void Backend::matmul(const TensorView& w, const TensorView& x, TensorView& y) {
  common::check_matmul(w, x, y);
  OpCall call{OpKind::Matmul};
  call.in = {&w, &x};
  call.out = {&y};
  observed(call, [&] { do_matmul(w, x, y); });
}

void Backend::matmul_same_input(const TensorView& x, std::span<const MatmulOutput> outputs) {
  for (const MatmulOutput& o : outputs) common::check_matmul(*o.w, x, *o.y);
  OpCall call{OpKind::MatmulSameInput};
  call.in = {&x};
  call.matmul_outputs = outputs;
  observed(call, [&] { do_matmul_same_input(x, outputs); });
}

void Backend::do_matmul_same_input(const TensorView& x, std::span<const MatmulOutput> outputs) {
  for (const MatmulOutput& o : outputs) do_matmul(*o.w, x, *o.y);
}

void Backend::matmul_glu(const TensorView& gate_w, const TensorView& up_w, const TensorView& x, Glu glu,
                         TensorView& gate, TensorView& up) {
  common::check_matmul(gate_w, x, gate);
  common::check_matmul(up_w, x, up);
  common::check_same_shape(gate, up, glu == Glu::Geglu ? "geglu" : "swiglu");
  // gpt-oss's clamped SwiGLU comes with its experts' biases, which only moe_ffn adds.
  if (glu == Glu::SwigluOai) fail("matmul_glu: the clamped SwiGLU (gpt-oss) runs inside moe_ffn only");
  OpCall call{OpKind::MatmulGlu};
  call.in = {&gate_w, &up_w, &x};
  call.out = {&gate, &up};
  call.glu = glu;
  observed(call, [&] { do_matmul_glu(gate_w, up_w, x, glu, gate, up); });
}

void Backend::do_matmul_glu(const TensorView& gate_w, const TensorView& up_w, const TensorView& x, Glu glu,
                            TensorView& gate, TensorView& up) {
  const MatmulOutput outputs[] = {{&gate_w, &gate}, {&up_w, &up}};
  do_matmul_same_input(x, outputs);
  if (glu == Glu::Geglu) {
    do_geglu(gate, up, gate);
  } else {
    do_swiglu(gate, up, gate);
  }
}

void Backend::get_rows(const TensorView& table, std::span<const int32_t> ids, TensorView& out) {
  common::check_get_rows_ids(table, ids, out);
  OpCall call{OpKind::GetRows};
  call.in = {&table};
  call.out = {&out};
  call.indices = ids;
  observed(call, [&] { do_get_rows(table, ids, out); });
}

void Backend::rms_norm(const TensorView& x, const TensorView& weight, float eps, TensorView& out) {
  common::check_f32(x, x.dims[0], "rms_norm", "x");
  common::check_f32(weight, x.dims[0], "rms_norm", "weight");
  common::check_same_shape(x, out, "rms_norm");
  OpCall call{OpKind::RmsNorm};
  call.in = {&x, &weight};
  call.out = {&out};
  call.value = eps;
  observed(call, [&] { do_rms_norm(x, weight, eps, out); });
}

void Backend::add(const TensorView& a, const TensorView& b, TensorView& out) {
  common::check_f32(a, a.dims[0], "add", "a");
  common::check_same_shape(a, b, "add");
  common::check_same_shape(a, out, "add");
  OpCall call{OpKind::Add};
  call.in = {&a, &b};
  call.out = {&out};
  observed(call, [&] { do_add(a, b, out); });
}

void Backend::add_rms_norm(const TensorView& a, const TensorView& b, const TensorView& weight, float eps,
                           TensorView& sum, TensorView& out) {
  require_op(OpKind::AddRmsNorm);
  common::check_f32(a, a.dims[0], "add_rms_norm", "a");
  common::check_same_shape(a, b, "add_rms_norm");
  common::check_same_shape(a, sum, "add_rms_norm");
  common::check_same_shape(a, out, "add_rms_norm");
  common::check_f32(weight, a.dims[0], "add_rms_norm", "weight");
  // out is written from sum row by row, in parallel: memory of both would be normalised while
  // another row still reads it.
  if (common::rows_overlap(sum, out)) fail("add_rms_norm: out may not overlap sum");
  OpCall call{OpKind::AddRmsNorm};
  call.in = {&a, &b, &weight};
  call.out = {&sum, &out};
  call.value = eps;
  observed(call, [&] { do_add_rms_norm(a, b, weight, eps, sum, out); });
}

void Backend::do_add_rms_norm(const TensorView&, const TensorView&, const TensorView&, float, TensorView&,
                              TensorView&) {
  refuse_op(OpKind::AddRmsNorm);
}

void Backend::add_row(TensorView& x, const TensorView& row) {
  common::check_f32(x, x.dims[0], "add_row", "x");
  common::check_f32(row, x.dims[0], "add_row", "row");
  OpCall call{OpKind::AddRow};
  call.in = {&row};
  call.out = {&x};
  observed(call, [&] { do_add_row(x, row); });
}

void Backend::scale(TensorView& x, float factor) {
  common::check_f32(x, x.dims[0], "scale", "x");
  OpCall call{OpKind::Scale};
  call.out = {&x};
  call.value = factor;
  observed(call, [&] { do_scale(x, factor); });
}

void Backend::swiglu(const TensorView& gate, const TensorView& up, TensorView& out) {
  common::check_f32(gate, gate.dims[0], "swiglu", "gate");
  common::check_same_shape(gate, up, "swiglu");
  common::check_same_shape(gate, out, "swiglu");
  OpCall call{OpKind::Swiglu};
  call.in = {&gate, &up};
  call.out = {&out};
  observed(call, [&] { do_swiglu(gate, up, out); });
}

void Backend::geglu(const TensorView& gate, const TensorView& up, TensorView& out) {
  common::check_f32(gate, gate.dims[0], "geglu", "gate");
  common::check_same_shape(gate, up, "geglu");
  common::check_same_shape(gate, out, "geglu");
  OpCall call{OpKind::Geglu};
  call.in = {&gate, &up};
  call.out = {&out};
  observed(call, [&] { do_geglu(gate, up, out); });
}

void Backend::rotate_heads(TensorView& x, int64_t head_dim) {
  common::check_rotate_heads(x, head_dim);
  OpCall call{OpKind::RotateHeads};
  call.out = {&x};
  call.numbers = {head_dim, 0};
  observed(call, [&] { do_rotate_heads(x, head_dim); });
}

void Backend::do_rotate_heads(TensorView&, int64_t) {
  fail("rotate_heads (a rotated KV cache) is not supported on the {} backend", name());
}

void Backend::rope(TensorView& x, std::span<const int32_t> positions, const RopeConfig& config) {
  common::check_rope(x, positions);
  OpCall call{OpKind::Rope};
  call.out = {&x};
  call.indices = positions;
  call.rope = &config;
  observed(call, [&] { do_rope(x, positions, config); });
}

void Backend::store_kv(const TensorView& k, const TensorView& v, std::span<const SequenceSlice> seqs, KvLayer& cache) {
  common::check_store_kv(k, v, seqs, cache);
  OpCall call{OpKind::StoreKv};
  call.in = {&k, &v};
  call.seqs = seqs;
  call.cache = &cache;
  observed(call, [&] { do_store_kv(k, v, seqs, cache); });
}

void Backend::rope_store_kv(TensorView& q, TensorView& k, const TensorView& v, std::span<const int32_t> positions,
                            const RopeConfig& config, std::span<const SequenceSlice> seqs, KvLayer& cache) {
  require_op(OpKind::RopeStoreKv);
  common::check_rope_store_kv(q, k, v, positions, seqs, cache);
  OpCall call{OpKind::RopeStoreKv};
  call.in = {&v};
  call.out = {&q, &k};
  call.indices = positions;
  call.rope = &config;
  call.seqs = seqs;
  call.cache = &cache;
  observed(call, [&] { do_rope_store_kv(q, k, v, positions, config, seqs, cache); });
}

void Backend::do_rope_store_kv(TensorView&, TensorView&, const TensorView&, std::span<const int32_t>, const RopeConfig&,
                               std::span<const SequenceSlice>, KvLayer&) {
  refuse_op(OpKind::RopeStoreKv);
}

void Backend::copy_kv_block(KvLayer& cache, int64_t src, int64_t dst) {
  common::check_kv_block(cache, src, "copy_kv_block");
  common::check_kv_block(cache, dst, "copy_kv_block");
  OpCall call{OpKind::CopyKvBlock};
  call.cache = &cache;
  call.numbers = {src, dst};
  observed(call, [&] { do_copy_kv_block(cache, src, dst); });
}

void Backend::copy_kv_row(KvLayer& cache, int64_t src, int64_t dst) {
  common::check_kv_rows(cache, src, dst);
  OpCall call{OpKind::CopyKvRow};
  call.cache = &cache;
  call.numbers = {src, dst};
  observed(call, [&] { do_copy_kv_row(cache, src, dst); });
}

void Backend::do_copy_kv_row(KvLayer&, int64_t, int64_t) {
  fail("token-tree verification is not supported on the {} backend", name());
}

void Backend::read_kv_block(const KvLayer& cache, int64_t block, void* host_k, void* host_v) {
  common::check_kv_block(cache, block, "read_kv_block");
  OpCall call{OpKind::ReadKvBlock};
  call.cache = &cache;
  call.numbers = {block, 0};
  call.host_out = host_k;
  call.host_out2 = host_v;
  observed(call, [&] { do_read_kv_block(cache, block, host_k, host_v); });
}

void Backend::write_kv_block(KvLayer& cache, int64_t block, const void* host_k, const void* host_v) {
  common::check_kv_block(cache, block, "write_kv_block");
  OpCall call{OpKind::WriteKvBlock};
  call.cache = &cache;
  call.numbers = {block, 0};
  call.host_in = host_k;
  call.host_in2 = host_v;
  observed(call, [&] { do_write_kv_block(cache, block, host_k, host_v); });
}

void Backend::shift_keys(KvLayer& cache, std::span<const int32_t> blocks, int32_t delta, const RopeConfig& config,
                         int64_t head_dim) {
  common::check_shift_keys(cache, blocks, head_dim);
  OpCall call{OpKind::ShiftKeys};
  call.cache = &cache;
  call.indices = blocks;
  call.rope = &config;
  call.numbers = {head_dim, delta};
  observed(call, [&] { do_shift_keys(cache, blocks, delta, config, head_dim); });
}

void Backend::do_shift_keys(KvLayer&, std::span<const int32_t>, int32_t, const RopeConfig&, int64_t) {
  fail("context shift is not supported on the {} backend", name());
}

namespace {

// A backend without state-space kernels (supports(StateSpace) false) refuses before reading anything.
[[noreturn]] void refuse_state_space(std::string_view op, std::string_view backend) {
  fail("{} is not supported on the {} backend yet; use --device cpu", op, backend);
}

}  // namespace

void Backend::ssm_conv(const TensorView& x, const TensorView& weight, const TensorView& bias,
                       std::span<const SsmSequence> seqs, TensorView& out) {
  if (!supports(BackendFeature::StateSpace)) refuse_state_space("ssm_conv (a state-space model's convolution)", name());
  common::check_ssm_conv(x, weight, bias, seqs, out);
  OpCall call{OpKind::SsmConv};
  call.in = {&x, &weight, &bias};
  call.out = {&out};
  call.ssm_seqs = seqs;
  observed(call, [&] { do_ssm_conv(x, weight, bias, seqs, out); });
}

void Backend::do_ssm_conv(const TensorView&, const TensorView&, const TensorView&, std::span<const SsmSequence>,
                          TensorView&) {
  refuse_state_space("ssm_conv (a state-space model's convolution)", name());
}

void Backend::ssm_scan(const TensorView& x, const TensorView& dt, const TensorView& b, const TensorView& c,
                       const SsmScanWeights& weights, std::span<const SsmSequence> seqs, TensorView& y) {
  if (!supports(BackendFeature::StateSpace)) refuse_state_space("ssm_scan (a state-space model's scan)", name());
  common::check_ssm_scan(x, dt, b, c, weights, seqs, y);
  OpCall call{OpKind::SsmScan};
  call.in = {&x, &dt, &b, &c};
  call.out = {&y};
  call.ssm_seqs = seqs;
  call.ssm = &weights;
  observed(call, [&] { do_ssm_scan(x, dt, b, c, weights, seqs, y); });
}

void Backend::do_ssm_scan(const TensorView&, const TensorView&, const TensorView&, const TensorView&,
                          const SsmScanWeights&, std::span<const SsmSequence>, TensorView&) {
  refuse_state_space("ssm_scan (a state-space model's scan)", name());
}

namespace {

// A backend without the feature (supports(Rwkv7) false) refuses the op before reading anything.
[[noreturn]] void refuse_rwkv_wkv7(std::string_view backend) {
  fail("rwkv_wkv7 (RWKV 7's state update) is not supported on the {} backend yet; use --device cpu", backend);
}

}  // namespace

void Backend::rwkv_wkv7(const Wkv7Rows& rows, int64_t head_size, std::span<const Wkv7Sequence> seqs, TensorView& out) {
  if (!has_op(OpKind::RwkvWkv7)) refuse_rwkv_wkv7(name());
  common::check_rwkv_wkv7(rows, head_size, seqs, out);
  OpCall call{OpKind::RwkvWkv7};
  call.out = {&out};
  call.wkv7 = &rows;
  call.wkv7_seqs = seqs;
  call.numbers = {head_size, 0};
  observed(call, [&] { do_rwkv_wkv7(rows, head_size, seqs, out); });
}

void Backend::do_rwkv_wkv7(const Wkv7Rows&, int64_t, std::span<const Wkv7Sequence>, TensorView&) {
  refuse_rwkv_wkv7(name());
}

}  // namespace lumen::backend
