#pragma once
// A backend for the load-time refusal tests: it declares whichever features, weight types and
// KV cache types a test gives it, holds weights and buffers in host memory (so a model it
// accepts loads), and runs no op: anything that reaches one fails the test loudly. A refusal
// at load must come before any op, so this backend can tell a refusal at load from one inside
// a step.
#include <cstring>
#include <memory>
#include <set>
#include <vector>

#include "backend/backend.h"
#include "util/error.h"

namespace lumen::testing {

struct LimitedSupport {
  std::set<backend::BackendFeature> features;
  std::set<tensor::DType> weight_types;
  std::set<tensor::DType> kv_types;
  int64_t max_head_dim = 0;
  int64_t max_latent_head_dim = -1;  // -1: the same as max_head_dim (Backend's default)
};

// Everything the CPU backend runs (every feature, weight type with reference kernels, KV type).
inline LimitedSupport everything() {
  LimitedSupport s;
  for (backend::BackendFeature f : backend::kAllBackendFeatures) s.features.insert(f);
  for (uint32_t raw = 0; raw < 64; ++raw) {
    if (const tensor::DTypeInfo* info = tensor::dtype_info(raw); info && tensor::has_reference_kernels(info->type)) {
      s.weight_types.insert(info->type);
      if (backend::is_kv_cache_type(info->type)) s.kv_types.insert(info->type);
    }
  }
  s.kv_types.insert(tensor::DType::FP8_E4M3);
  return s;
}

class LimitedBackend final : public backend::Backend {
 public:
  explicit LimitedBackend(LimitedSupport support) : support_(std::move(support)) {}
  std::string_view name() const override { return "limited"; }

 protected:
  bool do_supports(backend::BackendFeature f) const override { return support_.features.contains(f); }
  bool do_supports_weight_type(tensor::DType t) const override { return support_.weight_types.contains(t); }
  bool do_supports_kv_type(tensor::DType t) const override { return support_.kv_types.contains(t); }
  int64_t do_max_attention_head_dim() const override { return support_.max_head_dim; }
  int64_t do_max_latent_attention_head_dim() const override {
    return support_.max_latent_head_dim < 0 ? support_.max_head_dim : support_.max_latent_head_dim;
  }

  std::unique_ptr<backend::Buffer> do_allocate(size_t bytes) override { return std::make_unique<Host>(bytes); }
  backend::TensorView do_upload_weights(tensor::DType type, std::array<int64_t, 4> dims,
                                        const void* host_data) override {
    return {type, dims, static_cast<size_t>(*tensor::row_bytes(type, dims[0])), const_cast<void*>(host_data)};
  }
  void do_copy_to_host(const backend::TensorView&, float*) override { no_ops(); }
  void do_copy_from_host(const float*, backend::TensorView&) override { no_ops(); }
  void do_matmul(const backend::TensorView&, const backend::TensorView&, backend::TensorView&) override { no_ops(); }
  void do_get_rows(const backend::TensorView&, std::span<const int32_t>, backend::TensorView&) override { no_ops(); }
  void do_rms_norm(const backend::TensorView&, const backend::TensorView&, float, backend::TensorView&) override {
    no_ops();
  }
  void do_add(const backend::TensorView&, const backend::TensorView&, backend::TensorView&) override { no_ops(); }
  void do_add_row(backend::TensorView&, const backend::TensorView&) override { no_ops(); }
  void do_scale(backend::TensorView&, float) override { no_ops(); }
  void do_swiglu(const backend::TensorView&, const backend::TensorView&, backend::TensorView&) override { no_ops(); }
  void do_geglu(const backend::TensorView&, const backend::TensorView&, backend::TensorView&) override { no_ops(); }
  void do_rope(backend::TensorView&, std::span<const int32_t>, const backend::RopeConfig&) override { no_ops(); }
  void do_store_kv(const backend::TensorView&, const backend::TensorView&, std::span<const backend::SequenceSlice>,
                   backend::KvLayer&) override {
    no_ops();
  }
  void do_copy_kv_block(backend::KvLayer&, int64_t, int64_t) override { no_ops(); }
  void do_read_kv_block(const backend::KvLayer&, int64_t, void*, void*) override { no_ops(); }
  void do_write_kv_block(backend::KvLayer&, int64_t, const void*, const void*) override { no_ops(); }
  void do_attention(const backend::TensorView&, const backend::KvLayer&, std::span<const backend::SequenceSlice>,
                    const backend::AttentionConfig&, backend::TensorView&) override {
    no_ops();
  }

 private:
  struct Host final : backend::Buffer {
    explicit Host(size_t bytes) : bytes_(bytes, 0) {}
    void* data() override { return bytes_.data(); }
    size_t size() const override { return bytes_.size(); }
    std::vector<uint8_t> bytes_;
  };
  [[noreturn]] static void no_ops() { fail("the limited test backend runs no ops"); }

  LimitedSupport support_;
};

// Counts the ops of a backend (an observer): a refusal at load leaves these at 0.
class OpCounter final : public backend::OpObserver {
 public:
  void before_op(const backend::OpCall& call) override { ++counts_[static_cast<size_t>(call.kind)]; }
  void after_op(const backend::OpCall&) override {}
  int64_t count(backend::OpKind kind) const { return counts_[static_cast<size_t>(kind)]; }

 private:
  std::array<int64_t, 64> counts_{};
};

}  // namespace lumen::testing
