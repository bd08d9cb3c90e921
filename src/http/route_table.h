#pragma once
// The one list of the routes a server answers: each path with its methods, who may call it, and
// its handler. It drives everything about routing (request_gate.h): the handlers httplib gets,
// a 404 for any path not in it before any handler runs, 405 + Allow for a method it does not
// list, the methods a CORS preflight is told, and the API-key check. It fails closed: a route
// must state its access, and one that does not cannot be registered, so a route added in a
// hurry is refused at startup rather than served without a key.
#include <httplib.h>

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lumen::http {

enum class Access {
  Unstated,  // the value a route gets when its author forgot to say: never registered
  Public,    // served without the API key (/health; the chat page's static files)
  ApiKey,    // needs one of the API keys, when keys are set
};

using Handler = std::function<void(const httplib::Request&, httplib::Response&)>;

struct Route {
  // An exact path, or a prefix ending in '*': "/v1/models/*" is "/v1/models/" and at least one
  // more character.
  std::string path;
  std::vector<std::string> methods;  // "GET", "POST"; a GET route answers HEAD too
  Access access = Access::Unstated;
  Handler handler;
};

// Why `route` cannot be registered (no stated access, no methods, no handler, a bad path), or
// nothing when it can.
std::optional<std::string> route_defect(const Route& route);

// Whether `path` is one `pattern` (a Route's path) names.
bool path_matches(std::string_view pattern, std::string_view path);

class RouteTable {
 public:
  // Throws std::logic_error naming the route when one has a defect or two share a path: a
  // programming error, caught when the server is built, before it listens.
  explicit RouteTable(std::vector<Route> routes);

  // The route `path` belongs to; null when none does (the first that matches wins).
  const Route* find(std::string_view path) const;
  const std::vector<Route>& routes() const { return routes_; }

 private:
  std::vector<Route> routes_;
};

// httplib's pattern (a regular expression matched against the whole path) for a Route's path;
// what a prefix route's '*' stands for is the handler's request.matches[1].
std::string httplib_pattern(std::string_view route_path);

}  // namespace lumen::http
