#include "engine/prompt_kv_transfer.h"

#include <algorithm>
#include <cstring>
#include <string_view>

#include "kv/block_hash.h"
#include "util/error.h"

namespace lumen::engine {

namespace {

// Folds words into a running 64-bit state (kv::mix64 is a bijection per step, so no word is lost).
struct Fingerprint {
  uint64_t state = 0x6b762d666f726d61ULL;  // "kv-forma"
  void add(uint64_t word) { state = kv::mix64(state ^ kv::mix64(word + 0x9e3779b97f4a7c15ULL)); }
  void add_double(double value) {
    uint64_t bits;
    std::memcpy(&bits, &value, sizeof(bits));
    add(bits);
  }
  void add_text(std::string_view text) {
    add(text.size());
    for (char c : text) add(static_cast<unsigned char>(c));
  }
  void add_bytes(std::span<const uint8_t> bytes) {
    add(bytes.size());
    size_t i = 0;
    for (; i + 8 <= bytes.size(); i += 8) {
      uint64_t word;
      std::memcpy(&word, bytes.data() + i, sizeof(word));
      add(word);
    }
    for (; i < bytes.size(); ++i) add(bytes[i]);
  }
};

// Each tensor's first and last bytes: a changed quantization or fine-tune shows there, and the
// whole model is not read (a fingerprint costs a few milliseconds, not a pass over the file).
constexpr size_t kSampledBytes = 4096;

// The adoption limit the scheduler uses: the last prompt token is always computed.
int64_t adoptable(std::span<const int32_t> prompt) { return std::max<int64_t>(0, std::ssize(prompt) - 1); }

}  // namespace

uint64_t kv_format(const LoadedModel& model, const model::KvCache& cache, KvCacheDtype dtype) {
  Fingerprint f;
  if (model.file) {
    f.add(model.file->file_size());
    f.add(model.file->data_offset());
    for (const gguf::TensorInfo& t : model.file->tensors()) {
      f.add_text(t.name);
      f.add(static_cast<uint64_t>(t.type));
      for (int64_t d : t.dims) f.add(static_cast<uint64_t>(d));
      f.add(t.offset);
      const std::span<const uint8_t> data = t.span();
      f.add_bytes(data.first(std::min(data.size(), kSampledBytes)));
      f.add_bytes(data.last(std::min(data.size(), kSampledBytes)));
    }
  }
  const model::HParams& hp = model.hparams;
  f.add_text(hp.architecture);
  f.add_double(hp.rope_freq_base);
  f.add_double(hp.rope_freq_base_local);
  f.add_text(hp.rope_scaling.type);
  f.add_double(hp.rope_scaling.factor);
  f.add(hp.rope_dimension_count);
  f.add(static_cast<uint64_t>(dtype));
  f.add(cache.rotated());
  f.add(static_cast<uint64_t>(cache.block_size()));
  f.add(cache.block_host_bytes());
  const kv::KvLayout& layout = cache.layout();
  f.add(static_cast<uint64_t>(layout.group_size));
  for (const kv::KvGroup& g : layout.groups) {
    f.add(static_cast<uint64_t>(g.window));
    for (int layer : g.layers) f.add(static_cast<uint64_t>(layer));
  }
  return f.state;
}

int64_t cached_prompt_tokens(const kv::KvSpace& space, std::span<const int32_t> prompt, uint64_t keyed_salt) {
  kv::SequenceKv probe(space, keyed_salt);
  const int64_t n = probe.adopt_cached_prefix(prompt, adoptable(prompt), /*counted=*/false);
  probe.release_all();
  return n;
}

std::optional<StoredPromptKv> capture_prompt_kv(const kv::KvSpace& space, const model::KvCache& cache,
                                                std::span<const int32_t> prompt, uint64_t keyed_salt) {
  kv::SequenceKv probe(space, keyed_salt);
  const int64_t n = probe.adopt_cached_prefix(prompt, adoptable(prompt), /*counted=*/false);
  if (n == 0) return std::nullopt;
  StoredPromptKv entry;
  entry.keyed_salt = keyed_salt;
  entry.tokens.assign(prompt.begin(), prompt.begin() + n);
  const std::vector<kv::BlockId> blocks = probe.blocks_from(0, n);
  for (const kv::TransferBlock& b : kv::transfer_blocks(*space.layout, 0, n, space.pool->block_size())) {
    entry.page_block.push_back(b.index);
  }
  entry.pages.reserve(blocks.size());
  for (const kv::BlockId block : blocks) {
    entry.pages.emplace_back(cache.block_host_bytes());
    cache.read_block(block, entry.pages.back().data());
  }
  probe.release_all();
  return entry;
}

void check_imported_pages(const model::KvCache& cache, const PromptKv& kv) {
  for (size_t i = 0; i < kv.pages.size(); ++i) {
    const std::vector<uint8_t>& page = kv.pages[i];
    if (page.size() != cache.block_host_bytes()) {
      fail("imported K/V has a page of {} bytes; this cache's pages are {}", page.size(), cache.block_host_bytes());
    }
    // A block the cache cleared and never computed is zeros (KvCache::clear_block). A computed
    // one is not: K and V are projections of normalized hidden states (unit RMS), zero in every
    // value of every layer only if the model's weights were. So a zero page is a lost block, or a
    // peer's garbage, never K/V.
    if (std::ranges::all_of(page, [](uint8_t byte) { return byte == 0; })) {
      fail("imported K/V page {} is all zeros: a block that was never computed", i);
    }
    if (!cache.host_block_is_finite(page.data())) fail("imported K/V page {} holds NaN or infinite values", i);
  }
}

int64_t import_prompt_kv(const kv::KvSpace& space, model::KvCache& cache, std::span<const int32_t> prompt,
                         uint64_t keyed_salt, const PromptKv& kv) {
  const int64_t bs = space.pool->block_size();
  const auto n = static_cast<int64_t>(kv.tokens.size());
  if (n % bs != 0 || n > adoptable(prompt) || !std::ranges::equal(kv.tokens, prompt.first(static_cast<size_t>(n)))) {
    fail("imported K/V is for {} tokens that are not whole blocks of {} beginning this prompt of {}", n, bs,
         prompt.size());
  }
  if (kv.n_known < 0 || kv.n_known > n || kv.n_known % bs != 0) {
    fail("imported K/V starts at position {}, not a block boundary within its {} tokens", kv.n_known, n);
  }
  const size_t expected = kv::transfer_blocks(*space.layout, kv.n_known, n, bs).size();
  if (kv.pages.size() != expected) {
    fail("imported K/V has {} pages; positions [{}, {}) take {} in this cache", kv.pages.size(), kv.n_known, n, expected);
  }
  for (const auto& page : kv.pages) {
    if (page.size() != cache.block_host_bytes()) {
      fail("imported K/V has a page of {} bytes; this cache's pages are {}", page.size(), cache.block_host_bytes());
    }
  }
  if (n == kv.n_known || !space.pool->prefix_caching()) return 0;
  kv::SequenceKv probe(space, keyed_salt);
  const int64_t held = probe.adopt_cached_prefix(kv.tokens, n, /*counted=*/false);
  if (held != kv.n_known || !probe.reserve_import(kv.n_known, n)) {
    probe.release_all();
    return 0;
  }
  const std::vector<kv::BlockId> blocks = probe.blocks_from(kv.n_known, n);
  for (size_t i = 0; i < blocks.size(); ++i) cache.write_block(blocks[i], kv.pages[i].data());
  probe.commit(kv.tokens, n);
  probe.release_all();
  return n - kv.n_known;
}

}  // namespace lumen::engine
