#include "chat/message_roles.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <string_view>

namespace lumen::chat {

namespace {

constexpr std::array<std::string_view, 5> kRoles = {"system", "developer", "user", "assistant", "tool"};
constexpr const char* kRoleList = "system, developer, user, assistant or tool";

}  // namespace

std::string message_role_problem(const nlohmann::json& message, size_t index) {
  if (!message.is_object()) return fmt::format("message {} is not an object", index);
  const auto role = message.find("role");
  if (role == message.end() || role->is_null()) {
    return fmt::format("message {} has no 'role' (one of {})", index, kRoleList);
  }
  if (!role->is_string()) return fmt::format("the 'role' of message {} must be a string ({})", index, kRoleList);
  const std::string& name = role->get_ref<const std::string&>();
  if (std::find(kRoles.begin(), kRoles.end(), name) != kRoles.end()) return {};
  return fmt::format("message {} has the unknown role '{}' (a role is {})", index, name, kRoleList);
}

}  // namespace lumen::chat
