#include "backend/cpu/attention_score_columns.h"

#include <algorithm>

#include "backend/cpu/attention_row_masks.h"

namespace lumen::backend::cpu::attention_internal {

void plan_score_columns(const AttentionJob& job, int64_t n_tasks, std::span<const AttentionScoreTarget> targets,
                        AttentionScoreColumns& columns) {
  std::vector<int64_t> target_of(job.seqs.size(), -1);
  for (size_t t = 0; t < targets.size(); ++t) target_of[targets[t].sequence] = static_cast<int64_t>(t);
  columns.columns.clear();
  columns.column_of_task.assign(static_cast<size_t>(n_tasks), -1);
  int64_t floats = 0;
  for (int64_t index = 0; index < n_tasks; ++index) {
    const Task task = task_at(job, index);
    const int64_t t = target_of[static_cast<size_t>(task.seq - job.seqs.data())];
    if (t < 0) continue;
    const AttentionScoreTarget& target = targets[static_cast<size_t>(t)];
    if (task.q_begin + task.n_q <= target.first_row) continue;  // every row before the scored ones
    const int64_t lowest = lowest_window_start(*task.seq, task.q_begin, task.n_q, job.config->sliding_window);
    const int64_t n_keys = last_key(*task.seq, task.q_begin, task.n_q) + 1 - lowest;
    columns.column_of_task[static_cast<size_t>(index)] = static_cast<int64_t>(columns.columns.size());
    columns.columns.push_back({index, static_cast<size_t>(t), task.kv_head, floats, lowest, n_keys,
                               std::max(task.q_begin, target.first_row)});
    floats += n_keys;
  }
  // Grows only: the scratch keeps its largest size, as the attention's other scratch does.
  if (static_cast<int64_t>(columns.floats.size()) < floats) columns.floats.resize(static_cast<size_t>(floats));
  std::fill_n(columns.floats.begin(), floats, 0.0f);
}

void add_task_scores(const AttentionJob& job, const Task& task, const float* rows, int64_t lowest, int64_t span) {
  AttentionScoreColumns* columns = job.score_columns;
  if (columns == nullptr) return;
  const int64_t c = columns->column_of_task[static_cast<size_t>(task.index)];
  if (c < 0) return;
  const AttentionScoreColumns::Column& column = columns->columns[static_cast<size_t>(c)];
  // The column spans the same keys as the task's rows: both start at the task's lowest window
  // start and end at its last key.
  float* out = columns->floats.data() + column.offset + (lowest - column.first_key);
  const int64_t heads = job.heads_per_task;
  for (int64_t i = (column.first_row - task.q_begin) * heads; i < task.n_q * heads; ++i) {
    const float* p = rows + i * span;
    for (int64_t s = 0; s < span; ++s) out[s] += p[s];
  }
}

void add_columns_to_tables(const AttentionJob& job, std::span<const AttentionScoreTarget> targets, ThreadPool& pool) {
  const AttentionScoreColumns& columns = *job.score_columns;
  const int64_t n_kv_heads = job.config->n_kv_heads;
  // Per (target, KV head): its columns in task order, which is row-chunk order.
  std::vector<std::vector<const AttentionScoreColumns::Column*>> groups(targets.size() *
                                                                        static_cast<size_t>(n_kv_heads));
  for (const AttentionScoreColumns::Column& column : columns.columns) {
    groups[column.target * static_cast<size_t>(n_kv_heads) + static_cast<size_t>(column.kv_head)].push_back(&column);
  }
  constexpr int64_t kSlotsPerTask = 1024, kSerialFloats = int64_t{1} << 16;
  struct Work {
    size_t group;
    int64_t first_slot, end_slot;
  };
  std::vector<Work> work;
  for (size_t g = 0; g < groups.size(); ++g) {
    if (groups[g].empty()) continue;
    const SequenceSlice& seq = job.seqs[targets[g / static_cast<size_t>(n_kv_heads)].sequence];
    const int64_t n_slots = seq.start_pos + seq.n_tokens;
    for (int64_t s = 0; s < n_slots; s += kSlotsPerTask) work.push_back({g, s, std::min(n_slots, s + kSlotsPerTask)});
  }
  auto add = [&](int64_t w, unsigned) {
    const Work& item = work[static_cast<size_t>(w)];
    const AttentionScoreTarget& target = targets[item.group / static_cast<size_t>(n_kv_heads)];
    const auto kv_head = static_cast<int64_t>(item.group % static_cast<size_t>(n_kv_heads));
    for (int64_t s = item.first_slot; s < item.end_slot; ++s) {
      float total = target.scores[s * target.slot_stride + kv_head];
      for (const AttentionScoreColumns::Column* column : groups[item.group]) {
        const int64_t j = s - column->first_key;
        if (j >= 0 && j < column->n_keys) total += columns.floats[static_cast<size_t>(column->offset + j)];
      }
      target.scores[s * target.slot_stride + kv_head] = total;
    }
  };
  // A decode step's few columns are added here: a wait for the pool costs more than they do, and
  // on a busy host far more (each parallel_for is a barrier; measured on SmolLM2's H2O decode).
  int64_t floats = 0;
  for (const AttentionScoreColumns::Column& column : columns.columns) floats += column.n_keys;
  if (floats < kSerialFloats) {
    for (int64_t w = 0; w < static_cast<int64_t>(work.size()); ++w) add(w, 0);
  } else {
    pool.parallel_for(static_cast<int64_t>(work.size()), add);
  }
}

}  // namespace lumen::backend::cpu::attention_internal
