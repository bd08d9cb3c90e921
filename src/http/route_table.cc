#include "http/route_table.h"

#include <fmt/format.h>

#include <stdexcept>

namespace lumen::http {

namespace {

bool is_prefix_pattern(std::string_view pattern) { return !pattern.empty() && pattern.back() == '*'; }

}  // namespace

std::optional<std::string> route_defect(const Route& route) {
  if (route.path.empty() || route.path.front() != '/') return "its path does not start with '/'";
  if (route.path.find('*') != route.path.size() - 1 && route.path.find('*') != std::string::npos) {
    return "its path has a '*' before the end";
  }
  if (route.access == Access::Unstated) return "it does not state its access (Access::Public or Access::ApiKey)";
  if (route.methods.empty()) return "it lists no methods";
  for (const std::string& method : route.methods) {
    if (method != "GET" && method != "POST" && method != "PUT" && method != "DELETE") {
      return fmt::format("its method '{}' is not one the gate registers (GET, POST, PUT, DELETE)", method);
    }
  }
  if (!route.handler) return "it has no handler";
  return std::nullopt;
}

bool path_matches(std::string_view pattern, std::string_view path) {
  if (!is_prefix_pattern(pattern)) return pattern == path;
  const std::string_view prefix = pattern.substr(0, pattern.size() - 1);
  return path.size() > prefix.size() && path.substr(0, prefix.size()) == prefix;
}

RouteTable::RouteTable(std::vector<Route> routes) : routes_(std::move(routes)) {
  for (size_t i = 0; i < routes_.size(); ++i) {
    if (const std::optional<std::string> defect = route_defect(routes_[i])) {
      throw std::logic_error(fmt::format("route '{}' cannot be registered: {}", routes_[i].path, *defect));
    }
    for (size_t j = 0; j < i; ++j) {
      if (routes_[j].path == routes_[i].path)
        throw std::logic_error(fmt::format("route '{}' is listed twice", routes_[i].path));
    }
  }
}

const Route* RouteTable::find(std::string_view path) const {
  for (const Route& route : routes_) {
    if (path_matches(route.path, path)) return &route;
  }
  return nullptr;
}

std::string httplib_pattern(std::string_view route_path) {
  const bool prefix = is_prefix_pattern(route_path);
  if (prefix) route_path.remove_suffix(1);
  std::string pattern;
  for (const char c : route_path) {
    if (std::string_view(R"(\^$.|?*+()[]{}/)").find(c) != std::string_view::npos) pattern += '\\';
    pattern += c;
  }
  return prefix ? pattern + "(.+)" : pattern;
}

}  // namespace lumen::http
