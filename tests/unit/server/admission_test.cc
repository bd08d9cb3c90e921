// Admission: the server's places in flight, each client's share of them, and that every
// reservation comes back exactly once, whichever way its holder leaves.
#include "server/admission.h"

#include <gtest/gtest.h>

#include <optional>
#include <stdexcept>

#include "server/api_error.h"
#include "server/client_id.h"

namespace lumen::server {
namespace {

// The ApiError reserve() throws, or nullopt when it admits (the places go back at once).
std::optional<ApiError> refusal(Admission& a, const std::string& client, int64_t n) {
  try {
    Admission::Places places = a.reserve(client, n);
    return std::nullopt;
  } catch (const ApiError& e) {
    return e;
  }
}

TEST(Admission, LimitsInFlightAndRefusesWhileDraining) {
  Admission a(3, 3);
  Admission::Places two = a.reserve("a", 2);
  auto full = refusal(a, "b", 2);
  ASSERT_TRUE(full);
  EXPECT_EQ(full->status(), 429);
  EXPECT_EQ(full->code(), "queue_full");
  EXPECT_EQ(full->retry_after, 1);
  Admission::Places one = a.reserve("b", 1);
  EXPECT_EQ(a.in_flight(), 3);
  two.release();
  one.release();
  EXPECT_EQ(a.in_flight(), 0);
  a.track(7);
  EXPECT_EQ(a.tracked(), std::vector<uint64_t>{7});
  a.begin_draining();
  auto draining = refusal(a, "a", 1);
  ASSERT_TRUE(draining);
  EXPECT_EQ(draining->status(), 503);
  EXPECT_TRUE(draining->retry_after.has_value());
}

TEST(Admission, ShareDefaultsToHalfOfThePlacesAndAtLeastOne) {
  EXPECT_EQ(Admission(1024).max_per_client(), 512);
  EXPECT_EQ(Admission(1).max_per_client(), 1);
  EXPECT_EQ(Admission(5).max_per_client(), 2);
  EXPECT_EQ(Admission(10, 3).max_per_client(), 3);
  EXPECT_EQ(Admission(10, 50).max_per_client(), 10);  // never more than the whole
}

TEST(Admission, OneClientCannotTakeEveryPlace) {
  Admission a(8);  // share: 4
  Admission::Places first = a.reserve("greedy", 3);
  Admission::Places second = a.reserve("greedy", 1);
  auto over = refusal(a, "greedy", 1);
  ASSERT_TRUE(over);
  EXPECT_EQ(over->status(), 429);
  EXPECT_EQ(over->code(), "client_queue_full");
  EXPECT_EQ(over->retry_after, 1);
  EXPECT_NE(std::string(over->what()).find("per-client limit"), std::string::npos) << over->what();
  // The other half is still there for everyone else.
  Admission::Places other = a.reserve("polite", 4);
  EXPECT_EQ(a.in_flight(), 8);
  EXPECT_EQ(a.held_by("greedy"), 4);
  EXPECT_EQ(a.held_by("polite"), 4);
  // A single request larger than the share never fits, even on an idle server.
  Admission idle(8);
  EXPECT_TRUE(refusal(idle, "x", 5));
  EXPECT_FALSE(refusal(idle, "x", 4));
}

TEST(Admission, PlacesComeBackOnceWhenTheHolderLeaves) {
  Admission a(4, 2);
  {
    Admission::Places p = a.reserve("c", 2);
    EXPECT_EQ(a.held_by("c"), 2);
  }
  EXPECT_EQ(a.held_by("c"), 0);
  EXPECT_EQ(a.in_flight(), 0);

  // Released early, then destroyed: counted back once.
  Admission::Places p = a.reserve("c", 2);
  p.release();
  p.release();
  EXPECT_EQ(a.in_flight(), 0);

  // Moved: only the last owner gives them back.
  Admission::Places q = a.reserve("c", 1);
  Admission::Places r = std::move(q);
  q.release();
  EXPECT_EQ(a.held_by("c"), 1);
  r = a.reserve("d", 2);  // assigning over held places gives the old ones back
  EXPECT_EQ(a.held_by("c"), 0);
  EXPECT_EQ(a.held_by("d"), 2);
  r.release();
  EXPECT_EQ(a.in_flight(), 0);
}

TEST(Admission, PlacesComeBackWhenTheHandlerThrows) {
  Admission a(4, 2);
  auto handler = [&] {
    Admission::Places places = a.reserve("c", 2);
    throw std::runtime_error("the template refused the conversation");
  };
  for (int i = 0; i < 3; ++i) {  // would be refused by its share the second time if a place leaked
    EXPECT_THROW(handler(), std::runtime_error);
    EXPECT_EQ(a.held_by("c"), 0);
    EXPECT_EQ(a.in_flight(), 0);
  }
}

TEST(ClientId, TheKeyIsTheTenantWhenKeysAreOnAndThePeerOtherwise) {
  const std::string k1 = client_id(true, "Bearer one", "10.0.0.1");
  EXPECT_EQ(k1, client_id(true, "Bearer one", "10.0.0.2"));  // one tenant, any address
  EXPECT_NE(k1, client_id(true, "Bearer two", "10.0.0.1"));
  EXPECT_EQ(k1.find("one"), std::string::npos);  // no secrets in the table
  EXPECT_EQ(client_id(false, "Bearer one", "10.0.0.1"), client_id(false, "Bearer two", "10.0.0.1"));
  EXPECT_NE(client_id(false, "", "10.0.0.1"), client_id(false, "", "10.0.0.2"));
}

TEST(ClientId, TheEngineSharesSeatsByTheClientTheAdmissionPlacesBelongTo) {
  Admission a(8);
  const std::string alpha = client_id(true, "Bearer one", "10.0.0.1");
  const std::string beta = client_id(true, "Bearer two", "10.0.0.1");
  Admission::Places places = a.reserve(alpha, 2);
  EXPECT_EQ(places.client(), alpha);
  // The engine's key: the same for one client however it connects, another for another.
  EXPECT_EQ(engine_client(places.client()), engine_client(client_id(true, "Bearer one", "10.0.0.9")));
  EXPECT_NE(engine_client(alpha), engine_client(beta));
}

// A draining server waits for idle(): no places held (a request running) and none tracked (a
// finished request whose Generation still writes its response's last bytes, having given its
// places back so that the client's next request is admitted at once).
TEST(Admission, IdleOnlyWithNoPlacesAndNothingTracked) {
  Admission a(2, 1);
  EXPECT_TRUE(a.idle());
  Admission::Places places = a.reserve("client", 1);
  a.track(7);
  EXPECT_FALSE(a.idle());
  places.release();
  EXPECT_EQ(a.in_flight(), 0);
  EXPECT_FALSE(a.idle()) << "request 7 is still tracked";
  Admission::Places again = a.reserve("client", 1);  // the same client is admitted again at once
  EXPECT_EQ(again.count(), 1);
  again.release();
  a.untrack(7);
  EXPECT_TRUE(a.idle());
}

}  // namespace
}  // namespace lumen::server
