#include "benchmark/bench_prompt.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "util/error.h"

namespace lumen::benchmark {
namespace {

TEST(BenchPrompt, CompletionBodyStreamsWithUsageAndIgnoresEos) {
  BenchPrompt p{std::vector<int32_t>{5, 6, 7}, 16};
  EXPECT_EQ(p.prompt_tokens(), 3);
  BodyOptions o;
  o.model = "m";
  const auto body = nlohmann::json::parse(request_body(p, o));
  EXPECT_EQ(body["model"], "m");
  EXPECT_EQ(body["prompt"], nlohmann::json({5, 6, 7}));
  EXPECT_EQ(body["max_tokens"], 16);
  EXPECT_EQ(body["stream"], true);
  EXPECT_EQ(body["stream_options"]["include_usage"], true);
  EXPECT_EQ(body["ignore_eos"], true);
  EXPECT_EQ(body["temperature"], 0.0);
}

TEST(BenchPrompt, ChatBodyHoldsTheTextAsAUserMessage) {
  BenchPrompt p{std::string("Hello"), 4};
  EXPECT_EQ(p.prompt_tokens(), -1);
  BodyOptions o;
  o.chat = true;
  o.ignore_eos = false;
  o.extra = {{"top_k", 1}, {"temperature", 0.5}};
  const auto body = nlohmann::json::parse(request_body(p, o));
  EXPECT_FALSE(body.contains("model"));
  EXPECT_FALSE(body.contains("prompt"));
  EXPECT_FALSE(body.contains("ignore_eos"));
  EXPECT_EQ(body["messages"], nlohmann::json::parse(R"([{"role":"user","content":"Hello"}])"));
  EXPECT_EQ(body["top_k"], 1);
  EXPECT_EQ(body["temperature"], 0.5);  // extra fields win
  EXPECT_THROW(request_body(BenchPrompt{std::vector<int32_t>{1}, 4}, o), Error);
}

class PromptFile : public ::testing::Test {
 protected:
  std::string write(const std::string& text) {
    std::ofstream(path_) << text;
    return path_;
  }
  void TearDown() override { std::remove(path_.c_str()); }
  std::string path_ = ::testing::TempDir() + "bench_prompts_" + std::to_string(getpid()) + ".jsonl";
};

TEST_F(PromptFile, ReadsStringsTokenListsAndObjects) {
  const auto prompts =
      load_prompt_file(write("\"a string\"\n\n[1, 2, 3]\n{\"prompt\": \"obj\", \"max_tokens\": 7}\n"
                             "{\"prompt\": [9]}\n"));
  ASSERT_EQ(prompts.size(), 4u);
  EXPECT_EQ(std::get<std::string>(prompts[0].prompt), "a string");
  EXPECT_EQ(prompts[0].max_tokens, 0);
  EXPECT_EQ(std::get<std::vector<int32_t>>(prompts[1].prompt), (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(std::get<std::string>(prompts[2].prompt), "obj");
  EXPECT_EQ(prompts[2].max_tokens, 7);
  EXPECT_EQ(prompts[3].prompt_tokens(), 1);
}

TEST_F(PromptFile, NamesTheBadLine) {
  try {
    load_prompt_file(write("\"ok\"\n{\"prompt\": 5}\n"));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(":2:"), std::string::npos) << e.what();
  }
  EXPECT_THROW(load_prompt_file(write("not json\n")), Error);
  EXPECT_THROW(load_prompt_file(write("[1, -2]\n")), Error);
  EXPECT_THROW(load_prompt_file(write("\"\"\n")), Error);
  EXPECT_THROW(load_prompt_file(write("{\"prompt\": \"x\", \"max_tokens\": 0}\n")), Error);
  EXPECT_THROW(load_prompt_file(write("\n\n")), Error);
  EXPECT_THROW(load_prompt_file(path_ + ".missing"), Error);
}

}  // namespace
}  // namespace lumen::benchmark
