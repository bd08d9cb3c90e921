#pragma once
// Internal to the CPU attention: llama.cpp's default (non-flash) attention over an f16 V cache,
// reproduced exactly (see attention.h): whole score rows, the row max, a softmax summed in
// double, probabilities rounded to f16, then P V.
//
// Its arithmetic is defined per key chunk (kKeyChunk positions counted from position 0): each
// chunk's exponentials are summed (in double) on their own and the chunk sums added in order;
// each chunk's P V is accumulated from zero on its own and the chunk results added in order.
// Nothing else about a query's result depends on the call, so a query gives the same bits
// whether its chunks run one after another in one task (run_exact_task: prefill, big batches)
// or each on its own task (run_exact_split: a few queries over a long context, where one task
// per KV head would leave threads idle and one per query head would read each K/V row once
// per head).
#include <cstdint>

#include "backend/cpu/attention_task.h"
#include "util/thread_pool.h"

namespace lumen::backend::cpu::attention_internal {

// One task's queries (already in buf.q) over all their keys, chunk after chunk; writes the
// task's rows of the output.
void run_exact_task(const AttentionJob& job, const Task& task, TaskBuffers& buf);

// Every task of the job (job.heads_per_task query heads each), each task's key chunks spread
// over the pool in three passes (scores and chunk maxima; exponentials and chunk sums;
// probabilities and each chunk's P V), then the chunks' P V added in order. The job's scratch
// holds what passes hand to each other. Allocates only when a larger shape is seen.
void run_exact_split(const AttentionJob& job, int64_t n_tasks, ThreadPool& pool);

// Whether run_exact_split has anything to spread: some task sees keys of more than one chunk.
bool spans_several_chunks(const AttentionJob& job, int64_t n_tasks);

}  // namespace lumen::backend::cpu::attention_internal
