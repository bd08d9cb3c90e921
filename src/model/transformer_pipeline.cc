// Transformer::forward_pipelined: one pipeline stage's part of a forward pass (parallelism.md).
// The batch goes in micro-batches; each stage receives a part's activations from the one before,
// runs its layers and sends them on, and the last stage returns the rows that need logits to
// rank 0, which computes them.
#include <algorithm>

#include "dist/collectives.h"
#include "model/transformer.h"

namespace lumen::model {

namespace {

using backend::TensorView;
using backend::first_rows;

// Micro-batches of at least this many rows: fewer would stream each stage's weights once more
// per part for little overlap (a decode step of a few sequences is one part; its weights are
// read once).
constexpr int64_t kMinMicroBatchRows = 64;

// A scratch activation's bytes, to send or receive (contiguous host f32 rows on the CPU backend,
// the only one that runs spread over processes).
std::span<std::byte> host_bytes(const TensorView& m) {
  return {static_cast<std::byte*>(m.data), static_cast<size_t>(m.elements()) * sizeof(float)};
}

}  // namespace

void Transformer::forward_pipelined(const ForwardBatch& batch, KvCache& cache, float* logits) {
  const size_t n_groups = cache.layout().n_groups();
  const std::vector<MicroBatch> parts =
      plan_micro_batches(batch, n_groups, stage_.max_micro_batches, kMinMicroBatchRows);
  int64_t widest = 0;
  for (const MicroBatch& part : parts) widest = std::max(widest, part.n_rows);
  const auto n_out = static_cast<int64_t>(batch.logit_rows.size());
  ensure_capacity(widest, n_out);
  const auto embd = static_cast<size_t>(hp_.embedding_length);
  dist::Collectives& comm = *stage_.comm;
  const bool computes_logits = stage_.index == 0 && shard_.rank == 0;
  // Rank 0 posts the receives of the last stage's rows before its first part goes: the last
  // stage then never waits on a rank 0 still busy sending it later parts.
  std::vector<std::unique_ptr<dist::Transfer>> returns;
  if (computes_logits) {
    returned_.resize(static_cast<size_t>(n_out) * embd);
    size_t at = 0;
    for (const MicroBatch& part : parts) {
      if (part.outputs.empty()) continue;
      returns.push_back(comm.start_receive(as_writable_bytes(std::span(returned_).subspan(at * embd, part.outputs.size() * embd)),
                                           stage_.returning_rank));
      at += part.outputs.size();
    }
  }
  for (const MicroBatch& part : parts) {
    slice_micro_batch(batch, n_groups, part, micro_);
    const TensorView x = first_rows(s_.x, part.n_rows);
    if (stage_.previous_rank < 0) {
      embed(micro_.batch.tokens, part.n_rows, {});
    } else {
      comm.receive(host_bytes(x), stage_.previous_rank);
    }
    run_layers(micro_.batch, cache, part.n_rows);
    if (stage_.next_rank >= 0) {
      comm.send(host_bytes(x), stage_.next_rank);
    } else if (stage_.returns_rows && !part.outputs.empty()) {
      TensorView picked = first_rows(s_.logit_h, static_cast<int64_t>(part.outputs.size()));
      backend_.get_rows(x, micro_.logit_rows, picked);
      comm.send(host_bytes(picked), 0);
    }
  }
  if (!computes_logits || n_out == 0) return;
  for (const std::unique_ptr<dist::Transfer>& incoming : returns) incoming->wait();
  if (logits == nullptr) return;
  // Part by part, each part's rows in output order: row j of the logits is logit_rows[j]'s.
  auto* picked = static_cast<float*>(s_.logit_h.data);
  size_t at = 0;
  for (const MicroBatch& part : parts) {
    for (size_t j : part.outputs) std::copy_n(returned_.data() + (at++) * embd, embd, picked + j * embd);
  }
  output_head(n_out, backend::f32_matrix(logits, static_cast<int64_t>(hp_.vocab_size), n_out));
}

}  // namespace lumen::model
