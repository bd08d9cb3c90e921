// The role check every way into a chat shares (the server, Python's LLM.chat).
#include "chat/message_roles.h"

#include <gtest/gtest.h>

namespace lumen::chat {
namespace {

TEST(MessageRoles, OpenAisFiveRolesPass) {
  for (const char* role : {"system", "developer", "user", "assistant", "tool"}) {
    EXPECT_EQ(message_role_problem({{"role", role}, {"content", "x"}}, 0), "") << role;
  }
}

TEST(MessageRoles, AnUnknownRoleIsNamedWithItsMessage) {
  EXPECT_EQ(message_role_problem({{"role", "wizard"}, {"content", "x"}}, 2),
            "message 2 has the unknown role 'wizard' (a role is system, developer, user, assistant or tool)");
  // Roles are case-sensitive, as OpenAI's.
  EXPECT_NE(message_role_problem({{"role", "User"}}, 0).find("'User'"), std::string::npos);
}

TEST(MessageRoles, AMissingOrMistypedRoleIsSaidSo) {
  EXPECT_NE(message_role_problem({{"content", "x"}}, 0).find("has no 'role'"), std::string::npos);
  EXPECT_NE(message_role_problem({{"role", nullptr}}, 0).find("has no 'role'"), std::string::npos);
  EXPECT_NE(message_role_problem({{"role", 3}}, 1).find("must be a string"), std::string::npos);
  EXPECT_EQ(message_role_problem("user", 4), "message 4 is not an object");
}

}  // namespace
}  // namespace lumen::chat
