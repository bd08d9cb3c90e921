#include "benchmark/goodput.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "util/error.h"

namespace lumen::benchmark {
namespace {

ServiceLevelObjectives parse(std::vector<std::string> items) { return parse_slos(items); }

RequestResult request(double ttft_s, double e2el_s, int64_t tokens) {
  RequestResult r;
  r.ok = true;
  r.ttft = ttft_s;
  r.e2el = e2el_s;
  r.output_tokens = tokens;
  return r;
}

TEST(Goodput, ParsesMetricsInMilliseconds) {
  const ServiceLevelObjectives s = parse({"ttft:500", "tpot:50.5", "e2el:10000"});
  EXPECT_EQ(s.ttft_ms, 500);
  EXPECT_EQ(s.tpot_ms, 50.5);
  EXPECT_EQ(s.e2el_ms, 10000);
  EXPECT_TRUE(parse({}).empty());
  EXPECT_FALSE(parse({"tpot:1"}).empty());
}

TEST(Goodput, RejectsMalformedItems) {
  EXPECT_THROW(parse({"ttft"}), Error);
  EXPECT_THROW(parse({"ttft:"}), Error);
  EXPECT_THROW(parse({"ttft:abc"}), Error);
  EXPECT_THROW(parse({"ttft:5ms"}), Error);
  EXPECT_THROW(parse({"ttft:-1"}), Error);
  EXPECT_THROW(parse({"ttft:0"}), Error);
  EXPECT_THROW(parse({"latency:5"}), Error);
}

TEST(Goodput, TpotIsTimeAfterTheFirstTokenPerRemainingToken) {
  // 1 s in all, first token at 0.1 s, 10 tokens: 0.9 s over 9 gaps.
  EXPECT_DOUBLE_EQ(request(0.1, 1.0, 10).tpot(), 0.1);
  EXPECT_DOUBLE_EQ(request(0.1, 1.0, 1).tpot(), 0.0);
}

TEST(Goodput, ARequestMeetsTheSlosOnlyWhenEveryOneHolds) {
  const ServiceLevelObjectives slos = parse({"ttft:200", "tpot:100"});
  EXPECT_TRUE(meets_slos(request(0.19, 1.0, 10), slos));   // ttft 190 ms, tpot 90 ms
  EXPECT_FALSE(meets_slos(request(0.21, 1.0, 10), slos));  // ttft over
  EXPECT_FALSE(meets_slos(request(0.1, 2.0, 10), slos));   // tpot 211 ms
  RequestResult failed = request(0.01, 0.02, 2);
  failed.ok = false;
  EXPECT_FALSE(meets_slos(failed, slos));
  EXPECT_TRUE(meets_slos(request(5, 50, 2), parse({})));  // no SLO: every success counts
  EXPECT_FALSE(meets_slos(request(0.1, 3.0, 2), parse({"e2el:2999"})));
}

}  // namespace
}  // namespace lumen::benchmark
