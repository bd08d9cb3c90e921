// kv::StateSlots: a state-space model's per-sequence state slots are handed out lowest first,
// come back on release, and a bookkeeping error (a double release) is refused.
#include <gtest/gtest.h>

#include "kv/state_slots.h"
#include "util/error.h"

namespace lumen::kv {
namespace {

TEST(StateSlots, AllocatesLowestFreeAndRunsOut) {
  StateSlots slots(3);
  EXPECT_EQ(slots.allocate(), 0);
  EXPECT_EQ(slots.allocate(), 1);
  EXPECT_EQ(slots.allocate(), 2);
  EXPECT_EQ(slots.allocate(), std::nullopt);
  EXPECT_EQ(slots.n_free(), 0);
  slots.release(1);
  slots.release(0);
  EXPECT_EQ(slots.n_free(), 2);
  EXPECT_EQ(slots.allocate(), 0);
  EXPECT_EQ(slots.allocate(), 1);
}

TEST(StateSlots, RefusesReleasingAFreeOrUnknownSlot) {
  StateSlots slots(2);
  const std::optional<int32_t> slot = slots.allocate();
  ASSERT_TRUE(slot);
  slots.release(*slot);
  EXPECT_THROW(slots.release(*slot), Error);
  EXPECT_THROW(slots.release(5), Error);
  EXPECT_THROW(slots.release(-1), Error);
  EXPECT_THROW(StateSlots(0), Error);
}

}  // namespace
}  // namespace lumen::kv
