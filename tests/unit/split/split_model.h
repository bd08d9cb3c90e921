#pragma once
// What the split tests share (model/backend_split.h): small synthetic models with the shared
// test vocabulary, and two CPU backends standing in for the CPU and a GPU. Nothing in the code
// under test knows which backend is which, so the split must give the logits of one backend,
// bit for bit, and each backend must see the ops and the K/V of exactly its own layers.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "backend/backend.h"
#include "lumen_testdata.h"
#include "model/synth.h"

namespace lumen::testing {

// A synthetic `preset` of `layers` layers, Q8_0, in the temporary directory (removed by the
// caller).
inline std::string write_split_model(const std::string& preset, uint64_t layers) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("lumen_split_" + preset + "_" + std::to_string(::getpid()) + ".gguf"))
          .string();
  model::SynthOptions options;
  options.preset = preset;
  options.type = tensor::DType::Q8_0;
  options.vocab_path = std::string(LUMEN_TESTDATA_DIR) + "/tokenizer/ggml-vocab-llama-spm.gguf";
  options.seed = 7;
  options.block_count = layers;
  options.threads = 2;
  model::write_synthetic_model(options, path);
  return path;
}

// Watches one backend: how many attention calls it ran, and whether every K/V it touched lies
// in memory it allocated itself.
class PlacementObserver : public backend::OpObserver {
 public:
  void after_op(const backend::OpCall& call) override {
    if (call.kind == backend::OpKind::Allocate && call.buffer != nullptr) {
      auto* start = static_cast<const std::byte*>(const_cast<backend::Buffer*>(call.buffer)->data());
      buffers_.emplace_back(start, start + call.buffer->size());
    }
    if (call.kind == backend::OpKind::Attention) ++attention_calls;
    if ((call.kind == backend::OpKind::Attention || call.kind == backend::OpKind::StoreKv ||
         call.kind == backend::OpKind::RopeStoreKv) &&
        call.cache != nullptr && !owns(call.cache->k.data)) {
      ++foreign_kv;
    }
  }
  bool owns(const void* p) const {
    const auto* b = static_cast<const std::byte*>(p);
    for (const auto& [start, end] : buffers_) {
      if (b >= start && b < end) return true;
    }
    return false;
  }

  int64_t attention_calls = 0;
  int64_t foreign_kv = 0;  // K/V ops on memory another backend allocated

 private:
  std::vector<std::pair<const std::byte*, const std::byte*>> buffers_;
};

}  // namespace lumen::testing
