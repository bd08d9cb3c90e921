#include "benchmark/goodput.h"

#include <cmath>
#include <exception>

#include "util/error.h"

namespace lumen::benchmark {

ServiceLevelObjectives parse_slos(std::span<const std::string> items) {
  ServiceLevelObjectives slos;
  for (const std::string& item : items) {
    const size_t colon = item.find(':');
    if (colon == std::string::npos) fail("--goodput: '{}' is not name:milliseconds (e.g. ttft:500)", item);
    const std::string name = item.substr(0, colon);
    const std::string number = item.substr(colon + 1);
    double ms = 0;
    size_t used = 0;
    try {
      ms = std::stod(number, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != number.size() || !std::isfinite(ms) || ms <= 0) {
      fail("--goodput: '{}' needs a positive number of milliseconds", item);
    }
    if (name == "ttft")
      slos.ttft_ms = ms;
    else if (name == "tpot")
      slos.tpot_ms = ms;
    else if (name == "e2el")
      slos.e2el_ms = ms;
    else
      fail("--goodput: unknown metric '{}' (ttft, tpot, e2el)", name);
  }
  return slos;
}

bool meets_slos(const RequestResult& request, const ServiceLevelObjectives& slos) {
  if (!request.ok) return false;
  if (slos.ttft_ms && request.ttft * 1e3 > *slos.ttft_ms) return false;
  if (slos.tpot_ms && request.tpot() * 1e3 > *slos.tpot_ms) return false;
  if (slos.e2el_ms && request.e2el * 1e3 > *slos.e2el_ms) return false;
  return true;
}

}  // namespace lumen::benchmark
