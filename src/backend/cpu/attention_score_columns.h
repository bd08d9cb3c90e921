#pragma once
// Internal to the CPU attention: attention_scored's importance scores taken from the exact f16
// path's own probabilities (attention_exact.h), so the scores cost no second q.k over the keys,
// only an addition per probability.
//
// The exact path holds, after a task ran, each of its query vectors' whole row of probabilities
// (f16-rounded, what P V multiplies). A scored task adds its rows from the target's first_row on
// into a column of its own over its keys, row after row, each row's query heads in order; the
// columns of one (sequence, KV head) are then added into the score table in the order of their
// row chunks. Tasks are always whole groups of query heads over fixed chunks of rows when scores
// are taken (AttentionJob::chunk from the model's group alone), so the columns, their sums and
// the table's bits do not depend on the thread count, nor on whether a task's keys were spread
// over the pool (a query's probabilities do not: attention_exact.h).
//
// Memory: one column of its key span per scored task, kept in the backend's attention scratch:
// for a prompt chunk of n rows over c cached positions, about n / chunk x c floats per KV head.
#include <cstdint>
#include <span>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/attention.h"
#include "backend/cpu/attention_task.h"
#include "util/thread_pool.h"

namespace lumen::backend::cpu::attention_internal {

// Lays out a column for every task of `job` (n_tasks of them) with a target's rows, and zeroes
// them. The job's tasks must hold whole groups of query heads.
void plan_score_columns(const AttentionJob& job, int64_t n_tasks, std::span<const AttentionScoreTarget> targets,
                        AttentionScoreColumns& columns);

// Adds the task's scored rows of probabilities into its column, if it has one. rows holds its
// query vectors' probabilities, one row of `span` keys from key `lowest` per query vector.
void add_task_scores(const AttentionJob& job, const Task& task, const float* rows, int64_t lowest, int64_t span);

// Adds every target's columns into its score table, in row-chunk order per KV head.
void add_columns_to_tables(const AttentionJob& job, std::span<const AttentionScoreTarget> targets, ThreadPool& pool);

}  // namespace lumen::backend::cpu::attention_internal
