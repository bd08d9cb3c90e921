#pragma once
// fn(row) for rows [0, n) over the pool's workers, `rows_per_task` rows a task: the row-wise ops
// whose rows are independent (each row's values computed in one order, so the bits do not
// depend on how the rows are shared out).
#include <algorithm>
#include <cstdint>

#include "util/thread_pool.h"

namespace lumen::backend::cpu {

template <typename Fn>
void for_row_tasks(ThreadPool& pool, int64_t n, int64_t rows_per_task, Fn fn) {
  pool.parallel_for((n + rows_per_task - 1) / rows_per_task, [&](int64_t task, unsigned) {
    for (int64_t r = task * rows_per_task; r < std::min(n, (task + 1) * rows_per_task); ++r) fn(r);
  });
}

}  // namespace lumen::backend::cpu
