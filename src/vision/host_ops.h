#pragma once
// The vision tower's element-wise and row-wise steps on host f32 rows, shared out over the CPU
// backend's thread pool: what the backend interface has no op for (LayerNorm with a bias, the
// GELU variants, softmax over a full row). Norms and softmax sum in double: the tower's rows
// grow with depth, and a float sum of squares loses the small ones (model/encoder.cc does the same).
#include <cstdint>

#include "backend/tensor_view.h"
#include "util/thread_pool.h"
#include "vision/vision_model.h"

namespace lumen::vision {

// fn(row) for every row r < rows, in tasks of a few rows.
void for_each_row(ThreadPool& pool, int64_t rows, const std::function<void(int64_t)>& fn);

// Each row of x: (x - mean) / sqrt(var + eps) * w (+ b), into out (may be x).
void layer_norm(ThreadPool& pool, const backend::TensorView& x, const backend::TensorView& w,
                const backend::TensorView* b, double eps, backend::TensorView& out);
// Each row of x: x / sqrt(mean(x^2) + eps) * w, in place.
void rms_norm_rows(ThreadPool& pool, backend::TensorView& x, const backend::TensorView& w, double eps);
// The activation, element-wise in place.
void activate(ThreadPool& pool, backend::TensorView& x, Activation act);
// Each row of x to softmax(x), in place.
void softmax_rows(ThreadPool& pool, backend::TensorView& x);

}  // namespace lumen::vision
