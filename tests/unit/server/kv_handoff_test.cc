// The roles' inputs from the network (server/kv_handoff.h): the X-Lumen-KV-Transfer header a
// decode instance reads (a client can send it too, so every malformed or foreign value must be
// ignored, never connected to), and what a prefill instance keeps of a request's options.
#include "server/kv_handoff.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace lumen::server {
namespace {

KvHandoffOptions decode_role() {
  KvHandoffOptions options;
  options.role = ServeRole::Decode;
  options.sources = {"tcp://10.0.0.5:5600", "tcp://10.0.0.6:5600"};
  return options;
}

TEST(KvHandoff, AHeaderNamesAConfiguredSourceAndARequestId) {
  const std::optional<KvTransferSource> source = parse_kv_transfer_header(decode_role(), "tcp://10.0.0.6:5600#42");
  ASSERT_TRUE(source.has_value());
  EXPECT_EQ(source->endpoint, "tcp://10.0.0.6:5600");
  EXPECT_EQ(source->request_id, 42u);
  KvHandoffOptions prefill;
  prefill.advertised_endpoint = "tcp://10.0.0.5:5600";
  EXPECT_EQ(kv_transfer_header(prefill, 18446744073709551615u), "tcp://10.0.0.5:5600#18446744073709551615");
  EXPECT_EQ(parse_kv_transfer_header(decode_role(), "tcp://10.0.0.5:5600#18446744073709551615")->request_id,
            18446744073709551615u);
}

TEST(KvHandoff, AnythingElseIsIgnored) {
  for (const std::string& value : std::vector<std::string>{
           "", "#", "#1", "tcp://10.0.0.5:5600", "tcp://10.0.0.5:5600#", "tcp://10.0.0.5:5600#x1",
           "tcp://10.0.0.5:5600#1x", "tcp://10.0.0.5:5600#-1", "tcp://10.0.0.5:5600# 1",
           "tcp://10.0.0.5:5600#18446744073709551616",  // one past the largest id
           "tcp://10.0.0.5:56001#1", "tcp://10.0.0.5:560#1", "TCP://10.0.0.5:5600#1",
           "tcp://203.0.113.9:5600#1", "ipc:///tmp/socket#1", "tcp://10.0.0.5:5600#1#2",
           std::string(100000, 'a') + "#1"}) {
    EXPECT_FALSE(parse_kv_transfer_header(decode_role(), value).has_value()) << value.substr(0, 60);
  }
  // With no sources configured, nothing is accepted.
  EXPECT_FALSE(parse_kv_transfer_header(KvHandoffOptions{}, "tcp://10.0.0.5:5600#1").has_value());
}

TEST(KvHandoff, APrefillInstanceComputesThePromptOnceWhateverWasAsked) {
  GenerationOptions asked;
  asked.n = 8;
  asked.params.best_of = 16;
  asked.params.max_tokens = 4000;
  asked.params.temperature = 1.3f;
  asked.params.logprobs = 20;
  asked.params.prompt_logprobs = 20;
  asked.params.min_tokens = 100;
  asked.params.use_beam_search = true;
  asked.stream = true;
  asked.include_usage = true;
  asked.prompt_logprobs_field = true;
  asked.cache_salt = 77;
  const GenerationOptions only = prompt_only(asked);
  EXPECT_EQ(only.n, 1);
  EXPECT_FALSE(only.params.best_of.has_value());
  EXPECT_EQ(only.params.max_tokens, 1);
  EXPECT_TRUE(only.max_tokens_given);
  EXPECT_EQ(only.params.temperature, 0.0f);
  EXPECT_FALSE(only.params.logprobs.has_value());
  EXPECT_FALSE(only.params.prompt_logprobs.has_value());
  EXPECT_EQ(only.params.min_tokens, 0);
  EXPECT_FALSE(only.params.use_beam_search);
  EXPECT_FALSE(only.params.structured_outputs.has_value());
  EXPECT_FALSE(only.stream);
  EXPECT_FALSE(only.prompt_logprobs_field);
  EXPECT_EQ(only.cache_salt, 77u);  // the K/V is keyed by it on both instances
}

}  // namespace
}  // namespace lumen::server
