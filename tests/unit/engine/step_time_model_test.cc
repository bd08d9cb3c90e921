// The step cost model of ITL-aware scheduling, fed "measured" step times from a known law.
#include "engine/step_time_model.h"

#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include "step_cost_law.h"

namespace lumen::engine {
namespace {

using testing::decode_step;
using testing::mixed_step;
using testing::StepCostLaw;

TEST(StepShape, CountsRowsSampledRowsPrefillAndAttendedKeys) {
  StepShape s;
  s.add_chunk(10, 1, 1, false);  // a decode at position 10 attends 11 keys
  s.add_chunk(0, 4, 0, true);    // positions 0..3 attend 1 + 2 + 3 + 4 keys
  EXPECT_EQ(s.tokens, 5);
  EXPECT_EQ(s.sampled_rows, 1);
  EXPECT_EQ(s.prefill_tokens, 4);
  EXPECT_DOUBLE_EQ(s.attended, 11 + 10);
}

TEST(StepTimeModel, IsNotReadyUntilPrefillStepsOfTwoSizesWereSeen) {
  const StepCostLaw law;
  StepTimeModel model;
  for (int i = 0; i < 100; ++i) model.record(decode_step(1 + i % 8, 50 + i), law(decode_step(1 + i % 8, 50 + i)));
  EXPECT_FALSE(model.ready());
  EXPECT_EQ(model.predict(decode_step(4, 50)), 0.0);
  for (int i = 0; i < 5; ++i) model.record(mixed_step(2, 60, 0, 32), law(mixed_step(2, 60, 0, 32)));
  EXPECT_FALSE(model.ready()) << "one prefill size cannot price a prefill token";
  model.record(mixed_step(2, 60, 0, 64), law(mixed_step(2, 60, 0, 64)));
  EXPECT_TRUE(model.ready());
}

TEST(StepTimeModel, LearnsTheLawAndPredictsUnseenShapes) {
  const StepCostLaw law;
  StepTimeModel model;
  testing::train(model, law);
  ASSERT_TRUE(model.ready());
  const std::vector<double> c = model.coefficients();
  ASSERT_EQ(c.size(), 4u);
  EXPECT_NEAR(c[0], law.base, 1e-4);
  EXPECT_NEAR(c[1], law.per_token, 1e-5);
  EXPECT_NEAR(c[2], law.per_sampled_row, 1e-5);
  EXPECT_NEAR(c[3], law.per_kilo_attended, 1e-5);
  // A shape outside what was seen (a bigger chunk at a later position).
  const StepShape unseen = mixed_step(12, 400, 300, 400);
  EXPECT_NEAR(model.predict(unseen), law(unseen), 0.01 * law(unseen));
}

TEST(StepTimeModel, ALongRunOfDecodesDoesNotForgetWhatPrefillCosts) {
  const StepCostLaw law;
  StepTimeModel model;
  testing::train(model, law);
  // Hours of 16 streams decoding at one batch size: they fill the decode-only window only.
  for (int i = 0; i < 5000; ++i) model.record(decode_step(16, 200), law(decode_step(16, 200)));
  const StepShape mixed = mixed_step(16, 200, 0, 256);
  EXPECT_NEAR(model.predict(mixed), law(mixed), 0.01 * law(mixed));
}

TEST(StepTimeModel, FollowsTheMachineWhenItSlowsDown) {
  StepTimeModel model;
  testing::train(model, StepCostLaw{});
  // Another job takes half the machine: every cost doubles.
  const StepCostLaw slower{.base = 4e-3, .per_token = 2e-4, .per_sampled_row = 1e-3, .per_kilo_attended = 4e-4};
  testing::train(model, slower);
  testing::train(model, slower);
  const StepShape mixed = mixed_step(8, 100, 0, 128);
  EXPECT_NEAR(model.predict(mixed), slower(mixed), 0.02 * slower(mixed));
}

TEST(StepTimeModel, IgnoresEmptyStepsAndNonsenseTimes) {
  const StepCostLaw law;
  StepTimeModel model;
  testing::train(model, law);
  const double before = model.predict(mixed_step(4, 100, 0, 64));
  model.record(StepShape{}, 1.0);
  model.record(mixed_step(4, 100, 0, 64), -1.0);
  model.record(mixed_step(4, 100, 0, 64), 0.0);
  model.record(mixed_step(4, 100, 0, 64), std::numeric_limits<double>::infinity());
  EXPECT_DOUBLE_EQ(model.predict(mixed_step(4, 100, 0, 64)), before);
}

TEST(StepTimeModel, MoreWorkNeverPredictsLessTime) {
  // Noise can fit a negative slope; the budget's search relies on predictions growing with the
  // work, so negative slopes count as 0.
  StepTimeModel model;
  for (int i = 0; i < 30; ++i) {
    model.record(mixed_step(1, 10, 0, 16 + 16 * (i % 4)), 0.010 - 0.00001 * (16 * (i % 4)));
  }
  ASSERT_TRUE(model.ready());
  EXPECT_LT(model.coefficients()[1], 0.0);
  EXPECT_GE(model.predict(mixed_step(1, 10, 0, 4000)), model.predict(mixed_step(1, 10, 0, 16)));
  EXPECT_GT(model.predict(mixed_step(1, 10, 0, 4000)), 0.0);
}

}  // namespace
}  // namespace lumen::engine
