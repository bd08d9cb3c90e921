// Engine::embed: inputs run through the model on the loop thread, between steps, with KV blocks
// borrowed from the engine's pool for the length of one forward pass. The requests that arrived
// since the last step share their passes: concurrent requests are batched together as one
// request's inputs are. Generation's sequences keep their blocks; an embedding's K/V is never
// read again, so its blocks go straight back to the free list (unpublished: nothing reaches the
// prefix cache). An encoder attends to its own rows and writes no K/V: it borrows none.
#include <algorithm>
#include <exception>
#include <memory>
#include <span>

#include "engine/engine_impl.h"
#include "model/pooling.h"
#include "util/error.h"

namespace lumen {

namespace {

// The blocks one batch borrows, returned however the pass ends.
class BorrowedBlocks {
 public:
  explicit BorrowedBlocks(kv::BlockPool& pool) : pool_(pool) {}
  ~BorrowedBlocks() {
    for (kv::BlockId id : held_) pool_.release(id);
  }
  BorrowedBlocks(const BorrowedBlocks&) = delete;
  BorrowedBlocks& operator=(const BorrowedBlocks&) = delete;
  kv::BlockId take() {
    std::optional<kv::BlockId> id = pool_.allocate();
    if (!id) fail("embeddings: the KV cache ran out of blocks");  // sized by the caller first
    held_.push_back(*id);
    return *id;
  }

 private:
  kv::BlockPool& pool_;
  std::vector<kv::BlockId> held_;
};

int64_t blocks_of(int64_t n_tokens, int64_t block_size) { return (n_tokens + block_size - 1) / block_size; }

}  // namespace

void Engine::Impl::embed_batch(std::span<const std::vector<int32_t>* const> inputs,
                               std::span<std::vector<float>* const> out) {
  const model::Pooling pooling = model::embedding_pooling(model.hparams);
  const int64_t bs = config.block_size;
  const size_t n_groups = layout.n_groups();
  const size_t n_seqs = inputs.size();
  const bool encoder = model.transformer->architecture().features.encoder;
  BorrowedBlocks blocks(pool);
  std::vector<int32_t> tokens, positions, rows;
  std::vector<std::vector<int32_t>> tables(n_groups * n_seqs);
  std::vector<backend::SequenceSlice> slices(n_groups * n_seqs);
  std::vector<size_t> rows_of(n_seqs + 1, 0);  // where each input's pooled rows start in `rows`
  for (size_t s = 0; s < n_seqs; ++s) {
    const std::vector<int32_t>& input = *inputs[s];
    const auto n = static_cast<int64_t>(input.size());
    const auto at = static_cast<int64_t>(tokens.size());
    tokens.insert(tokens.end(), input.begin(), input.end());
    for (int64_t p = 0; p < n; ++p) positions.push_back(static_cast<int32_t>(p));
    for (int32_t row : model::pooled_rows(pooling, n)) rows.push_back(static_cast<int32_t>(at) + row);
    rows_of[s + 1] = rows.size();
    for (size_t g = 0; g < n_groups; ++g) {
      std::vector<int32_t>& table = tables[g * n_seqs + s];
      for (int64_t b = 0; !encoder && b < blocks_of(n, bs); ++b) table.push_back(blocks.take());
      slices[g * n_seqs + s] = {at, n, 0, table};
    }
  }
  const auto width = static_cast<size_t>(model.hparams.embedding_length);
  std::vector<float> hidden(rows.size() * width);
  const model::ForwardBatch batch{tokens, positions, slices, rows};
  model.transformer->forward_hidden(batch, cache, hidden.data());
  computed_tokens += tokens.size();
  for (size_t s = 0; s < n_seqs; ++s) {
    const std::span<const float> pooled(hidden.data() + rows_of[s] * width, (rows_of[s + 1] - rows_of[s]) * width);
    *out[s] = model::pool_and_normalize(pooling, pooled, static_cast<int64_t>(width));
  }
}

void Engine::Impl::queue_embeddings(std::vector<EmbedJob>& jobs) {
  for (EmbedJob& job : jobs) {
    PendingEmbedding pending;
    pending.vectors.resize(job.inputs.size());
    pending.job = std::move(job);
    embedding_queue.push_back(std::move(pending));
  }
}

bool Engine::Impl::embed_one_pass() {
  if (embedding_queue.empty()) return false;
  // The next inputs in arrival order, as many as the token budget and the free blocks allow (a
  // long input alone may pass the budget: max_model_len bounds it). One pass per step, so a
  // request of thousands of inputs shares the loop with generation rather than stall it.
  std::vector<const std::vector<int32_t>*> inputs;
  std::vector<std::vector<float>*> targets;
  std::vector<PendingEmbedding*> owners;
  const int64_t bs = config.block_size;
  const bool encoder = model.transformer->architecture().features.encoder;
  const auto n_groups = encoder ? 0 : static_cast<int64_t>(layout.n_groups());
  const int64_t free_blocks = pool.n_available();
  int64_t tokens = 0, needed = 0;
  for (PendingEmbedding& p : embedding_queue) {
    if (p.error) continue;  // failed: answered below, its other inputs not run
    bool full = false;
    for (; p.next + p.taken < p.job.inputs.size(); ++p.taken) {
      const std::vector<int32_t>& input = p.job.inputs[p.next + p.taken];
      const auto n = static_cast<int64_t>(input.size());
      const int64_t more = n_groups * blocks_of(n, bs);
      if (!inputs.empty() && (tokens + n > config.max_num_batched_tokens || needed + more > free_blocks)) {
        full = true;
        break;
      }
      tokens += n;
      needed += more;
      inputs.push_back(&input);
      targets.push_back(&p.vectors[p.next + p.taken]);
      owners.push_back(&p);
    }
    if (full) break;
  }
  try {
    if (leader) fail("embeddings are not supported with tensor, pipeline or expert parallelism yet");
    if (needed > free_blocks) {
      fail("embeddings: an input needs {} KV blocks and {} are free now: try again later", needed, free_blocks);
    }
    embed_batch(inputs, targets);
  } catch (...) {
    // A pass that fails fails its requests only.
    for (PendingEmbedding* p : owners) p->error = std::current_exception();
  }
  for (PendingEmbedding& p : embedding_queue) {
    p.next += p.taken;
    p.taken = 0;
  }
  // Requests whose inputs are all done (or one failed) get their answer.
  std::erase_if(embedding_queue, [](PendingEmbedding& p) {
    if (p.error) {
      p.job.vectors.set_exception(p.error);
      return true;
    }
    if (p.next < p.job.inputs.size()) return false;
    p.job.vectors.set_value(std::move(p.vectors));
    return true;
  });
  return true;
}

std::future<std::vector<std::vector<float>>> Engine::embed(std::vector<std::vector<int32_t>> inputs) {
  Impl& m = *impl_;
  if (inputs.empty()) fail("embeddings: no inputs");
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].empty()) fail("embeddings: input {} is empty", i);
    if (static_cast<int64_t>(inputs[i].size()) > m.max_model_len) {
      fail("embeddings: input {} has {} tokens, more than the context of {}", i, inputs[i].size(), m.max_model_len);
    }
    for (int32_t id : inputs[i]) {
      if (id < 0 || static_cast<uint64_t>(id) >= m.model.hparams.vocab_size) {
        fail("embeddings: input {} has token id {}, outside the vocabulary of {}", i, id, m.model.hparams.vocab_size);
      }
    }
  }
  model::embedding_pooling(m.model.hparams);  // a reranker's file is refused here, not later
  Impl::EmbedJob job{std::move(inputs), {}};
  std::future<std::vector<std::vector<float>>> result = job.vectors.get_future();
  {
    std::lock_guard lock(m.inbox_mutex);
    m.embed_jobs.push_back(std::move(job));
  }
  m.work_arrived.notify_all();
  return result;
}

int64_t Engine::embedding_dimensions() const { return static_cast<int64_t>(impl_->model.hparams.embedding_length); }

std::string_view Engine::embedding_pooling() const {
  return model::pooling_name(model::embedding_pooling(impl_->model.hparams));
}

}  // namespace lumen
