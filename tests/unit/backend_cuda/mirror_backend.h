#pragma once
// A diagnostic Backend that runs every op twice, on the CPU backend and on the CUDA backend, and
// measures how far the CUDA result is from the CPU's after each op. After the comparison the
// CPU's output is copied over the device's, so every op starts from identical inputs and its
// error is its own, not the sum of the ops before it. A model loaded on a MirrorBackend follows
// the CPU's numbers; the report says which op (kind, shapes, call number) the GPU departs at.
//
// Every buffer exists twice (host and device, same size and layout); views handed to the model
// are host views, and each op translates them to their device twins by address.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backend/common/composed_moe_ffn.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/cuda/cuda_backend.h"
#include "util/error.h"

namespace lumen::backend::testing {

// The worst difference seen for one kind of op.
struct OpDeparture {
  int64_t calls = 0;
  double worst_relative = 0.0;  // max |gpu - cpu| / max |cpu| over one call's output
  std::string worst_call;       // shapes and call number of the worst one
};

class MirrorBackend final : public Backend {
 public:
  // resync false: the device keeps its own results, and the differences accumulate as they do
  // on a real run (each op still waits for the device, which hides races between ops).
  MirrorBackend(CpuBackend& cpu, CudaBackend& gpu, bool resync = true) : cpu_(cpu), gpu_(gpu), resync_(resync) {}

  std::string_view name() const override { return "mirror"; }
  const std::map<std::string, OpDeparture>& departures() const { return departures_; }

  // What both backends run; moe_ffn is composed here from the mirrored ops (as CUDA composes it),
  // so each of its steps is compared on its own.
  bool do_supports(BackendFeature feature) const override {
    return (feature == BackendFeature::MoeFfn || feature == BackendFeature::StateSpace ||
            feature == BackendFeature::LatentAttention || feature == BackendFeature::LayerNorm ||
            feature == BackendFeature::Encoder || feature == BackendFeature::Alibi ||
            feature == BackendFeature::SpanAttention || feature == BackendFeature::Rwkv7 ||
            feature == BackendFeature::AttentionSinks || feature == BackendFeature::BiasedExperts) &&
           cpu_.supports(feature) && gpu_.supports(feature);
  }
  bool do_supports_weight_type(tensor::DType type) const override {
    return cpu_.supports_weight_type(type) && gpu_.supports_weight_type(type);
  }
  int64_t do_max_attention_head_dim() const override { return gpu_.max_attention_head_dim(); }
  int64_t do_max_latent_attention_head_dim() const override { return gpu_.max_latent_attention_head_dim(); }
  void do_moe_ffn(const TensorView& x, std::span<const ExpertWork> experts, int64_t n_slots, Glu glu,
                  TensorView& out) override {
    const bool biased = glu == Glu::SwigluOai || std::any_of(experts.begin(), experts.end(), [](const ExpertWork& e) {
                          return e.gate_bias != nullptr || e.up_bias != nullptr || e.down_bias != nullptr;
                        });
    if (!biased) {
      moe_.run(*this, x, experts, n_slots, glu, out);
      return;
    }
    // gpt-oss's experts: the biased GLU inside each backend's composition is its own, so each
    // backend's moe_ffn runs whole and is compared as one op.
    std::vector<TensorView> views;
    views.reserve(experts.size() * 6);  // no reallocation: the work points into it
    std::vector<ExpertWork> device_work(experts.begin(), experts.end());
    for (ExpertWork& e : device_work) {
      for (const TensorView** m : {&e.gate, &e.up, &e.down, &e.gate_bias, &e.up_bias, &e.down_bias}) {
        if (*m == nullptr) continue;
        views.push_back(twin(**m));
        *m = &views.back();
      }
    }
    TensorView d = twin(out);
    gpu_.moe_ffn(twin(x), device_work, n_slots, glu, d);
    cpu_.moe_ffn(x, experts, n_slots, glu, out);
    compare("moe_ffn " + describe(x), out, d);
  }
  // Mamba 2's ops update each sequence's state in place: the states are compared (and resynced)
  // after the output, as ops of their own kind ("ssm_conv_window", "ssm_state").
  void do_ssm_conv(const TensorView& x, const TensorView& weight, const TensorView& bias,
                   std::span<const SsmSequence> seqs, TensorView& out) override {
    TensorView d = twin(out);
    const std::vector<SsmSequence> device_seqs = twins(seqs);
    gpu_.ssm_conv(twin(x), twin(weight), twin(bias), device_seqs, d);
    cpu_.ssm_conv(x, weight, bias, seqs, out);
    compare("ssm_conv " + describe(x), out, d);
    for (size_t i = 0; i < seqs.size(); ++i) {
      compare("ssm_conv_window " + describe(seqs[i].conv_window), seqs[i].conv_window, device_seqs[i].conv_window);
    }
  }
  void do_ssm_scan(const TensorView& x, const TensorView& dt, const TensorView& b, const TensorView& c,
                   const SsmScanWeights& weights, std::span<const SsmSequence> seqs, TensorView& y) override {
    TensorView d = twin(y);
    const std::vector<SsmSequence> device_seqs = twins(seqs);
    const TensorView a = twin(*weights.a), skip = twin(*weights.d), dt_bias = twin(*weights.dt_bias);
    const SsmScanWeights device_weights{&a, &skip, &dt_bias, weights.head_dim, weights.groups};
    gpu_.ssm_scan(twin(x), twin(dt), twin(b), twin(c), device_weights, device_seqs, d);
    cpu_.ssm_scan(x, dt, b, c, weights, seqs, y);
    compare("ssm_scan " + describe(x), y, d);
    for (size_t i = 0; i < seqs.size(); ++i) {
      compare("ssm_state " + describe(seqs[i].state), seqs[i].state, device_seqs[i].state);
    }
  }

  // RWKV 7's ops; the token shift and the wkv update also change each sequence's state, compared
  // (and resynced) after the output as ops of their own kind ("rwkv7_shift_row", "wkv7_state").
  void do_rwkv7_norm(const TensorView& x, const TensorView& weight, const TensorView& bias, double eps, int64_t group,
                     TensorView& out) override {
    TensorView d = twin(out);
    gpu_.rwkv7_norm(twin(x), twin(weight), twin(bias), eps, group, d);
    cpu_.rwkv7_norm(x, weight, bias, eps, group, out);
    compare("rwkv7_norm " + describe(x), out, d);
  }
  void do_rwkv7_token_shift(const TensorView& x, std::span<const TokenShiftSequence> seqs, const TensorView& mixes,
                            TensorView& out) override {
    TensorView d = twin(out);
    std::vector<TokenShiftSequence> device_seqs(seqs.begin(), seqs.end());
    for (TokenShiftSequence& q : device_seqs) q.shift = twin(q.shift);
    gpu_.rwkv7_token_shift(twin(x), device_seqs, twin(mixes), d);
    cpu_.rwkv7_token_shift(x, seqs, mixes, out);
    compare("rwkv7_token_shift " + describe(x), out, d);
    for (size_t i = 0; i < seqs.size(); ++i) {
      compare("rwkv7_shift_row " + describe(seqs[i].shift), seqs[i].shift, device_seqs[i].shift);
    }
  }
  void do_rwkv7_activation(TensorView& x, Rwkv7Activation f) override {
    TensorView d = twin(x);
    gpu_.rwkv7_activation(d, f);
    cpu_.rwkv7_activation(x, f);
    compare("rwkv7_activation " + describe(x), x, d);
  }
  void do_rwkv7_value_residual(TensorView& v, const TensorView& first, const TensorView& mix,
                               const TensorView& v0) override {
    TensorView d = twin(v);
    gpu_.rwkv7_value_residual(d, twin(first), twin(mix), twin(v0));
    cpu_.rwkv7_value_residual(v, first, mix, v0);
    compare("rwkv7_value_residual " + describe(v), v, d);
  }
  void do_rwkv7_keys(Rwkv7KeyRows& rows, const Rwkv7KeyWeights& weights, int64_t head_size) override {
    Rwkv7KeyRows d{twin(rows.w), twin(rows.a), twin(rows.k), twin(rows.kk), twin(rows.b)};
    gpu_.rwkv7_keys(d, {twin(weights.w0), twin(weights.a0), twin(weights.k_k), twin(weights.k_a)}, head_size);
    cpu_.rwkv7_keys(rows, weights, head_size);
    compare("rwkv7_keys w " + describe(rows.w), rows.w, d.w);
    compare("rwkv7_keys a", rows.a, d.a);
    compare("rwkv7_keys k", rows.k, d.k);
    compare("rwkv7_keys kk", rows.kk, d.kk);
    compare("rwkv7_keys b", rows.b, d.b);
  }
  void do_rwkv7_bonus_gate(TensorView& out, const TensorView& r, const TensorView& k, const TensorView& v,
                           const TensorView& g, const TensorView& r_k, int64_t head_size) override {
    TensorView d = twin(out);
    gpu_.rwkv7_bonus_gate(d, twin(r), twin(k), twin(v), twin(g), twin(r_k), head_size);
    cpu_.rwkv7_bonus_gate(out, r, k, v, g, r_k, head_size);
    compare("rwkv7_bonus_gate " + describe(out), out, d);
  }
  void do_rwkv_wkv7(const Wkv7Rows& rows, int64_t head_size, std::span<const Wkv7Sequence> seqs,
                    TensorView& out) override {
    TensorView d = twin(out);
    std::vector<Wkv7Sequence> device_seqs(seqs.begin(), seqs.end());
    for (Wkv7Sequence& q : device_seqs) q.state = twin(q.state);
    const Wkv7Rows device_rows{twin(rows.r), twin(rows.w), twin(rows.k), twin(rows.v), twin(rows.a), twin(rows.b)};
    gpu_.rwkv_wkv7(device_rows, head_size, device_seqs, d);
    cpu_.rwkv_wkv7(rows, head_size, seqs, out);
    compare("rwkv_wkv7 " + describe(rows.r), out, d);
    for (size_t i = 0; i < seqs.size(); ++i) {
      compare("wkv7_state " + describe(seqs[i].state), seqs[i].state, device_seqs[i].state);
    }
  }

  std::unique_ptr<Buffer> do_allocate(size_t bytes) override {
    auto pair = std::make_unique<PairBuffer>(cpu_.allocate(bytes), gpu_.allocate(bytes));
    remember(pair->host->data(), bytes, pair->device->data());
    return pair;
  }

  TensorView do_upload_weights(tensor::DType type, std::array<int64_t, 4> dims, const void* host_data) override {
    TensorView host = cpu_.upload_weights(type, dims, host_data);
    TensorView device = gpu_.upload_weights(type, dims, host_data);
    remember(host.data, host.row_bytes * static_cast<size_t>(host.rows()), device.data);
    return host;
  }

  void do_copy_to_host(const TensorView& src, float* dst) override { cpu_.copy_to_host(src, dst); }
  void do_copy_from_host(const float* src, TensorView& dst) override {
    TensorView d = twin(dst);
    gpu_.copy_from_host(src, d);
    cpu_.copy_from_host(src, dst);
  }

  void do_matmul(const TensorView& w, const TensorView& x, TensorView& y) override {
    TensorView dy = twin(y, /*may_be_foreign=*/true);
    std::vector<float> foreign;  // y outside any buffer: the caller's logits array
    if (dy.data == nullptr) {
      foreign.resize(static_cast<size_t>(y.elements()));
      dy = f32_matrix(foreign.data(), y.dims[0], y.rows());
    }
    gpu_.matmul(twin(w), twin(x), dy);
    cpu_.matmul(w, x, y);
    compare("matmul " + describe(w) + " x " + describe(x), y, dy, /*device_is_host=*/!foreign.empty());
  }
  void do_get_rows(const TensorView& table, std::span<const int32_t> ids, TensorView& out) override {
    TensorView d = twin(out);
    gpu_.get_rows(twin(table), ids, d);
    cpu_.get_rows(table, ids, out);
    compare("get_rows " + describe(table), out, d);
  }
  void do_rms_norm(const TensorView& x, const TensorView& weight, float eps, TensorView& out) override {
    TensorView d = twin(out);
    gpu_.rms_norm(twin(x), twin(weight), eps, d);
    cpu_.rms_norm(x, weight, eps, out);
    compare("rms_norm " + describe(x), out, d);
  }
  void do_add(const TensorView& a, const TensorView& b, TensorView& out) override {
    TensorView d = twin(out);
    gpu_.add(twin(a), twin(b), d);
    cpu_.add(a, b, out);
    compare("add " + describe(a), out, d);
  }
  void do_add_row(TensorView& x, const TensorView& row) override {
    TensorView d = twin(x);
    gpu_.add_row(d, twin(row));
    cpu_.add_row(x, row);
    compare("add_row " + describe(x), x, d);
  }
  // The ops a model applies to its logits after the output matmul (granite's logit scale, gemma2's
  // final soft cap) meet the caller's host array there, which has no device twin: the CPU's runs
  // alone (the device's op is compared wherever it meets device buffers).
  void do_scale(TensorView& x, float factor) override {
    if (device_address(x.data) == nullptr) return cpu_.scale(x, factor);
    TensorView d = twin(x);
    gpu_.scale(d, factor);
    cpu_.scale(x, factor);
    compare("scale " + describe(x), x, d);
  }
  void do_activation(TensorView& x, Activation kind) override {
    if (device_address(x.data) == nullptr) return cpu_.activation(x, kind);
    TensorView d = twin(x);
    gpu_.activation(d, kind);
    cpu_.activation(x, kind);
    compare("activation " + describe(x), x, d);
  }
  void do_swiglu(const TensorView& gate, const TensorView& up, TensorView& out) override {
    TensorView d = twin(out);
    gpu_.swiglu(twin(gate), twin(up), d);
    cpu_.swiglu(gate, up, out);
    compare("swiglu " + describe(gate), out, d);
  }
  void do_geglu(const TensorView& gate, const TensorView& up, TensorView& out) override {
    TensorView d = twin(out);
    gpu_.geglu(twin(gate), twin(up), d);
    cpu_.geglu(gate, up, out);
    compare("geglu " + describe(gate), out, d);
  }
  void do_layer_norm(const TensorView& x, const TensorView& weight, const TensorView& bias, float eps,
                     TensorView& out) override {
    TensorView d = twin(out);
    gpu_.layer_norm(twin(x), twin(weight), twin(bias), eps, d);
    cpu_.layer_norm(x, weight, bias, eps, out);
    compare("layer_norm " + describe(x), out, d);
  }
  void do_gelu_erf(TensorView& x) override {
    TensorView d = twin(x);
    gpu_.gelu_erf(d);
    cpu_.gelu_erf(x);
    compare("gelu_erf " + describe(x), x, d);
  }
  void do_gelu_tanh(TensorView& x) override {
    TensorView d = twin(x);
    gpu_.gelu_tanh(d);
    cpu_.gelu_tanh(x);
    compare("gelu_tanh " + describe(x), x, d);
  }
  void do_bidirectional_attention(const TensorView& q, const TensorView& k, const TensorView& v,
                                  std::span<const SequenceSlice> seqs, const AttentionConfig& config,
                                  TensorView& out) override {
    TensorView d = twin(out);
    gpu_.bidirectional_attention(twin(q), twin(k), twin(v), seqs, config, d);
    cpu_.bidirectional_attention(q, k, v, seqs, config, out);
    compare("bidirectional_attention " + describe(q), out, d);
  }
  void do_rope(TensorView& x, std::span<const int32_t> positions, const RopeConfig& config) override {
    TensorView d = twin(x);
    RopeConfig device_config = config;
    if (config.freq_factors != nullptr) {
      const void* on_device = device_address(config.freq_factors);
      if (on_device != nullptr) device_config.freq_factors = static_cast<const float*>(on_device);
    }
    gpu_.rope(d, positions, device_config);
    cpu_.rope(x, positions, config);
    compare("rope " + describe(x), x, d);
  }
  void do_store_kv(const TensorView& k, const TensorView& v, std::span<const SequenceSlice> seqs,
                   KvLayer& cache) override {
    KvLayer d = twin(cache);
    gpu_.store_kv(twin(k), twin(v), seqs, d);
    cpu_.store_kv(k, v, seqs, cache);
    compare("store_kv k " + describe(cache.k), cache.k, d.k);
    compare("store_kv v " + describe(cache.v), cache.v, d.v);
  }
  void do_copy_kv_block(KvLayer& cache, int64_t src, int64_t dst) override {
    KvLayer d = twin(cache);
    gpu_.copy_kv_block(d, src, dst);
    cpu_.copy_kv_block(cache, src, dst);
  }
  void do_read_kv_block(const KvLayer& cache, int64_t block, void* host_k, void* host_v) override {
    cpu_.read_kv_block(cache, block, host_k, host_v);
  }
  void do_write_kv_block(KvLayer& cache, int64_t block, const void* host_k, const void* host_v) override {
    KvLayer d = twin(cache);
    gpu_.write_kv_block(d, block, host_k, host_v);
    cpu_.write_kv_block(cache, block, host_k, host_v);
  }
  void do_attention(const TensorView& q, const KvLayer& cache, std::span<const SequenceSlice> seqs,
                    const AttentionConfig& config, TensorView& out) override {
    TensorView d = twin(out);
    AttentionConfig device_config = config;  // the sinks (gpt-oss) are a weight: their twin
    if (config.sinks != nullptr) device_config.sinks = static_cast<const float*>(device_address(config.sinks));
    gpu_.attention(twin(q), twin(cache), seqs, device_config, d);
    cpu_.attention(q, cache, seqs, config, out);
    compare("attention " + describe(q), out, d);
  }

 private:
  struct PairBuffer final : Buffer {
    PairBuffer(std::unique_ptr<Buffer> h, std::unique_ptr<Buffer> d) : host(std::move(h)), device(std::move(d)) {}
    void* data() override { return host->data(); }
    size_t size() const override { return host->size(); }
    std::unique_ptr<Buffer> host, device;
  };
  struct Region {
    size_t bytes;
    uint8_t* device;
  };

  void remember(void* host, size_t bytes, void* device) {
    regions_[static_cast<const uint8_t*>(host)] = Region{bytes, static_cast<uint8_t*>(device)};
  }
  // The device address of host address p, with how many bytes of its region follow; null when
  // p lies in no buffer or weight of this backend.
  const void* device_address(const void* p, size_t* room = nullptr) const {
    const auto* at = static_cast<const uint8_t*>(p);
    auto it = regions_.upper_bound(at);
    if (it == regions_.begin()) return nullptr;
    --it;
    const size_t offset = static_cast<size_t>(at - it->first);
    if (offset >= it->second.bytes) return nullptr;
    if (room != nullptr) *room = it->second.bytes - offset;
    return it->second.device + offset;
  }
  TensorView twin(const TensorView& host, bool may_be_foreign = false) const {
    TensorView d = host;
    d.data = const_cast<void*>(device_address(host.data));
    if (d.data == nullptr && !may_be_foreign) throw Error("mirror: a view outside every buffer");
    return d;
  }
  std::vector<SsmSequence> twins(std::span<const SsmSequence> seqs) const {
    std::vector<SsmSequence> d(seqs.begin(), seqs.end());
    for (SsmSequence& s : d) {
      if (s.conv_window.data != nullptr) s.conv_window = twin(s.conv_window);
      if (s.state.data != nullptr) s.state = twin(s.state);
    }
    return d;
  }
  KvLayer twin(const KvLayer& host) const {
    KvLayer d = host;
    d.k = twin(host.k);
    d.v = twin(host.v);
    return d;
  }
  static std::string describe(const TensorView& v) {
    return std::string(tensor::dtype_name(v.type)) + "[" + std::to_string(v.dims[0]) + "x" +
           std::to_string(v.rows()) + "]";
  }

  // Compares the two results, records the departure, then makes the device's copy the CPU's.
  // device_is_host: the "device" result was computed into host memory (the caller's logits).
  void compare(const std::string& what, const TensorView& host, const TensorView& device, bool device_is_host = false) {
    std::vector<float> want(static_cast<size_t>(host.elements()));
    std::vector<float> got(want.size());
    cpu_.copy_to_host(host, want.data());
    if (device_is_host) {
      cpu_.copy_to_host(device, got.data());
    } else {
      gpu_.copy_to_host(device, got.data());
    }
    double diff = 0.0, scale = 0.0;
    for (size_t i = 0; i < want.size(); ++i) {
      diff = std::max(diff, std::fabs(static_cast<double>(want[i]) - got[i]));
      if (!std::isfinite(got[i])) diff = INFINITY;
      scale = std::max(scale, std::fabs(static_cast<double>(want[i])));
    }
    const double relative = scale > 0.0 ? diff / scale : diff;
    const std::string kind = what.substr(0, what.find(' '));
    if (std::getenv("LUMEN_MIRROR_TRACE") != nullptr) std::printf("%lld %s %.3g\n", static_cast<long long>(calls_), what.c_str(), relative);
    OpDeparture& d = departures_[kind];
    if (d.calls == 0 || relative > d.worst_relative) {
      d.worst_relative = relative;
      d.worst_call = what + " call " + std::to_string(calls_);
    }
    ++d.calls;
    ++calls_;
    size_t room = 0;
    void* device_data = const_cast<void*>(device_address(host.data, &room));
    if (resync_ && device_data != nullptr) {
      gpu_.upload(device_data, host.data, std::min(room, host.row_bytes * static_cast<size_t>(host.rows())));
    }
  }

  CpuBackend& cpu_;
  CudaBackend& gpu_;
  std::map<const uint8_t*, Region> regions_;  // host address -> its device twin
  std::map<std::string, OpDeparture> departures_;
  bool resync_;
  common::ComposedMoeFfn moe_;
  int64_t calls_ = 0;
};

}  // namespace lumen::backend::testing
