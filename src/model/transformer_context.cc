// Context parallelism's forward pass (model/context_chunks.h): one prompt's prefill shared by the
// ranks, each running every layer over its own two chunks of the prompt. Attention is ring
// attention: each rank's K/V block goes round the ring, rank to rank + 1, and every rank attends
// its queries over each block as it holds it, merging the partial results by log-sum-exp
// (model/partial_attention.h). Rank 0 also writes every block it holds into its KV cache, so that
// when the prefill ends it holds the whole prompt's K/V and decodes alone (Transformer::forward).
// A block's send to the next rank and the receive of the following one are in flight while the
// rank attends the block it holds.
#include <algorithm>
#include <cstring>
#include <limits>

#include "backend/cpu/cpu_backend.h"
#include "dist/collectives.h"
#include "model/partial_attention.h"
#include "model/transformer.h"
#include "tensor/fp16.h"
#include "util/error.h"

namespace lumen::model {

struct Transformer::RingBuffers {
  std::vector<int32_t> tokens, positions;  // this rank's rows of the prompt
  std::vector<std::byte> held, incoming;   // a block's K rows then its V rows (f16 or f32)
  std::vector<float> widened;              // rank 0: an f16 block as f32 rows for store_kv
  std::vector<int32_t> held_positions;
  std::vector<float> part_out, part_lse, lse;
};

namespace {

// Rows [first, first + count) of each of the two chunks, as positions (the prompt starts at 0).
void append_rows(const ContextChunks& chunks, std::vector<int32_t>& out) {
  out.clear();
  for (const RowRange& range : {chunks.early, chunks.late}) {
    for (int64_t i = 0; i < range.count; ++i) out.push_back(static_cast<int32_t>(range.first + i));
  }
}

std::span<std::byte> float_bytes(std::span<float> values) { return std::as_writable_bytes(values); }

// A block's K rows then V rows into `to`, as f16 (the cache's own rounding) or as they are.
void pack_block(const float* k, const float* v, int64_t k_values, int64_t v_values, bool f16, std::byte* to) {
  if (!f16) {
    std::memcpy(to, k, static_cast<size_t>(k_values) * sizeof(float));
    std::memcpy(to + k_values * static_cast<int64_t>(sizeof(float)), v, static_cast<size_t>(v_values) * sizeof(float));
    return;
  }
  auto* h = reinterpret_cast<uint16_t*>(to);
  for (int64_t i = 0; i < k_values; ++i) h[i] = tensor::float_to_fp16(k[i]);
  for (int64_t i = 0; i < v_values; ++i) h[k_values + i] = tensor::float_to_fp16(v[i]);
}

}  // namespace

void Transformer::require_context_parallel() const {
  if (context_.comm == nullptr) fail("context parallelism without collectives to pass K/V blocks through");
  if (backend_.name() != "cpu") fail("context parallelism runs on the CPU backend only (not {})", backend_.name());
  if (shard_.size > 1 || stage_.count > 1) {
    fail("context parallelism does not combine with tensor or pipeline parallelism yet");
  }
  if (arch_.features.encoder || arch_.features.mixer != Mixer::Attention ||
      arch_.features.attention != AttentionKind::Grouped || arch_.features.alibi_max_bias != 0.0f ||
      arch_.features.attention_sinks) {
    fail(
        "context parallelism is not supported for the {} architecture (grouped-query attention decoders only: no "
        "encoder, state-space layers, latent attention, ALiBi or attention sinks)",
        hp_.architecture);
  }
}

bool Transformer::shares_context(const ForwardBatch& batch, KvCache& cache) const {
  const auto n = static_cast<int64_t>(batch.tokens.size());
  // One sequence (one slice per layer group) from its start, the batch's every row; two rows per
  // rank at least, so that every chunk has one. Anything else (decodes, a prompt's later chunks,
  // a prefix-cache hit) is rank 0's alone.
  if (batch.sequences.size() != cache.layout().n_groups() || n < 2 * int64_t{context_.size}) return false;
  if (!batch.embeddings.empty() || !batch.scores.empty()) return false;
  for (const backend::SequenceSlice& seq : batch.sequences) {
    if (seq.start_pos != 0 || seq.first_token != 0 || seq.n_tokens != n || backend::has_row_masks(seq)) return false;
  }
  for (int64_t i = 0; i < n; ++i) {
    if (batch.positions[static_cast<size_t>(i)] != i) return false;
  }
  for (size_t layer = layers_.first; layer < layers_.end; ++layer) {
    if (cache.layer(layer).rotated) {
      fail(
          "context parallelism needs an unrotated KV cache (f32, f16 or bf16; not --kv-cache-dtype q8_0, q4_0 or "
          "fp8)");
    }
  }
  return true;
}

void Transformer::forward_context_parallel(const ForwardBatch& batch, KvCache& cache, float* logits) {
  if (!ring_) ring_ = std::make_shared<RingBuffers>();
  RingBuffers& ring = *ring_;
  const auto n_prompt = static_cast<int64_t>(batch.tokens.size());
  const ContextChunks mine = context_chunks(n_prompt, context_.rank, context_.size);
  const int64_t n = mine.rows();
  const auto n_out = static_cast<int64_t>(batch.logit_rows.size());
  append_rows(mine, ring.positions);
  ring.tokens.clear();
  for (int32_t p : ring.positions) ring.tokens.push_back(batch.tokens[static_cast<size_t>(p)]);
  ensure_capacity(n, n_out);
  embed(ring.tokens, n, {});
  for (size_t layer = layers_.first; layer < layers_.end; ++layer) {
    attention_inputs(layer, ring.positions, n);
    ring_attention(layer, batch, cache, mine, n_prompt);
    attention_output(layer, n);
    mlp_block(layer, n);
  }
  // The logit rows' hidden states go to rank 0, in the batch's order, from whichever rank holds
  // each (every rank walks the same list: the sends and receives pair up in order).
  const auto embd = static_cast<size_t>(hp_.embedding_length);
  auto* x = static_cast<float*>(s_.x.data);
  auto* picked = static_cast<float*>(s_.logit_h.data);
  dist::Collectives& comm = *context_.comm;
  for (size_t j = 0; j < batch.logit_rows.size(); ++j) {
    const int64_t row = batch.logit_rows[j];
    const int owner = context_rank_of_row(row, n_prompt, context_.size);
    if (owner != context_.rank && context_.rank != 0) continue;
    float* to = picked + j * embd;
    if (owner == context_.rank) {
      const int64_t local = row < mine.late.first ? row - mine.early.first : mine.early.count + row - mine.late.first;
      const float* from = x + static_cast<size_t>(local) * embd;
      if (context_.rank == 0) {
        std::copy_n(from, embd, to);
      } else {
        comm.send(std::as_bytes(std::span(from, embd)), 0);
      }
    } else {
      comm.receive(float_bytes(std::span(to, embd)), owner);
    }
  }
  if (context_.rank != 0 || n_out == 0 || logits == nullptr) return;
  output_head(n_out, backend::f32_matrix(logits, static_cast<int64_t>(hp_.vocab_size), n_out));
}

void Transformer::ring_attention(size_t layer, const ForwardBatch& batch, KvCache& cache, const ContextChunks& mine,
                                 int64_t n_prompt) {
  RingBuffers& ring = *ring_;
  const int size = context_.size, rank = context_.rank;
  const int64_t n = mine.rows();
  const auto heads = static_cast<int64_t>(hp_.head_count), kv_heads = static_cast<int64_t>(hp_.head_count_kv);
  const auto head_dim = static_cast<int64_t>(hp_.head_dim);
  backend::AttentionConfig config = attention_;
  config.sliding_window = layer_window_[layer];
  const int64_t value_dim = backend::attention_value_dim(config);
  const int64_t k_row = kv_heads * head_dim, v_row = kv_heads * value_dim;
  const std::span<const float> q(static_cast<const float*>(s_.q.data), static_cast<size_t>(n * heads * head_dim));
  const std::span<float> out(static_cast<float*>(s_.attn.data), static_cast<size_t>(n * heads * value_dim));
  ring.lse.resize(static_cast<size_t>(n * heads));
  ring.part_out.resize(out.size());
  ring.part_lse.resize(ring.lse.size());
  // With an f16 cache the blocks travel as f16: the cache would round them so anyway, so every
  // rank attends the very keys one process reads from its cache, for half the bytes. Other
  // cache types (f32, bf16) send f32 rows.
  const bool f16 = cache.layer(layer).k.type == tensor::DType::F16;
  const size_t value_bytes = f16 ? sizeof(uint16_t) : sizeof(float);
  const auto block_bytes = [&](int64_t rows) { return static_cast<size_t>(rows * (k_row + v_row)) * value_bytes; };
  // The block this rank starts with: its own K rows, then its V rows.
  ring.held.resize(block_bytes(n));
  pack_block(static_cast<const float*>(s_.k.data), static_cast<const float*>(s_.v.data), n * k_row, n * v_row, f16,
             ring.held.data());
  const backend::SequenceSlice& seq = batch.sequences[static_cast<size_t>(cache.layout().group_of_layer[layer])];
  auto* cpu = dynamic_cast<backend::CpuBackend*>(&backend_);
  const PartialAttentionRun run{nullptr, cpu != nullptr ? &cpu->pool() : nullptr};
  for (int step = 0; step < size; ++step) {
    // At step s this rank holds the block of rank - s; the next comes from rank - 1.
    const ContextChunks owner = context_chunks(n_prompt, (rank - step + size) % size, size);
    const int64_t rows = owner.rows();
    append_rows(owner, ring.held_positions);
    // The next block's receive and this one's send run while this rank attends the block it
    // holds (which neither changes until both are waited for).
    std::unique_ptr<dist::Transfer> next, sent;
    if (step + 1 < size) {
      const int64_t next_rows = context_chunks(n_prompt, (rank - step - 1 + size) % size, size).rows();
      ring.incoming.resize(block_bytes(next_rows));
      next = context_.comm->start_receive(ring.incoming, (rank - 1 + size) % size);
      sent = context_.comm->start_send(ring.held, (rank + 1) % size);
    }
    const bool first = step == 0;
    const std::span<float> part_out = first ? out : std::span<float>(ring.part_out);
    const std::span<float> part_lse = first ? std::span<float>(ring.lse) : std::span<float>(ring.part_lse);
    if (f16) {
      const auto* k = reinterpret_cast<const uint16_t*>(ring.held.data());
      const F16KvRows block{{k, static_cast<size_t>(rows * k_row)},
                            {k + rows * k_row, static_cast<size_t>(rows * v_row)},
                            ring.held_positions};
      partial_attention({q, ring.positions}, block, config, part_out, part_lse, run);
    } else {
      const auto* k = reinterpret_cast<const float*>(ring.held.data());
      partial_attention({q, ring.positions}, {{k, static_cast<size_t>(rows * k_row)}, ring.held_positions},
                        {k + rows * k_row, static_cast<size_t>(rows * v_row)}, config, part_out, part_lse, run);
    }
    if (!first) merge_partial_attention(out, ring.lse, ring.part_out, ring.part_lse, value_dim);
    if (rank == 0) {
      // The block's two chunks into rank 0's cache, where the decode that follows reads them
      // (store_kv takes f32 rows: an f16 block is widened, exactly, and rounds back to itself).
      const backend::SequenceSlice slices[] = {
          {0, owner.early.count, owner.early.first, seq.block_table},
          {owner.early.count, owner.late.count, owner.late.first, seq.block_table}};
      float* k = nullptr;
      if (f16) {
        ring.widened.resize(static_cast<size_t>(rows * (k_row + v_row)));
        const auto* h = reinterpret_cast<const uint16_t*>(ring.held.data());
        for (size_t i = 0; i < ring.widened.size(); ++i) ring.widened[i] = tensor::fp16_to_float(h[i]);
        k = ring.widened.data();
      } else {
        k = reinterpret_cast<float*>(ring.held.data());
      }
      backend_.store_kv(backend::f32_matrix(k, k_row, rows), backend::f32_matrix(k + rows * k_row, v_row, rows), slices,
                        cache.layer(layer));
    }
    if (next) {
      sent->wait();
      next->wait();
      std::swap(ring.held, ring.incoming);
    }
  }
}

}  // namespace lumen::model
