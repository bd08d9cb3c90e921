// route_experts and moe_ffn_routed, the declared ops that keep a MoE layer's routing where the
// backend keeps its logits. route_experts must choose what common::route_tokens chooses for the
// same logits (the router's definition, tested against softmax in double in moe_router_test),
// with the same weights, and count each choice. moe_ffn_routed must give, bit for bit, the
// backend's own moe_ffn for the same routing grouped by expert on the host (moe_ffn has its own
// rows against a reference in double, check_moe.cc), so equality carries that reference over
// (a shared expert's gate computed on a device is the one exception: see below). A prompt may
// instead give what moe_ffn gives 8 tokens at a time (a device's expert GEMV, whose products for
// a token do not depend on the batch), plus its shared expert over the whole prompt.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "backend/common/expert_router.h"
#include "backend/common/routed_expert_work.h"
#include "backend/cpu/cpu_backend.h"
#include "registered_ops.h"
#include "tensor_io.h"
#include "util/error.h"

namespace lumen::backend::conformance {
namespace {

using tensor::DType;

// The ids a backend wrote: an i32 buffer read back through an f32 view of the same bytes (the
// copy moves bits unchanged).
std::vector<int32_t> download_ids(Backend& backend, const TensorView& ids) {
  TensorView bits = ids;
  bits.type = DType::F32;
  const std::vector<float> values = download(backend, bits);
  std::vector<int32_t> out(values.size());
  std::memcpy(out.data(), values.data(), values.size() * sizeof(float));
  return out;
}

// Mode: the router of one architecture family.
RouterConfig router_for(int mode, int64_t n_experts, int64_t k) {
  RouterConfig c;
  c.n_experts = n_experts;
  c.n_used = k;
  switch (mode) {
    case 0: break;                      // Qwen2-MoE: softmax, weights as they are
    case 1: c.normalize = true; break;  // Mixtral, Qwen3-MoE: renormalized
    case 2:                             // DeepSeek-V3: sigmoid, bias, groups, scale
      c.gating = ExpertGating::Sigmoid;
      c.normalize = true;
      c.scale = 2.5f;
      c.n_groups = 8;
      c.n_groups_used = 4;
      break;
    case 4:  // gpt-oss: chosen by logit, a softmax over the chosen ones
      c.gating = ExpertGating::SoftmaxWeight;
      break;
    default:  // ties: logits in steps of 1/4, softmax renormalized
      c.normalize = true;
      break;
  }
  return c;
}

// Row: {experts, used per token, tokens}.
void check_route_experts(Backend& backend, const RegisteredRow& row) {
  const auto [n_experts, k, tokens] = row.shape;
  const RouterConfig config = router_for(row.mode, n_experts, k);
  if (config.gating == ExpertGating::SoftmaxWeight && !backend.supports(BackendFeature::BiasedExperts)) {
    GTEST_SKIP() << backend.name() << " does not run gpt-oss's experts";
  }
  std::vector<float> logits = random_values(static_cast<size_t>(n_experts * tokens), 61, -4.0f, 4.0f);
  if (row.mode == 3) {
    for (float& v : logits) v = std::round(v * 4.0f) / 4.0f;  // many equal logits: ties to the lower id
  }
  const std::vector<float> bias = random_values(static_cast<size_t>(n_experts), 62, -0.5f, 0.5f);
  const bool biased = row.mode == 2;
  std::vector<float> counts_before = random_values(static_cast<size_t>(n_experts), 63, 0.0f, 100.0f);
  for (float& c : counts_before) c = std::round(c);

  const BackendTensor logits_d = upload_f32(backend, {n_experts, tokens, 1, 1}, logits);
  const BackendTensor bias_d = upload_f32(backend, {n_experts, 1, 1, 1}, bias);
  BackendTensor counts_d = upload_f32(backend, {n_experts, 1, 1, 1}, counts_before);
  BackendTensor experts_d = allocate(backend, DType::I32, {k, tokens, 1, 1});
  BackendTensor weights_d = allocate(backend, DType::F32, {k, tokens, 1, 1});
  backend.route_experts(logits_d.view, biased ? &bias_d.view : nullptr, config, experts_d.view, weights_d.view,
                        &counts_d.view);

  common::Routing expected;
  common::route_tokens(logits, config, expected, biased ? std::span<const float>(bias) : std::span<const float>());
  EXPECT_EQ(download_ids(backend, experts_d.view), expected.experts) << "the experts chosen differ from route_tokens'";
  const std::vector<float> weights = download(backend, weights_d.view);
  ASSERT_EQ(weights.size(), expected.weights.size());
  for (size_t i = 0; i < weights.size(); ++i) {
    // The same probability up to a device's expf (2 ulp) and the order of its sums.
    EXPECT_NEAR(weights[i], expected.weights[i], 2e-6f * std::abs(expected.weights[i]) + 1e-12f) << "weight " << i;
  }
  std::vector<float> counts = counts_before;
  for (const int32_t e : expected.experts) counts[static_cast<size_t>(e)] += 1.0f;
  EXPECT_EQ(download(backend, counts_d.view), counts) << "counts";
}

// Mode: bit 0 a shared expert (bit 1: with its gate logit), bit 2 GeGLU, bits 3-7 the type (an
// index into type_of's list, so a float type and a batch past decode size take a device's other
// path), kGptOss gpt-oss's experts (biases, the clamped SwiGLU).
constexpr int kGptOss = 1 << 8;
DType type_of(const RegisteredRow& row) {
  static constexpr DType kTypes[] = {DType::Q4_0, DType::Q4_K, DType::Q8_0, DType::Q5_1,
                                     DType::Q6_K, DType::F16,  DType::MXFP4};
  return kTypes[(row.mode >> 3) & 31];
}

// Up to this many tokens a device runs routed experts the decode way.
constexpr int64_t kDecodeTokens = 64;

// What moe_ffn_routed gives for a batch whose routed experts run as decode steps do, on a backend
// whose matmul results for a token do not depend on the rows beside it up to 8 rows (each
// expert's rows on its GEMV): the routed experts through moe_ffn over 8 tokens at a time, then
// the shared expert (if any) through matmul_glu and matmul over every token, as the op runs it,
// added last with its weight (shared_logits: its gate's logits, or empty for weight 1).
std::vector<float> routed_experts_decode_way(Backend& backend, const std::vector<float>& x_values,
                                             const std::vector<int32_t>& experts, const std::vector<float>& weights,
                                             int64_t k, const RoutedExperts& m, Glu glu,
                                             std::span<const float> shared_logits) {
  const int64_t in = m.gate->dims[0], tokens = static_cast<int64_t>(x_values.size()) / in;
  RoutedExperts routed_only{m.gate, m.up, m.down};
  routed_only.gate_bias = m.gate_bias;
  routed_only.up_bias = m.up_bias;
  routed_only.down_bias = m.down_bias;
  std::vector<float> out(x_values.size());
  common::RoutedExpertWork work;
  for (int64_t t0 = 0; t0 < tokens; t0 += 8) {
    const int64_t n = std::min<int64_t>(8, tokens - t0);
    const auto first = static_cast<size_t>(t0 * in), values = static_cast<size_t>(n * in);
    const BackendTensor x = upload_f32(backend, {in, n, 1, 1},
                                       std::vector<float>(x_values.begin() + first, x_values.begin() + first + values));
    const std::span<const ExpertWork> list = work.build(
        std::span(experts).subspan(static_cast<size_t>(t0 * k), static_cast<size_t>(n * k)),
        std::span(weights).subspan(static_cast<size_t>(t0 * k), static_cast<size_t>(n * k)), k, routed_only, {});
    BackendTensor y = allocate(backend, DType::F32, {in, n, 1, 1});
    backend.moe_ffn(x.view, list, work.n_slots(), glu, y.view);
    const std::vector<float> part = download(backend, y.view);
    std::copy(part.begin(), part.end(), out.begin() + static_cast<std::ptrdiff_t>(first));
  }
  if (m.shared_gate == nullptr) return out;
  const int64_t ff = m.shared_gate->dims[1];
  const BackendTensor x = upload_f32(backend, {in, tokens, 1, 1}, x_values);
  BackendTensor gate = allocate(backend, DType::F32, {ff, tokens, 1, 1});
  BackendTensor up = allocate(backend, DType::F32, {ff, tokens, 1, 1});
  BackendTensor down = allocate(backend, DType::F32, {in, tokens, 1, 1});
  backend.matmul_glu(*m.shared_gate, *m.shared_up, x.view, glu, gate.view, up.view);
  backend.matmul(*m.shared_down, gate.view, down.view);
  const std::vector<float> shared = download(backend, down.view);
  for (size_t i = 0; i < out.size(); ++i) {
    const size_t t = i / static_cast<size_t>(in);
    const float w = shared_logits.empty() ? 1.0f : routing::shared_expert_gate(shared_logits[t]);
    volatile float product = shared[i] * w;  // rounded before the add, as the op's combine
    out[i] = out[i] + product;
  }
  return out;
}

// Row: {in, ff, tokens}; 8 experts, 2 a token.
void check_moe_ffn_routed(Backend& backend, const RegisteredRow& row) {
  const auto [in, ff, tokens] = row.shape;
  constexpr int64_t kExperts = 8, kUsed = 2;
  const DType type = type_of(row);
  if (!backend.supports_weight_type(type)) GTEST_SKIP() << backend.name() << " reads no " << tensor::dtype_name(type);
  const bool shared = (row.mode & 1) != 0, gated = (row.mode & 2) != 0, gpt_oss = (row.mode & kGptOss) != 0;
  if (gpt_oss && !backend.supports(BackendFeature::BiasedExperts)) {
    GTEST_SKIP() << backend.name() << " does not run gpt-oss's experts";
  }
  const Glu glu = gpt_oss ? Glu::SwigluOai : (row.mode & 4) != 0 ? Glu::Geglu : Glu::Swiglu;
  const std::array<int64_t, 4> up_dims = {in, ff, kExperts, 1}, down_dims = {ff, in, kExperts, 1};
  const BackendTensor gate =
      upload(backend, encode(type, up_dims, random_values(static_cast<size_t>(in * ff * kExperts), 71)));
  const BackendTensor up =
      upload(backend, encode(type, up_dims, random_values(static_cast<size_t>(in * ff * kExperts), 72)));
  const BackendTensor down =
      upload(backend, encode(type, down_dims, random_values(static_cast<size_t>(in * ff * kExperts), 73)));
  const BackendTensor sgate =
      upload(backend, encode(type, {in, ff, 1, 1}, random_values(static_cast<size_t>(in * ff), 74)));
  const BackendTensor sup =
      upload(backend, encode(type, {in, ff, 1, 1}, random_values(static_cast<size_t>(in * ff), 75)));
  const BackendTensor sdown =
      upload(backend, encode(type, {ff, in, 1, 1}, random_values(static_cast<size_t>(in * ff), 76)));
  const std::vector<float> x_values = random_values(static_cast<size_t>(in * tokens), 77);
  const BackendTensor x = upload_f32(backend, {in, tokens, 1, 1}, x_values);
  const std::vector<float> shared_logits = random_values(static_cast<size_t>(tokens), 78, -3.0f, 3.0f);
  const BackendTensor logit = upload_f32(backend, {1, tokens, 1, 1}, shared_logits);

  // A routing as a router writes it: distinct experts per token, weights of either sign.
  std::vector<float> router_logits = random_values(static_cast<size_t>(kExperts * tokens), 79, -2.0f, 2.0f);
  common::Routing routing;
  common::route_tokens(router_logits, {kExperts, kUsed}, routing);
  const std::vector<float> weights = random_values(routing.weights.size(), 80, -1.0f, 1.0f);
  // A device's moe_ffn multiplies an expert's rows on its GEMV up to 8 rows and on f16 tensor
  // cores past that; its routed experts stay on the GEMV up to 64 tokens. Bit-equality there
  // needs the decode-sized rows to give no expert more than 8 rows.
  std::vector<int> rows_of_expert(kExperts, 0);
  for (const int32_t e : routing.experts) ++rows_of_expert[static_cast<size_t>(e)];
  if (tokens <= kDecodeTokens) {
    ASSERT_LE(*std::max_element(rows_of_expert.begin(), rows_of_expert.end()), 8);
  }
  std::vector<float> id_bits(routing.experts.size());
  std::memcpy(id_bits.data(), routing.experts.data(), id_bits.size() * sizeof(float));
  BackendTensor ids = upload_f32(backend, {kUsed, tokens, 1, 1}, id_bits);
  ids.view.type = DType::I32;
  const BackendTensor weights_d = upload_f32(backend, {kUsed, tokens, 1, 1}, weights);

  // gpt-oss's bias rows, large enough to reach the clamped SwiGLU's limits.
  const BackendTensor gate_bias =
      upload_f32(backend, {ff, 1, kExperts, 1}, random_values(static_cast<size_t>(ff * kExperts), 81, -6.0f, 6.0f));
  const BackendTensor up_bias =
      upload_f32(backend, {ff, 1, kExperts, 1}, random_values(static_cast<size_t>(ff * kExperts), 82, -6.0f, 6.0f));
  const BackendTensor down_bias =
      upload_f32(backend, {in, 1, kExperts, 1}, random_values(static_cast<size_t>(in * kExperts), 83));
  RoutedExperts m{&gate.view, &up.view, &down.view};
  if (gpt_oss) {
    m.gate_bias = &gate_bias.view;
    m.up_bias = &up_bias.view;
    m.down_bias = &down_bias.view;
  }
  if (shared) {
    m.shared_gate = &sgate.view;
    m.shared_up = &sup.view;
    m.shared_down = &sdown.view;
    if (gated) m.shared_logit = &logit.view;
  }
  BackendTensor routed = allocate(backend, DType::F32, {in, tokens, 1, 1});
  backend.moe_ffn_routed(x.view, ids.view, weights_d.view, m, glu, routed.view);

  common::RoutedExpertWork work;
  const std::span<const ExpertWork> list = work.build(
      routing.experts, weights, kUsed, m, gated ? std::span<const float>(shared_logits) : std::span<const float>());
  BackendTensor grouped = allocate(backend, DType::F32, {in, tokens, 1, 1});
  backend.moe_ffn(x.view, list, work.n_slots(), glu, grouped.view);

  const std::vector<float> got = download(backend, routed.view), want = download(backend, grouped.view);
  ASSERT_EQ(got.size(), want.size());
  // Bit for bit, but for one exception: the shared expert's gate (silu(g) / g of its logit) is
  // computed where the op runs, and a device's expf may round it an ulp or two away from the
  // host's, which moe_ffn's weights were computed with. There, each value within 1e-6 of the
  // largest.
  const bool device_gate = gated && backend.name() != "cpu";
  const auto count_differing = [&](const std::vector<float>& reference) {
    float largest = 0.0f;
    for (const float v : reference) largest = std::max(largest, std::abs(v));
    size_t differing = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      differing += device_gate ? (std::abs(got[i] - reference[i]) > 1e-6f * largest ? 1 : 0)
                               : (std::memcmp(&got[i], &reference[i], sizeof(float)) != 0 ? 1 : 0);
    }
    return differing;
  };
  size_t differing = count_differing(want);
  if (tokens > kDecodeTokens) {
    // A prompt may run its routed experts the decode way (a device's expert GEMV: each token's
    // products as a decode step's), which moe_ffn takes for batches where no expert has more than
    // 8 rows: then it is moe_ffn over 8 tokens at a time, plus the shared expert over them all.
    // The CPU's products do not depend on the batch, so there the two references agree, which
    // checks the second.
    const std::vector<float> decode_way =
        routed_experts_decode_way(backend, x_values, routing.experts, weights, kUsed, m, glu,
                                  gated ? std::span<const float>(shared_logits) : std::span<const float>());
    const size_t differing_decode_way = count_differing(decode_way);
    if (backend.name() == "cpu") {
      EXPECT_EQ(differing_decode_way, 0u) << "moe_ffn 8 tokens at a time differs from moe_ffn whole on the CPU";
    } else if (differing != 0) {
      EXPECT_EQ(differing_decode_way, 0u)
          << "of " << got.size() << " values, " << differing << " differ from moe_ffn's for the same routing and "
          << differing_decode_way << " from moe_ffn's 8 tokens at a time";
      differing = 0;  // judged against the decode way
    }
  }
  EXPECT_EQ(differing, 0u) << "of " << got.size() << " values differ from moe_ffn's for the same routing";
  bool nonzero = false;
  for (const float v : got) nonzero = nonzero || v != 0.0f;
  EXPECT_TRUE(nonzero) << "nothing was computed";
}

// Router rows: Qwen2-MoE's 60 experts, 4 a token; Mixtral's 8, 2; Qwen3-MoE's 128, 8; DeepSeek-V3's
// 256 in 8 groups, 8 a token; ties; gpt-oss-20b's 32, 4. 1 token (decode) and a few.
const bool kRouterRegistered = register_op({OpKind::RouteExperts,
                                            {{{60, 4, 1}, 0},
                                             {{60, 4, 7}, 0},
                                             {{8, 2, 5}, 1},
                                             {{128, 8, 9}, 1},
                                             {{256, 8, 1}, 2},
                                             {{256, 8, 6}, 2},
                                             {{64, 6, 5}, 3},
                                             {{32, 4, 1}, 4},
                                             {{32, 4, 9}, 4}},
                                            check_route_experts});

// Expert rows: decode sizes (1-16 tokens) of each quantized family, with and without a shared
// expert (with and without its gate logit), both GLUs; two prompts past a device's decode size
// (64 tokens), which a device may run either way (CudaBackendOptions::moe_gemv_macs_per_expert;
// gpu_check.sh moe runs them both ways); float experts.
const bool kExpertsRegistered = register_op({OpKind::MoeFfnRouted,
                                             {{{256, 128, 1}, (0 << 3) | 0},
                                              {{256, 128, 5}, (0 << 3) | 3},
                                              {{256, 256, 3}, (1 << 3) | 1},
                                              {{512, 256, 8}, (1 << 3) | 3},
                                              {{64, 96, 2}, (2 << 3) | 4},
                                              {{128, 64, 4}, (3 << 3) | 7},
                                              {{256, 256, 2}, (4 << 3) | 3},
                                              {{128, 64, 16}, (0 << 3) | 3},
                                              {{128, 64, 72}, (2 << 3) | 1},
                                              {{256, 256, 80}, (1 << 3) | 3},
                                              {{128, 64, 3}, (5 << 3) | 1},
                                              // gpt-oss: MXFP4 experts (rows of 17-byte blocks at
                                              // odd addresses), a decode batch and a prompt, and Q8_0.
                                              {{256, 96, 1}, (6 << 3) | kGptOss},
                                              {{256, 96, 5}, (6 << 3) | kGptOss},
                                              {{128, 64, 72}, (6 << 3) | kGptOss},
                                              {{256, 128, 3}, (2 << 3) | kGptOss}},
                                             check_moe_ffn_routed});

template <typename Call>
void expect_refused(Call&& call, const char* why) {
  try {
    call();
    ADD_FAILURE() << why << ": accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
  }
}

// Bad input is refused before anything is written, and a backend without the ops refuses them.
TEST(RoutedMoe, RefusesBadInputAndBackendsWithoutIt) {
  CpuBackend cpu(1);
  constexpr int64_t kExperts = 8, kUsed = 2, kTokens = 3;
  std::vector<float> logits(kExperts * kTokens, 0.5f), weights(kUsed * kTokens, -7.0f), counts(kExperts, 0.0f);
  std::vector<int32_t> ids(kUsed * kTokens, -7);
  const TensorView logits_v = f32_matrix(logits.data(), kExperts, kTokens);
  TensorView weights_v = f32_matrix(weights.data(), kUsed, kTokens);
  TensorView ids_v{DType::I32, {kUsed, kTokens, 1, 1}, kUsed * 4, ids.data()};
  TensorView counts_v = f32_matrix(counts.data(), kExperts, 1);
  const RouterConfig config{kExperts, kUsed};
  const auto untouched = [&](const char* why) {
    EXPECT_EQ(weights, std::vector<float>(kUsed * kTokens, -7.0f)) << why;
    EXPECT_EQ(ids, std::vector<int32_t>(kUsed * kTokens, -7)) << why;
    EXPECT_EQ(counts, std::vector<float>(kExperts, 0.0f)) << why;
  };
  RouterConfig too_many = config;
  too_many.n_used = 9;
  expect_refused([&] { cpu.route_experts(logits_v, nullptr, too_many, ids_v, weights_v, &counts_v); },
                 "9 of 8 experts per token");
  RouterConfig bad_groups = config;
  bad_groups.n_groups = 3;
  bad_groups.n_groups_used = 1;
  expect_refused([&] { cpu.route_experts(logits_v, nullptr, bad_groups, ids_v, weights_v, &counts_v); },
                 "8 experts in 3 groups");
  TensorView ids_as_f32 = ids_v;
  ids_as_f32.type = DType::F32;
  expect_refused([&] { cpu.route_experts(logits_v, nullptr, config, ids_as_f32, weights_v, &counts_v); },
                 "experts must be I32");
  TensorView overlapping = f32_matrix(logits.data(), kUsed, kTokens);
  expect_refused([&] { cpu.route_experts(logits_v, nullptr, config, ids_v, overlapping, &counts_v); },
                 "weights overlaps another operand");
  TensorView short_bias = f32_matrix(counts.data(), kExperts - 1, 1);
  expect_refused([&] { cpu.route_experts(logits_v, &short_bias, config, ids_v, weights_v, &counts_v); },
                 "selection_bias must be F32 8 x 1");
  untouched("route_experts");

  // moe_ffn_routed: an id outside the experts, a shared expert without its down matrix.
  const std::vector<float> w(static_cast<size_t>(32 * 32 * kExperts), 0.25f);
  TensorView gate{DType::F32, {32, 32, kExperts, 1}, 32 * 4, const_cast<float*>(w.data())};
  std::vector<float> x(32 * kTokens, 1.0f), out(32 * kTokens, 42.0f);
  const TensorView x_v = f32_matrix(x.data(), 32, kTokens);
  TensorView out_v = f32_matrix(out.data(), 32, kTokens);
  ids.assign(ids.size(), 1);
  ids[3] = kExperts;
  weights.assign(weights.size(), 0.5f);
  const RoutedExperts m{&gate, &gate, &gate};
  expect_refused([&] { cpu.moe_ffn_routed(x_v, ids_v, weights_v, m, Glu::Swiglu, out_v); },
                 "expert 8 is not in [0, 8)");
  RoutedExperts half_shared = m;
  TensorView shared = expert_matrix(gate, 0);
  half_shared.shared_gate = &shared;
  half_shared.shared_up = &shared;
  expect_refused([&] { cpu.moe_ffn_routed(x_v, ids_v, weights_v, half_shared, Glu::Swiglu, out_v); },
                 "a shared expert needs its gate, up and down matrices");
  EXPECT_EQ(out, std::vector<float>(32 * kTokens, 42.0f));

  ids[3] = 0;
  cpu.set_composed_ops(true);
  expect_refused([&] { cpu.route_experts(logits_v, nullptr, config, ids_v, weights_v, &counts_v); }, "route_experts");
  expect_refused([&] { cpu.moe_ffn_routed(x_v, ids_v, weights_v, m, Glu::Swiglu, out_v); }, "moe_ffn_routed");
  cpu.set_composed_ops(false);
  cpu.moe_ffn_routed(x_v, ids_v, weights_v, m, Glu::Swiglu, out_v);  // accepted again
  EXPECT_NE(out, std::vector<float>(32 * kTokens, 42.0f));
}

}  // namespace
}  // namespace lumen::backend::conformance
