// Every backend refuses the same malformed inputs, with lumen::Error and before touching
// memory: the checks live in backend/common and each backend calls them. One test per op
// whose check is shared: a valid call first, then variants that each break one thing, so an
// error can only come from the broken part.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "backend_registry.h"
#include "kv_cache.h"
#include "tensor_io.h"
#include "util/error.h"

namespace lumen::backend::conformance {
namespace {

class RefusesBadInputs : public ::testing::TestWithParam<const BackendEntry*> {
 protected:
  void SetUp() override {
    if (const std::string reason = GetParam()->unavailable(); !reason.empty()) GTEST_SKIP() << reason;
    backend_ = GetParam()->make();
  }
  Backend& backend() { return *backend_; }

 private:
  std::unique_ptr<Backend> backend_;
};

// call() must throw lumen::Error whose message holds `why`; then unchanged(why) checks that the
// refused call left every operand as it was.
template <typename Call, typename Unchanged>
void expect_refusal(const Call& call, const char* why, const Unchanged& unchanged) {
  try {
    call();
    ADD_FAILURE() << why << ": accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
  }
  unchanged(why);
}

TEST_P(RefusesBadInputs, GetRows) {
  const BackendTensor table = upload_f32(backend(), {64, 4, 1, 1}, random_values(256, 1));
  BackendTensor narrow = allocate(backend(), tensor::DType::F32, {32, 2, 1, 1});
  const int32_t ids[] = {0, 1};
  BackendTensor out = allocate(backend(), tensor::DType::F32, {64, 2, 1, 1});
  EXPECT_NO_THROW(backend().get_rows(table.view, ids, out.view));
  EXPECT_THROW(backend().get_rows(table.view, ids, narrow.view), Error);  // rows of another width
  BackendTensor one_row = allocate(backend(), tensor::DType::F32, {64, 1, 1, 1});
  EXPECT_THROW(backend().get_rows(table.view, ids, one_row.view), Error);  // fewer rows than ids
}

TEST_P(RefusesBadInputs, Rope) {
  BackendTensor x = upload_f32(backend(), {64, 2, 1, 1}, random_values(128, 2));
  const int32_t positions[] = {3};
  RopeConfig valid;
  valid.rope_dims = 64;
  EXPECT_NO_THROW(backend().rope(x.view, positions, valid));
  RopeConfig odd;
  odd.rope_dims = 63;
  EXPECT_THROW(backend().rope(x.view, positions, odd), Error);
  RopeConfig wide;
  wide.rope_dims = 128;  // more than head_dim
  EXPECT_THROW(backend().rope(x.view, positions, wide), Error);
  RopeConfig yarn;
  yarn.rope_dims = 64;
  yarn.scaling = RopeScalingType::Yarn;
  yarn.scaling_factor = 4.0;  // and no original context
  EXPECT_THROW(backend().rope(x.view, positions, yarn), Error);
}

TEST_P(RefusesBadInputs, StoreKv) {
  BackendCache cache = make_cache(backend(), tensor::DType::F16, 64, 16, 2);
  const BackendTensor k = upload_f32(backend(), {64, 3, 1, 1}, random_values(192, 3));
  const BackendTensor v = upload_f32(backend(), {64, 3, 1, 1}, random_values(192, 4));
  const std::vector<int32_t> table = {1};
  const SequenceSlice valid[] = {{0, 3, 0, table}};
  EXPECT_NO_THROW(backend().store_kv(k.view, v.view, valid, cache.layer));
  const std::vector<int32_t> short_table = {0};
  const SequenceSlice past_table[] = {{0, 3, 15, short_table}};  // positions 15..17 need 2 blocks
  EXPECT_THROW(backend().store_kv(k.view, v.view, past_table, cache.layer), Error);
  const std::vector<int32_t> bad_block = {5};
  const SequenceSlice missing_block[] = {{0, 3, 0, bad_block}};  // block 5 of 2
  EXPECT_THROW(backend().store_kv(k.view, v.view, missing_block, cache.layer), Error);
  const SequenceSlice outside_batch[] = {{2, 3, 0, table}};  // rows 2..4 of 3
  EXPECT_THROW(backend().store_kv(k.view, v.view, outside_batch, cache.layer), Error);
}

TEST_P(RefusesBadInputs, Attention) {
  // Two KV heads of 32 in the cache; four query heads share them.
  BackendCache cache = make_cache(backend(), tensor::DType::F16, 64, 16, 2);
  const BackendTensor q = upload_f32(backend(), {32, 4, 1, 1}, random_values(128, 5));
  BackendTensor out = allocate(backend(), tensor::DType::F32, {32, 4, 1, 1});
  const std::vector<int32_t> table = {1};
  const SequenceSlice seqs[] = {{0, 1, 0, table}};
  AttentionConfig valid;
  valid.head_dim = 32;
  valid.n_heads = 4;
  valid.n_kv_heads = 2;
  valid.scale = 0.2f;
  EXPECT_NO_THROW(backend().attention(q.view, cache.layer, seqs, valid, out.view));

  AttentionConfig config = valid;
  config.softcap = -1.0f;
  EXPECT_THROW(backend().attention(q.view, cache.layer, seqs, config, out.view), Error);
  config = valid;
  config.sliding_window = -1;
  EXPECT_THROW(backend().attention(q.view, cache.layer, seqs, config, out.view), Error);
  const std::vector<int32_t> bad_block = {2};
  const SequenceSlice missing_block[] = {{0, 1, 0, bad_block}};  // block 2 of 2
  EXPECT_THROW(backend().attention(q.view, cache.layer, missing_block, valid, out.view), Error);
  BackendTensor narrow_out = allocate(backend(), tensor::DType::F32, {16, 4, 1, 1});
  EXPECT_THROW(backend().attention(q.view, cache.layer, seqs, valid, narrow_out.view), Error);

  // Three query heads cannot share two KV heads (the cache's width still fits 2 x 32).
  const BackendTensor q3 = upload_f32(backend(), {32, 3, 1, 1}, random_values(96, 6));
  BackendTensor out3 = allocate(backend(), tensor::DType::F32, {32, 3, 1, 1});
  config = valid;
  config.n_heads = 3;
  EXPECT_THROW(backend().attention(q3.view, cache.layer, seqs, config, out3.view), Error);

  // Sinks: taken where the backend declares them, else refused by name.
  const BackendTensor sinks = upload_f32(backend(), {4, 1, 1, 1}, {0.5f, 1.0f, -2.0f, 3.0f});
  config = valid;
  config.sinks = static_cast<const float*>(sinks.view.data);
  if (backend().supports(BackendFeature::AttentionSinks)) {
    EXPECT_NO_THROW(backend().attention(q.view, cache.layer, seqs, config, out.view));
  } else {
    try {
      backend().attention(q.view, cache.layer, seqs, config, out.view);
      ADD_FAILURE() << "sinks accepted without AttentionSinks";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("does not take attention sinks"), std::string::npos) << e.what();
    }
  }
}

// Importance-based KV eviction's two ops: each bad call changes neither the cache nor the table;
// a backend without the feature refuses every call.
TEST_P(RefusesBadInputs, KvEviction) {
  BackendCache cache = make_cache(backend(), tensor::DType::F16, 64, 16, 3);
  const BackendTensor k = upload_f32(backend(), {64, 20, 1, 1}, random_values(1280, 7));
  const std::vector<int32_t> table = {2, 0};
  const SequenceSlice history[] = {{0, 20, 0, table}};
  backend().store_kv(k.view, k.view, history, cache.layer);
  const std::vector<uint8_t> before = read_cache(backend(), cache);
  const BackendTensor q = upload_f32(backend(), {32, 4, 2, 1}, random_values(256, 8));
  AttentionConfig config;
  config.head_dim = 32;
  config.n_heads = 4;
  config.n_kv_heads = 2;
  config.scale = 0.2f;
  const SequenceSlice seq{0, 2, 18, table};
  std::vector<float> scores(40, 0.0f);
  auto unchanged = [&](const char* why) {
    EXPECT_EQ(read_cache(backend(), cache), before) << why;
    EXPECT_EQ(scores, std::vector<float>(40, 0.0f)) << why;
  };
  auto refused = [&](const auto& call, const char* why) { expect_refusal(call, why, unchanged); };
  const std::vector<int32_t> keep = {0, 3, 5, 1, 2, 19};  // three slots per KV head
  const std::vector<int32_t> dst = {1};
  if (!backend().supports(BackendFeature::KvEviction)) {
    refused([&] { backend().attention_scores(q.view, cache.layer, seq, 0, config, scores.data(), 2); },
            "importance-based KV eviction (snapkv, h2o) is not supported");
    refused([&] { backend().gather_kv_rows(cache.layer, table, dst, keep, 32, 32); },
            "importance-based KV eviction (snapkv, h2o) is not supported");
    return;
  }
  AttentionConfig alibi = config;
  alibi.alibi_max_bias = 8.0f;
  refused([&] { backend().attention_scores(q.view, cache.layer, seq, 0, alibi, scores.data(), 2); },
          "does not score ALiBi models");
  const BackendTensor sink_logits = upload_f32(backend(), {4, 1, 1, 1}, {0.5f, 1.0f, -2.0f, 3.0f});
  AttentionConfig sunk = config;
  sunk.sinks = static_cast<const float*>(sink_logits.view.data);
  refused([&] { backend().attention_scores(q.view, cache.layer, seq, 0, sunk, scores.data(), 2); },
          "does not score models with attention sinks");
  const std::vector<int32_t> short_table = {2};
  const SequenceSlice short_seq{0, 2, 18, short_table};
  refused([&] { backend().attention_scores(q.view, cache.layer, short_seq, 0, config, scores.data(), 2); },
          "the block table is short");
  const std::vector<int32_t> odd_keep = {0, 3, 5, 1, 2}, far_keep = {0, 3, 5, 1, 2, 32};
  refused([&] { backend().gather_kv_rows(cache.layer, table, dst, odd_keep, 32, 32); }, "5 kept slots for 2 KV heads");
  refused([&] { backend().gather_kv_rows(cache.layer, table, dst, far_keep, 32, 32); }, "slot 32 out of range");
  const std::vector<int32_t> bad_dst = {3};
  refused([&] { backend().gather_kv_rows(cache.layer, table, bad_dst, keep, 32, 32); }, "block 3 is not in [0, 3)");
  EXPECT_NO_THROW(backend().attention_scores(q.view, cache.layer, seq, 0, config, scores.data(), 2));
  EXPECT_NO_THROW(backend().gather_kv_rows(cache.layer, table, dst, keep, 32, 32));
}

// The LayerNorm blocks' ops and an encoder's attention: each bad call leaves out (and x) as
// they were; a backend without the features refuses every call, naming the feature.
TEST_P(RefusesBadInputs, LayerNormAndEncoderAttention) {
  constexpr int64_t kDim = 8, kHeads = 4, kKvHeads = 2, kRows = 6;
  const std::vector<float> xs = random_values(kDim * kHeads * kRows, 40), ws = random_values(kDim * kHeads, 41);
  BackendTensor x = upload_f32(backend(), {kDim * kHeads, kRows, 1, 1}, xs);
  const BackendTensor w = upload_f32(backend(), {kDim * kHeads, 1, 1, 1}, ws);
  const BackendTensor narrow = upload_f32(backend(), {kDim, 1, 1, 1}, random_values(kDim, 42));
  BackendTensor k = upload_f32(backend(), {kDim * kKvHeads, kRows, 1, 1}, random_values(kDim * kKvHeads * kRows, 43));
  const std::vector<float> zeros(kDim * kHeads * kRows, 0.0f);
  BackendTensor out = upload_f32(backend(), {kDim * kHeads, kRows, 1, 1}, zeros);
  auto unchanged = [&](const char* why) {
    EXPECT_EQ(download(backend(), x.view), xs) << why;
    EXPECT_EQ(download(backend(), out.view), zeros) << why;
  };
  auto refused = [&](const auto& call, const char* why) { expect_refusal(call, why, unchanged); };
  AttentionConfig config;
  config.head_dim = kDim;
  config.n_heads = kHeads;
  config.n_kv_heads = kKvHeads;
  config.scale = 0.3f;
  const std::vector<SequenceSlice> seqs = {{0, 4, 0, {}}, {4, 2, 0, {}}};
  if (!backend().supports(BackendFeature::LayerNorm)) {
    refused([&] { backend().layer_norm(x.view, w.view, w.view, 1e-5f, out.view); }, "LayerNorm blocks");
    refused([&] { backend().gelu_erf(x.view); }, "LayerNorm blocks");
    refused([&] { backend().gelu_tanh(x.view); }, "LayerNorm blocks");
  } else {
    refused([&] { backend().layer_norm(x.view, narrow.view, w.view, 1e-5f, out.view); },
            "weight must be f32 with rows of 32");
    refused([&] { backend().layer_norm(x.view, w.view, narrow.view, 1e-5f, out.view); },
            "bias must be f32 with rows of 32");
    refused([&] { backend().layer_norm(x.view, w.view, w.view, 1e-5f, k.view); }, "layer_norm");
  }
  if (!backend().supports(BackendFeature::Encoder)) {
    refused([&] { backend().bidirectional_attention(x.view, k.view, k.view, seqs, config, out.view); },
            "an encoder's bidirectional attention");
    return;
  }
  refused([&] { backend().bidirectional_attention(x.view, k.view, k.view, seqs, config, x.view); },
          "out may not overlap q, k or v");
  const std::vector<SequenceSlice> sharing = {{0, 4, 0, {}}, {3, 2, 0, {}}};
  refused([&] { backend().bidirectional_attention(x.view, k.view, k.view, sharing, config, out.view); },
          "two sequences share row 3");
  const std::vector<SequenceSlice> outside = {{4, 3, 0, {}}};
  refused([&] { backend().bidirectional_attention(x.view, k.view, k.view, outside, config, out.view); },
          "lie outside the batch of 6");
  AttentionConfig windowed = config;
  windowed.sliding_window = 2;
  refused([&] { backend().bidirectional_attention(x.view, k.view, k.view, seqs, windowed, out.view); },
          "takes heads and a scale only");
  const BackendTensor sinks = upload_f32(backend(), {kHeads, 1, 1, 1}, std::vector<float>(kHeads, 1.0f));
  AttentionConfig sunk = config;  // an encoder's softmax has no sinks: refused, not ignored
  sunk.sinks = static_cast<const float*>(sinks.view.data);
  refused([&] { backend().bidirectional_attention(x.view, k.view, k.view, seqs, sunk, out.view); },
          "takes heads and a scale only");
  AttentionConfig odd = config;
  odd.n_kv_heads = 3;
  refused([&] { backend().bidirectional_attention(x.view, k.view, k.view, seqs, odd, out.view); },
          "do not make groups");
  refused([&] { backend().bidirectional_attention(x.view, x.view, k.view, seqs, config, out.view); },
          "k must be f32 with rows of 16");
  EXPECT_NO_THROW(backend().bidirectional_attention(x.view, k.view, k.view, seqs, config, out.view));
}

// RWKV 7's element-wise ops: each bad call leaves out (and the shift rows) as they were; a
// backend without the feature refuses every call.
TEST_P(RefusesBadInputs, Rwkv7ElementWise) {
  constexpr int64_t kWidth = 16, kRows = 4;
  const std::vector<float> xs = random_values(kWidth * kRows, 50), ss = random_values(kWidth * 2, 51);
  BackendTensor x = upload_f32(backend(), {kWidth, kRows, 1, 1}, xs);
  BackendTensor state = upload_f32(backend(), {kWidth, 2, 1, 1}, ss);
  const BackendTensor row = upload_f32(backend(), {kWidth, 1, 1, 1}, random_values(kWidth, 52));
  const BackendTensor mixes = upload_f32(backend(), {kWidth, 2, 1, 1}, random_values(kWidth * 2, 53));
  const std::vector<float> zeros(kWidth * kRows * 2, 0.0f);
  BackendTensor out = upload_f32(backend(), {kWidth, kRows * 2, 1, 1}, zeros);
  auto unchanged = [&](const char* why) {
    EXPECT_EQ(download(backend(), x.view), xs) << why;
    EXPECT_EQ(download(backend(), state.view), ss) << why;
    EXPECT_EQ(download(backend(), out.view), zeros) << why;
  };
  auto refused = [&](const auto& call, const char* why) { expect_refusal(call, why, unchanged); };
  TensorView shift0 = state.view, shift1 = state.view;
  shift0.dims[1] = shift1.dims[1] = 1;
  shift1.data = static_cast<uint8_t*>(state.view.data) + state.view.row_bytes;
  const std::vector<TokenShiftSequence> seqs = {{0, 2, shift0}, {2, 2, shift1}};
  TensorView half = out.view;
  half.dims[1] = kRows;
  if (!backend().supports(BackendFeature::Rwkv7)) {
    refused([&] { backend().rwkv7_norm(x.view, row.view, row.view, 1e-5, kWidth, half); },
            "RWKV 7's element-wise work");
    refused([&] { backend().rwkv7_token_shift(x.view, seqs, mixes.view, out.view); }, "RWKV 7's element-wise work");
    return;
  }
  refused([&] { backend().rwkv7_norm(x.view, row.view, row.view, 1e-5, 5, half); }, "not whole groups of 5");
  refused([&] { backend().rwkv7_norm(x.view, mixes.view, row.view, 1e-5, kWidth, half); }, "weight must be one row");
  refused([&] { backend().rwkv7_token_shift(x.view, seqs, mixes.view, half); }, "not 4 rows x 2 mixes");
  const std::vector<TokenShiftSequence> sharing = {{0, 3, shift0}, {2, 2, shift1}};
  refused([&] { backend().rwkv7_token_shift(x.view, sharing, mixes.view, out.view); }, "two sequences share row 2");
  const std::vector<TokenShiftSequence> one_shift = {{0, 2, shift0}, {2, 2, shift0}};
  refused([&] { backend().rwkv7_token_shift(x.view, one_shift, mixes.view, out.view); }, "share a shift row");
  TensorView x_as_out = x.view;
  x_as_out.dims[1] = kRows;
  const std::vector<TokenShiftSequence> one = {{0, 2, shift0}};
  refused([&] { backend().rwkv7_token_shift(x.view, one, row.view, x_as_out); }, "out may not overlap x");
  Rwkv7KeyRows keys{half, half, half, half, half};
  refused([&] { backend().rwkv7_keys(keys, {row.view, row.view, row.view, row.view}, 5); }, "not whole heads of 5");
  refused([&] { backend().rwkv7_keys(keys, {row.view, row.view, row.view, row.view}, 8); }, "may not overlap");
  refused([&] { backend().rwkv7_bonus_gate(half, half, x.view, x.view, x.view, row.view, 8); },
          "out may not overlap r, k, v or g");
  EXPECT_NO_THROW(backend().rwkv7_token_shift(x.view, seqs, mixes.view, out.view));
}

// RWKV 7's state update: two heads of 8 over a batch of three rows, two sequences. Each bad
// call leaves out and both states as they were; a backend without the op refuses every call.
TEST_P(RefusesBadInputs, RwkvWkv7) {
  constexpr int64_t kHead = 8, kWidth = 16, kRows = 3;
  std::vector<BackendTensor> operands;
  for (uint32_t i = 0; i < 6; ++i)
    operands.push_back(upload_f32(backend(), {kWidth, kRows, 1, 1}, random_values(48, 20 + i)));
  const Wkv7Rows rows{operands[0].view, operands[1].view, operands[2].view,
                      operands[3].view, operands[4].view, operands[5].view};
  const std::vector<float> init0 = random_values(kHead * kWidth, 30), init1 = random_values(kHead * kWidth, 31);
  BackendTensor s0 = upload_f32(backend(), {kHead, kWidth, 1, 1}, init0);
  BackendTensor s1 = upload_f32(backend(), {kHead, kWidth, 1, 1}, init1);
  BackendTensor out = allocate(backend(), tensor::DType::F32, {kWidth, kRows, 1, 1});
  auto unchanged = [&](const char* why) {
    EXPECT_EQ(download(backend(), s0.view), init0) << why;
    EXPECT_EQ(download(backend(), s1.view), init1) << why;
    EXPECT_EQ(download(backend(), out.view), std::vector<float>(kWidth * kRows, 0.0f)) << why;
  };
  auto refused = [&](const Wkv7Rows& r, int64_t head, std::vector<Wkv7Sequence> seqs, TensorView o, const char* why) {
    expect_refusal([&] { backend().rwkv_wkv7(r, head, seqs, o); }, why, unchanged);
  };
  const std::vector<Wkv7Sequence> valid = {{0, 2, s0.view}, {2, 1, s1.view}};
  if (!backend().has_op(OpKind::RwkvWkv7)) {
    refused(rows, kHead, valid, out.view, "rwkv_wkv7 (RWKV 7's state update) is not supported on the");
    return;
  }
  refused(rows, 5, valid, out.view, "rows of 16 values are not whole heads of 5");
  Wkv7Rows short_v = rows;
  short_v.v.dims[1] = 2;
  refused(short_v, kHead, valid, out.view, "v has 2 rows, r 3");
  Wkv7Rows strided = rows;  // k: the first half of rows twice as wide
  BackendTensor wide = upload_f32(backend(), {2 * kWidth, kRows, 1, 1}, random_values(96, 40));
  strided.k = wide.view;
  strided.k.dims[0] = kWidth;
  refused(strided, kHead, valid, out.view, "the six rows must share one stride");
  refused(rows, kHead, valid, operands[3].view, "out may not overlap v");
  refused(rows, kHead, {{2, 2, s0.view}}, out.view, "a sequence's rows 2..4 are outside the batch of 3");
  refused(rows, kHead, {{0, 2, s0.view}, {1, 2, s1.view}}, out.view, "two sequences share rows from 1");
  refused(rows, kHead, {{0, 2, s0.view}, {2, 1, s0.view}}, out.view, "two sequences share a state");
  TensorView narrow_state = s1.view;
  narrow_state.dims[1] = kHead;  // one head's matrix, not two
  refused(rows, kHead, {{0, 2, s0.view}, {2, 1, narrow_state}}, out.view, "a sequence's state must be f32 {8, 16}");
  EXPECT_NO_THROW(backend().rwkv_wkv7(rows, kHead, valid, out.view));
}

TEST_P(RefusesBadInputs, SsmConvAndScan) {
  constexpr int64_t kChannels = 16, kKernel = 4, kRows = 3, kState = 8, kHeadDim = 4;
  const BackendTensor x = upload_f32(backend(), {kChannels, kRows, 1, 1}, random_values(48, 50));
  const BackendTensor weight = upload_f32(backend(), {kKernel, kChannels, 1, 1}, random_values(64, 51));
  const BackendTensor bias = upload_f32(backend(), {kChannels, 1, 1, 1}, random_values(16, 52));
  const std::vector<float> w0 = random_values(48, 53), w1 = random_values(48, 54);
  BackendTensor win0 = upload_f32(backend(), {kChannels, kKernel - 1, 1, 1}, w0);
  BackendTensor win1 = upload_f32(backend(), {kChannels, kKernel - 1, 1, 1}, w1);
  BackendTensor out = allocate(backend(), tensor::DType::F32, {kChannels, kRows, 1, 1});
  // The scan: 16 channels in 4 heads of 4, one group of B and C of 8 state values.
  const BackendTensor dt = upload_f32(backend(), {4, kRows, 1, 1}, random_values(12, 55));
  const BackendTensor b = upload_f32(backend(), {kState, kRows, 1, 1}, random_values(24, 56));
  const BackendTensor c = upload_f32(backend(), {kState, kRows, 1, 1}, random_values(24, 57));
  const BackendTensor a = upload_f32(backend(), {4, 1, 1, 1}, random_values(4, 58, -1.0f, -0.1f));
  const BackendTensor d = upload_f32(backend(), {4, 1, 1, 1}, random_values(4, 59));
  const BackendTensor dt_bias = upload_f32(backend(), {4, 1, 1, 1}, random_values(4, 60));
  const std::vector<float> s0 = random_values(128, 61), s1 = random_values(128, 62);
  BackendTensor st0 = upload_f32(backend(), {kState, kChannels, 1, 1}, s0);
  BackendTensor st1 = upload_f32(backend(), {kState, kChannels, 1, 1}, s1);
  const SsmScanWeights weights{&a.view, &d.view, &dt_bias.view, kHeadDim, 1};
  auto unchanged = [&](const char* why) {
    EXPECT_EQ(download(backend(), win0.view), w0) << why;
    EXPECT_EQ(download(backend(), win1.view), w1) << why;
    EXPECT_EQ(download(backend(), st0.view), s0) << why;
    EXPECT_EQ(download(backend(), st1.view), s1) << why;
    EXPECT_EQ(download(backend(), out.view), std::vector<float>(kChannels * kRows, 0.0f)) << why;
  };
  auto refused = [&](const auto& call, const char* why) { expect_refusal(call, why, unchanged); };
  auto conv = [&](std::vector<SsmSequence> seqs, const TensorView& w) {
    return [&, seqs, w] { backend().ssm_conv(x.view, w, bias.view, seqs, out.view); };
  };
  auto scan = [&](std::vector<SsmSequence> seqs, SsmScanWeights sw) {
    return [&, seqs, sw] { backend().ssm_scan(x.view, dt.view, b.view, c.view, sw, seqs, out.view); };
  };
  const std::vector<SsmSequence> conv_seqs = {{0, 2, win0.view, {}}, {2, 1, win1.view, {}}};
  const std::vector<SsmSequence> scan_seqs = {{0, 2, {}, st0.view}, {2, 1, {}, st1.view}};
  if (!backend().supports(BackendFeature::StateSpace)) {
    refused(conv(conv_seqs, weight.view), "ssm_conv (a state-space model's convolution) is not supported");
    refused(scan(scan_seqs, weights), "ssm_scan (a state-space model's scan) is not supported");
    return;
  }
  refused(conv({{0, 2, win0.view, {}}, {2, 1, win0.view, {}}}, weight.view), "two sequences share one conv_window");
  refused(conv({{2, 2, win0.view, {}}}, weight.view), "a sequence's rows 2..4 are outside the batch of 3");
  TensorView long_kernel = weight.view;
  long_kernel.dims = {65, 1, 1, 1};
  long_kernel.row_bytes = 65 * sizeof(float);
  refused(conv(conv_seqs, long_kernel), "the kernel has 65 taps (1 to 64 supported)");
  TensorView short_window = win1.view;
  short_window.dims[1] = 2;
  refused(conv({{0, 2, win0.view, {}}, {2, 1, short_window, {}}}, weight.view),
          "a sequence's conv_window must be f32 {16, 3}");
  refused(scan({{0, 2, {}, st0.view}, {2, 1, {}, st0.view}}, weights), "two sequences share one state");
  SsmScanWeights odd_heads = weights;
  odd_heads.head_dim = 5;
  refused(scan(scan_seqs, odd_heads), "heads of 5 do not divide 16 channels");
  SsmScanWeights three_groups = weights;
  three_groups.groups = 3;
  refused(scan(scan_seqs, three_groups), "3 groups do not divide 4 heads");
  SsmScanWeights no_skip = weights;
  no_skip.d = nullptr;
  refused(scan(scan_seqs, no_skip), "A, D and dt's bias are all needed");
  EXPECT_NO_THROW(backend().ssm_conv(x.view, weight.view, bias.view, conv_seqs, out.view));
  EXPECT_NO_THROW(backend().ssm_scan(x.view, dt.view, b.view, c.view, weights, scan_seqs, out.view));
}

std::vector<const BackendEntry*> entries() {
  std::vector<const BackendEntry*> out;
  for (const BackendEntry& e : backends()) out.push_back(&e);
  return out;
}

INSTANTIATE_TEST_SUITE_P(Backends, RefusesBadInputs, ::testing::ValuesIn(entries()),
                         [](const ::testing::TestParamInfo<const BackendEntry*>& p) {
                           return std::string(p.param->name);
                         });

}  // namespace
}  // namespace lumen::backend::conformance
