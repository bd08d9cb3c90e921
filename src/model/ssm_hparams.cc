// State-space hyperparameters as llama.cpp's converter writes them for Mamba 2
// ({arch}.ssm.conv_kernel, inner_size, state_size, time_step_rank, group_count), and the
// nominal attention of a model that has none.
#include "model/hparams.h"
#include "util/error.h"

namespace lumen::model {

namespace {

// Far beyond any real Mamba (kernels of 4, states of 128, inner widths of 8192), small enough
// that the per-sequence state sized from them stays a sane allocation.
constexpr uint64_t kMaxConvKernel = 64;
constexpr uint64_t kMaxSsmWidth = uint64_t{1} << 16;
constexpr uint64_t kMaxSsmState = 1024;

void require_ssm_range(const std::string& key, uint64_t value, uint64_t min, uint64_t max) {
  if (value < min || value > max) fail("{} = {} is out of range (expected {}..{})", key, value, min, max);
}

}  // namespace

void read_ssm_hparams(const gguf::Metadata& md, const std::string& prefix, HParams& hp) {
  auto key = [&](const char* suffix) { return prefix + suffix; };
  const std::optional<uint64_t> inner = md.find_unsigned(key("ssm.inner_size"));
  if (!inner) return;
  hp.ssm_inner_size = *inner;
  hp.ssm_conv_kernel = md.get_unsigned(key("ssm.conv_kernel"));
  hp.ssm_state_size = md.get_unsigned(key("ssm.state_size"));
  hp.ssm_head_count = md.get_unsigned(key("ssm.time_step_rank"));
  // Mamba 1 files have no groups; Mamba 2's converter always writes the key.
  hp.ssm_group_count = md.find_unsigned(key("ssm.group_count")).value_or(1);
  if (hp.head_count == 0) {
    hp.attention_free = true;
    hp.head_count = 1;  // set_nominal_attention finishes the nominal head
  }
}

void set_nominal_attention(HParams& hp) {
  hp.head_count = 1;
  hp.head_count_kv = 1;
  hp.head_dim = 2;
  hp.value_dim = 2;
  hp.rope_dimension_count = 2;
}

void validate_ssm(const HParams& hp, const std::string& prefix) {
  if (!has_ssm(hp)) return;
  require_ssm_range(prefix + "ssm.inner_size", hp.ssm_inner_size, 1, kMaxSsmWidth);
  require_ssm_range(prefix + "ssm.conv_kernel", hp.ssm_conv_kernel, 2, kMaxConvKernel);
  require_ssm_range(prefix + "ssm.state_size", hp.ssm_state_size, 1, kMaxSsmState);
  require_ssm_range(prefix + "ssm.time_step_rank", hp.ssm_head_count, 1, hp.ssm_inner_size);
  require_ssm_range(prefix + "ssm.group_count", hp.ssm_group_count, 1, hp.ssm_head_count);
  if (hp.ssm_inner_size % hp.ssm_head_count != 0) {
    fail("{}ssm.time_step_rank = {} heads do not divide {}ssm.inner_size = {}", prefix, hp.ssm_head_count, prefix,
         hp.ssm_inner_size);
  }
  if (hp.ssm_head_count % hp.ssm_group_count != 0) {
    fail("{}ssm.group_count = {} does not divide {} heads", prefix, hp.ssm_group_count, hp.ssm_head_count);
  }
  if (ssm_conv_channels(hp) > kMaxSsmWidth * 4) {
    fail("{}ssm: {} convolution channels are too many", prefix, ssm_conv_channels(hp));
  }
}

}  // namespace lumen::model
