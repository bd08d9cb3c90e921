// The expert-load report of `lumen bench` for MoE models: per layer the routed total, the least,
// mean and most loaded expert, the imbalance and the idle experts; every count in the JSON.
#include "benchmark/expert_load.h"

#include <gtest/gtest.h>

namespace lumen::benchmark {
namespace {

// 2 layers x 4 experts, 2 per token, 6 tokens: 12 routed per layer.
ExpertLoadCounts sample() { return {2, 4, 2, {3, 3, 3, 3, 0, 8, 1, 3}}; }

TEST(ExpertLoad, TableSummarizesEachLayerAndTheModel) {
  const std::string table = expert_load_table(sample(), "tg6");
  EXPECT_NE(table.find("expert load, tg6"), std::string::npos) << table;
  EXPECT_NE(table.find("(2 layers x 4 experts, 2 per token)"), std::string::npos) << table;
  // layer 0: perfectly balanced; layer 1: 8 of 12 on one expert, one idle.
  EXPECT_NE(table.find("|     0 |       12 |      3 |      3.0 |      3 |     1.00 |    0 |"), std::string::npos)
      << table;
  EXPECT_NE(table.find("|     1 |       12 |      0 |      3.0 |      8 |     2.67 |    1 |"), std::string::npos)
      << table;
  EXPECT_NE(table.find("|   all |       24 |      0 |      3.0 |      8 |     2.67 |    1 |"), std::string::npos)
      << table;
}

// DeepSeek's leading dense layers have no experts: they are marked dense, not counted idle,
// and left out of the model's line.
TEST(ExpertLoad, DenseLayersAreMarkedAndLeftOutOfTheTotals) {
  ExpertLoadCounts load = sample();
  load.tokens = {0, 0, 0, 0, 0, 8, 1, 3};
  load.dense_layers = 1;
  const std::string table = expert_load_table(load, "tg6");
  EXPECT_NE(table.find("|     0 |    dense |"), std::string::npos) << table;
  EXPECT_NE(table.find("|   all |       12 |      0 |      3.0 |      8 |     2.67 |    1 |"), std::string::npos)
      << table;
  EXPECT_EQ(expert_load_json(load)["dense_layers"], 1);
}

TEST(ExpertLoad, JsonHoldsEveryCountByLayer) {
  const nlohmann::ordered_json j = expert_load_json(sample());
  EXPECT_EQ(j["layers"], 2);
  EXPECT_EQ(j["experts"], 4);
  EXPECT_EQ(j["experts_per_token"], 2);
  EXPECT_EQ(j["tokens_per_expert"], nlohmann::ordered_json::parse("[[3,3,3,3],[0,8,1,3]]"));
}

}  // namespace
}  // namespace lumen::benchmark
