#include "quantize/tensor_conversion.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <vector>

#include "tensor/quantize.h"
#include "util/error.h"

namespace lumen::quantize {
namespace {

// Rows per task: at least 16k elements (as llama-quantize's chunks), so a task's work dwarfs
// handing it out, yet small enough that a 2-D tensor still splits over many workers.
constexpr int64_t kMinTaskElements = 32 * 512;

}  // namespace

void convert_tensor(const gguf::TensorInfo& source, tensor::DType target, std::span<uint8_t> out,
                    ThreadPool& pool, const float* importance, TensorError* error) {
  const int64_t columns = source.dims[0];
  const int64_t rows = source.rows();
  const int64_t rows_per_matrix = source.dims.size() > 1 ? source.dims[1] : 1;
  const auto source_row_bytes = static_cast<size_t>(*tensor::row_bytes(source.type, columns));
  const auto target_row_bytes = static_cast<size_t>(*tensor::row_bytes(target, columns));
  const int64_t rows_per_task = std::max<int64_t>(1, (kMinTaskElements + columns - 1) / columns);
  const int64_t tasks = (rows + rows_per_task - 1) / rows_per_task;

  std::vector<std::vector<float>> scratch(pool.size());
  std::vector<std::vector<float>> decoded(error != nullptr ? pool.size() : 0);
  std::vector<TensorError> task_errors(error != nullptr ? static_cast<size_t>(tasks) : 0);
  // The first row holding a NaN or an infinity, if any. llama-quantize refuses such a tensor
  // too (its check of the quantized rows finds the non-finite scales they produce); Lumen
  // checks the values themselves, so the message can say where.
  std::atomic<int64_t> first_bad_row{std::numeric_limits<int64_t>::max()};
  pool.parallel_for(tasks, [&](int64_t task, unsigned worker) {
    const int64_t first = task * rows_per_task;
    const int64_t count = std::min(rows_per_task, rows - first);
    const int64_t elements = count * columns;
    std::vector<float>& values = scratch[worker];
    if (values.size() < static_cast<size_t>(elements)) values.resize(static_cast<size_t>(elements));
    tensor::dequantize_row(source.type, source.data + static_cast<size_t>(first) * source_row_bytes,
                           values.data(), elements);
    for (int64_t i = 0; i < elements; ++i) {
      if (!std::isfinite(values[static_cast<size_t>(i)])) {
        const int64_t row = first + i / columns;
        int64_t seen = first_bad_row.load();
        while (row < seen && !first_bad_row.compare_exchange_weak(seen, row)) {
        }
        return;
      }
    }
    uint8_t* written = out.data() + static_cast<size_t>(first) * target_row_bytes;
    if (importance == nullptr) {
      tensor::quantize_row_ggml(target, values.data(), written, elements);
    } else {
      for (int64_t r = 0; r < count; ++r) {
        const int64_t row = first + r;
        tensor::quantize_rows_ggml(target, values.data() + r * columns, written + static_cast<size_t>(r) * target_row_bytes,
                                   1, columns, importance + (row / rows_per_matrix) * columns);
      }
    }
    if (error == nullptr) return;
    // What a reader of the file gets back, against what went in.
    std::vector<float>& back = decoded[worker];
    if (back.size() < static_cast<size_t>(elements)) back.resize(static_cast<size_t>(elements));
    tensor::dequantize_row(target, written, back.data(), elements);
    TensorError& sums = task_errors[static_cast<size_t>(task)];
    for (int64_t i = 0; i < elements; ++i) {
      const double original = values[static_cast<size_t>(i)];
      const double difference = static_cast<double>(back[static_cast<size_t>(i)]) - original;
      sums.squared_error += difference * difference;
      sums.squared_value += original * original;
    }
    sums.elements += elements;
  });
  if (error != nullptr) {
    *error = {};
    for (const TensorError& sums : task_errors) {  // in task order: the same total every run
      error->squared_error += sums.squared_error;
      error->squared_value += sums.squared_value;
      error->elements += sums.elements;
    }
  }
  if (first_bad_row.load() != std::numeric_limits<int64_t>::max()) {
    fail("tensor '{}' has a NaN or infinite value in row {}: it cannot be quantized",
         source.name, first_bad_row.load());
  }
}

}  // namespace lumen::quantize
