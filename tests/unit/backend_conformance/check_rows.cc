// get_rows against the reference dequantizer: the same values, up to the rounding of the
// dequantization's multiply-add (a device may fuse it: scale * q - min then rounds once, not
// twice, which can move a value that nearly cancels by an ulp of its terms, about the row's
// largest value).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "checks.h"
#include "tensor_io.h"

namespace lumen::backend::conformance {

void check_get_rows(Backend& backend, const Case& c) {
  const auto [cols, table_rows, n_ids] = c.shape;
  const HostTensor table =
      encode(c.type, {cols, table_rows, 1, 1}, random_values(static_cast<size_t>(cols * table_rows), 41, -2.0f, 2.0f));
  const std::vector<float> decoded = decode(table);
  // Repeats, the first and the last row, out of order.
  std::vector<int32_t> ids;
  for (int64_t i = 0; i < n_ids; ++i) {
    ids.push_back(static_cast<int32_t>((i * 5 + table_rows - 1) % table_rows));
  }
  const BackendTensor td = upload(backend, table);
  BackendTensor out = allocate(backend, tensor::DType::F32, {cols, n_ids, 1, 1});
  backend.get_rows(td.view, ids, out.view);

  std::vector<double> want, tol;
  for (const int32_t id : ids) {
    double largest = 0.0;
    for (int64_t j = 0; j < cols; ++j)
      largest = std::max(largest, std::abs(double{decoded[static_cast<size_t>(id * cols + j)]}));
    for (int64_t j = 0; j < cols; ++j) {
      want.push_back(decoded[static_cast<size_t>(id * cols + j)]);
      tol.push_back(largest * std::ldexp(1.0, -20));
    }
  }
  expect_close(download(backend, out.view), want, tol, "rows");
}

}  // namespace lumen::backend::conformance
