#include "grammar/repeat_counts.h"

namespace lumen::grammar {

bool merge_repeat_counts(size_t a, size_t b, size_t c, size_t d, size_t& min, size_t& max) {
  const auto mul = [](size_t x, size_t y) {
    if (x == 0 || y == 0) return size_t{0};
    if (x == kUnboundedCount || y == kUnboundedCount || x > kUnboundedCount / y) return kUnboundedCount;
    return x * y;
  };
  min = mul(a, c);
  max = mul(b, d);
  if (d == 0 || b == 0) return true;                  // only the empty string
  if (b == kUnboundedCount) return c >= 1 || a <= 1;  // [c*a, inf), or {0} and [a, inf)
  if (c == d) return true;
  // The intervals of j and j+1 touch when (j+1)*a <= j*b + 1, i.e. a <= j*(b-a) + 1, which
  // only gets truer as j grows (b >= a): the first pair, j = c, decides.
  return a <= c * (b - a) + 1;
}

}  // namespace lumen::grammar
